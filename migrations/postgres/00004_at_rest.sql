-- +goose Up
-- The SQLite migration 00011: one row when the database is encrypted at
-- rest, naming the scheme and its key's check value (docs/encryption.md).
CREATE TABLE at_rest (
    scheme    TEXT COLLATE "C" NOT NULL,
    key_check TEXT COLLATE "C" NOT NULL
);

-- +goose Down
DROP TABLE at_rest;
