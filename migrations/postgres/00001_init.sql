-- +goose Up
-- PROVISIONAL (lead's test copy; replaced by the full schema at merge).
CREATE TABLE events (
    position       BIGINT PRIMARY KEY,
    id             TEXT COLLATE "C" NOT NULL UNIQUE,
    stream         TEXT COLLATE "C" NOT NULL,
    stream_version BIGINT NOT NULL,
    task_id        TEXT COLLATE "C" NOT NULL,
    type           TEXT COLLATE "C" NOT NULL,
    schema         BIGINT NOT NULL,
    recorded_at    TEXT COLLATE "C" NOT NULL,
    data           TEXT COLLATE "C" NOT NULL,
    request_id     TEXT COLLATE "C" NOT NULL DEFAULT '',
    UNIQUE (stream, stream_version)
);
CREATE INDEX events_task ON events (task_id, position);
CREATE TABLE projection_rebuilds (reason TEXT NOT NULL);
