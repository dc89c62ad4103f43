-- +goose Up
-- The note projections are looked up and written only by their primary
-- keys, so they are stored in them (WITHOUT ROWID): a write touches one
-- b-tree instead of a table and its key index, and a commit dirties
-- fewer pages. Rows move as they are; no rebuild is needed.
CREATE TABLE notes_new (
    task_id          TEXT    NOT NULL,
    agent            TEXT    NOT NULL,
    path             TEXT    NOT NULL,
    bytes            INTEGER NOT NULL,
    revision         INTEGER NOT NULL,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    created_position INTEGER NOT NULL,
    updated_position INTEGER NOT NULL,
    parts            INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, agent, path)
) WITHOUT ROWID;
INSERT INTO notes_new SELECT task_id, agent, path, bytes, revision, created_at, updated_at, created_position, updated_position, parts FROM notes;
DROP TABLE notes;
ALTER TABLE notes_new RENAME TO notes;

CREATE TABLE note_calls_new (
    task_id     TEXT    NOT NULL,
    agent       TEXT    NOT NULL,
    call_id     TEXT    NOT NULL,
    request_key TEXT    NOT NULL,
    result      TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent, call_id)
) WITHOUT ROWID;
INSERT INTO note_calls_new SELECT task_id, agent, call_id, request_key, result, position FROM note_calls;
DROP TABLE note_calls;
ALTER TABLE note_calls_new RENAME TO note_calls;

CREATE TABLE note_parts_new (
    task_id TEXT    NOT NULL,
    agent   TEXT    NOT NULL,
    path    TEXT    NOT NULL,
    part    INTEGER NOT NULL,
    text    BLOB    NOT NULL,
    PRIMARY KEY (task_id, agent, path, part)
) WITHOUT ROWID;
INSERT INTO note_parts_new SELECT task_id, agent, path, part, text FROM note_parts;
DROP TABLE note_parts;
ALTER TABLE note_parts_new RENAME TO note_parts;

-- +goose Down
CREATE TABLE notes_old (
    task_id          TEXT    NOT NULL,
    agent            TEXT    NOT NULL,
    path             TEXT    NOT NULL,
    bytes            INTEGER NOT NULL,
    revision         INTEGER NOT NULL,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    created_position INTEGER NOT NULL,
    updated_position INTEGER NOT NULL,
    parts            INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, agent, path)
);
INSERT INTO notes_old SELECT task_id, agent, path, bytes, revision, created_at, updated_at, created_position, updated_position, parts FROM notes;
DROP TABLE notes;
ALTER TABLE notes_old RENAME TO notes;

CREATE TABLE note_calls_old (
    task_id     TEXT    NOT NULL,
    agent       TEXT    NOT NULL,
    call_id     TEXT    NOT NULL,
    request_key TEXT    NOT NULL,
    result      TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent, call_id)
);
INSERT INTO note_calls_old SELECT task_id, agent, call_id, request_key, result, position FROM note_calls;
DROP TABLE note_calls;
ALTER TABLE note_calls_old RENAME TO note_calls;

CREATE TABLE note_parts_old (
    task_id TEXT    NOT NULL,
    agent   TEXT    NOT NULL,
    path    TEXT    NOT NULL,
    part    INTEGER NOT NULL,
    text    BLOB    NOT NULL,
    PRIMARY KEY (task_id, agent, path, part)
);
INSERT INTO note_parts_old SELECT task_id, agent, path, part, text FROM note_parts;
DROP TABLE note_parts;
ALTER TABLE note_parts_old RENAME TO note_parts;
