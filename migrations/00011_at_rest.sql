-- +goose Up
-- Whether the database is encrypted at rest (docs/encryption.md): one row
-- when it is, naming the sealing scheme and the check value of its key;
-- none when it is not. The key itself is never stored here. The row is
-- written once, when an encrypted database is created, before any event.
CREATE TABLE at_rest (
    scheme    TEXT NOT NULL,
    key_check TEXT NOT NULL
);

-- +goose Down
DROP TABLE at_rest;
