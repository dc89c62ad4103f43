-- +goose Up
-- Note content moves into parts, so an append adds a small row instead of
-- rewriting the whole file (and its overflow pages) in every transaction.
-- A note's text is its parts concatenated in order; when a note reaches
-- 16 parts, the next append merges them into one, so a read joins at most
-- 16 rows and an append rewrites the file once per 16 appends.
CREATE TABLE note_parts (
    task_id TEXT    NOT NULL,
    agent   TEXT    NOT NULL,
    path    TEXT    NOT NULL,
    part    INTEGER NOT NULL,
    text    BLOB    NOT NULL,
    PRIMARY KEY (task_id, agent, path, part)
);
ALTER TABLE notes DROP COLUMN content;
ALTER TABLE notes ADD COLUMN parts INTEGER NOT NULL DEFAULT 0;
-- The notes of an existing database lost their content: rebuild the
-- projections from the log when the store is next opened.
INSERT INTO projection_rebuilds (reason)
SELECT '00005: note content moved into parts' WHERE EXISTS (SELECT 1 FROM events);

-- +goose Down
-- Going back leaves the notes empty: rebuild the projections from the log
-- (server replay) after a downgrade.
ALTER TABLE notes DROP COLUMN parts;
ALTER TABLE notes ADD COLUMN content BLOB NOT NULL DEFAULT x'';
DROP TABLE note_parts;
