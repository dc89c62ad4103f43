-- +goose Up
-- A note's parts go back to a rowid table, with their key in an index.
-- Stored WITHOUT ROWID (00006), a row was its own key: a part merged
-- from many appends (several KB) overflowed its page, and every insert or
-- lookup that compared a key with it read its whole overflow chain (in a
-- replay of 1,000,000 appends, a part insert cost more than the event
-- insert). An index entry now holds only the key; the text stays in the
-- table. Rows move as they are; no rebuild is needed.
CREATE TABLE note_parts_new (
    task_id TEXT    NOT NULL,
    agent   TEXT    NOT NULL,
    path    TEXT    NOT NULL,
    part    INTEGER NOT NULL,
    text    BLOB    NOT NULL,
    PRIMARY KEY (task_id, agent, path, part)
);
INSERT INTO note_parts_new SELECT task_id, agent, path, part, text FROM note_parts ORDER BY task_id, agent, path, part;
DROP TABLE note_parts;
ALTER TABLE note_parts_new RENAME TO note_parts;

-- +goose Down
CREATE TABLE note_parts_old (
    task_id TEXT    NOT NULL,
    agent   TEXT    NOT NULL,
    path    TEXT    NOT NULL,
    part    INTEGER NOT NULL,
    text    BLOB    NOT NULL,
    PRIMARY KEY (task_id, agent, path, part)
) WITHOUT ROWID;
INSERT INTO note_parts_old SELECT task_id, agent, path, part, text FROM note_parts;
DROP TABLE note_parts;
ALTER TABLE note_parts_old RENAME TO note_parts;
