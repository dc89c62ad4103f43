-- +goose Up
-- The event log: the only source of truth. Every other table is a projection
-- of it and can be rebuilt from position 1.
CREATE TABLE events (
    position       INTEGER PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    stream         TEXT    NOT NULL,
    stream_version INTEGER NOT NULL,
    task_id        TEXT    NOT NULL,
    type           TEXT    NOT NULL,
    schema         INTEGER NOT NULL,
    recorded_at    TEXT    NOT NULL,
    data           TEXT    NOT NULL,
    request_id     TEXT    NOT NULL DEFAULT '',
    UNIQUE (stream, stream_version)
);
CREATE INDEX events_task ON events (task_id, position);

-- Projection: tasks and the agents registered to them.
CREATE TABLE tasks (
    task_id      TEXT    PRIMARY KEY,
    root_session TEXT    NOT NULL,
    created_at   TEXT    NOT NULL,
    position     INTEGER NOT NULL
);

CREATE TABLE agents (
    task_id      TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    parent_agent TEXT    NOT NULL DEFAULT '',
    session_key  TEXT    NOT NULL,
    session_id   TEXT    NOT NULL DEFAULT '',
    session_file TEXT    NOT NULL DEFAULT '',
    budget       TEXT    NOT NULL,
    position     INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent)
);
CREATE UNIQUE INDEX agents_session_key ON agents (session_key);
CREATE INDEX agents_agent ON agents (agent);

-- Projection: note files, one row per (task, agent, path). path is relative
-- to the agent's notes root.
CREATE TABLE notes (
    task_id          TEXT    NOT NULL,
    agent            TEXT    NOT NULL,
    path             TEXT    NOT NULL,
    content          BLOB    NOT NULL,
    bytes            INTEGER NOT NULL,
    revision         INTEGER NOT NULL,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    created_position INTEGER NOT NULL,
    updated_position INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent, path)
);

-- Projection: the first result of every idempotent note write, keyed by the
-- caller's (task, agent, call_id).
CREATE TABLE note_calls (
    task_id     TEXT    NOT NULL,
    agent       TEXT    NOT NULL,
    call_id     TEXT    NOT NULL,
    request_key TEXT    NOT NULL,
    result      TEXT    NOT NULL,
    position    INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent, call_id)
);

-- +goose Down
DROP TABLE note_calls;
DROP TABLE notes;
DROP TABLE agents;
DROP TABLE tasks;
DROP TABLE events;
