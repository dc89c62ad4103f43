-- +goose Up
-- memoryd's schema on PostgreSQL: the end state of the SQLite migrations
-- ../00001 to ../00008, table for table and column for column, so that
-- sqlc generates the same Go types from it and the same events build the
-- same rows on either engine. Each later SQLite migration has its
-- counterpart here (00002 is ../00009).
--
-- Text is COLLATE "C": SQLite compares text byte by byte, and answers are
-- ordered by paths and ids, so PostgreSQL must compare them the same way
-- whatever the database's locale. INTEGER is BIGINT (SQLite's integers
-- are 64-bit), BLOB is BYTEA. SQLite's rowid is never relied on: events
-- carry their position, every projection its own primary key.

-- The queries count characters of text (a path prefix): in a UTF8
-- database, as SQLite does. Refuse any other encoding up front.
-- +goose StatementBegin
DO $$
BEGIN
    IF current_setting('server_encoding') <> 'UTF8' THEN
        RAISE EXCEPTION 'memoryd needs a database with the UTF8 encoding, not %', current_setting('server_encoding');
    END IF;
END
$$;
-- +goose StatementEnd

-- A note's text is stored as bytes (BYTEA below): it may hold U+0000,
-- which PostgreSQL's text cannot. Where SQLite casts such bytes to TEXT,
-- the PostgreSQL queries cast them to this domain instead: sqlc maps it
-- to a Go string (sqlc.yaml), and PostgreSQL sends it as the bytea it is.
CREATE DOMAIN memoryd_text_bytes AS bytea;

-- The event log: the only source of truth. Every other table is a projection
-- of it and can be rebuilt from position 1.
CREATE TABLE events (
    position       BIGINT NOT NULL PRIMARY KEY,
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

-- Projection: tasks and the agents registered to them.
CREATE TABLE tasks (
    task_id      TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    root_session TEXT COLLATE "C" NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL,
    position     BIGINT NOT NULL
);

CREATE TABLE agents (
    task_id      TEXT COLLATE "C" NOT NULL,
    agent        TEXT COLLATE "C" NOT NULL,
    parent_agent TEXT COLLATE "C" NOT NULL DEFAULT '',
    session_key  TEXT COLLATE "C" NOT NULL,
    session_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    session_file TEXT COLLATE "C" NOT NULL DEFAULT '',
    budget       TEXT COLLATE "C" NOT NULL,
    position     BIGINT NOT NULL,
    PRIMARY KEY (task_id, agent)
);
CREATE UNIQUE INDEX agents_session_key ON agents (session_key);
CREATE INDEX agents_agent ON agents (agent);

-- Projection: note files, one row per (task, agent, path). path is relative
-- to the agent's notes root; the text is in note_parts.
CREATE TABLE notes (
    task_id          TEXT COLLATE "C" NOT NULL,
    agent            TEXT COLLATE "C" NOT NULL,
    path             TEXT COLLATE "C" NOT NULL,
    bytes            BIGINT NOT NULL,
    revision         BIGINT NOT NULL,
    created_at       TEXT COLLATE "C" NOT NULL,
    updated_at       TEXT COLLATE "C" NOT NULL,
    created_position BIGINT NOT NULL,
    updated_position BIGINT NOT NULL,
    parts            BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, agent, path)
);

-- Projection: a note's text as parts, concatenated in order (see the
-- SQLite migration 00005). BYTEA: a note's text may hold U+0000, which
-- PostgreSQL's text cannot.
CREATE TABLE note_parts (
    task_id TEXT COLLATE "C" NOT NULL,
    agent   TEXT COLLATE "C" NOT NULL,
    path    TEXT COLLATE "C" NOT NULL,
    part    BIGINT NOT NULL,
    text    BYTEA NOT NULL,
    PRIMARY KEY (task_id, agent, path, part)
);

-- Projection: the first result of every idempotent note write, keyed by the
-- caller's (task, agent, call_id).
CREATE TABLE note_calls (
    task_id     TEXT COLLATE "C" NOT NULL,
    agent       TEXT COLLATE "C" NOT NULL,
    call_id     TEXT COLLATE "C" NOT NULL,
    request_key TEXT COLLATE "C" NOT NULL,
    result      TEXT COLLATE "C" NOT NULL,
    position    BIGINT NOT NULL,
    PRIMARY KEY (task_id, agent, call_id)
);

-- Projection: every raw Pi session entry ever synced, with where its
-- rendered text is (text_chunk, text_offset, text_bytes; see the SQLite
-- migration 00004).
CREATE TABLE history_entries (
    task_id       TEXT COLLATE "C" NOT NULL,
    agent         TEXT COLLATE "C" NOT NULL,
    entry_id      TEXT COLLATE "C" NOT NULL,
    item          BIGINT NOT NULL,
    role          TEXT COLLATE "C" NOT NULL,
    raw_role      TEXT COLLATE "C" NOT NULL,
    n_chars       BIGINT NOT NULL,
    images        BIGINT NOT NULL,
    calls_only    BIGINT NOT NULL,
    tool_call_id  TEXT COLLATE "C" NOT NULL,
    tool_name     TEXT COLLATE "C" NOT NULL,
    compaction    BIGINT NOT NULL,
    control       BIGINT NOT NULL,
    marked_window TEXT COLLATE "C" NOT NULL,
    position      BIGINT NOT NULL,
    text_chunk    BIGINT NOT NULL,
    text_offset   BIGINT NOT NULL,
    text_bytes    BIGINT NOT NULL,
    calls         TEXT COLLATE "C" NOT NULL,
    breaks        TEXT COLLATE "C" NOT NULL,
    raw           TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (task_id, agent, entry_id)
);

-- Projection: each agent's current branch revision and length.
CREATE TABLE history_branches (
    task_id  TEXT COLLATE "C" NOT NULL,
    agent    TEXT COLLATE "C" NOT NULL,
    revision BIGINT NOT NULL,
    length   BIGINT NOT NULL,
    position BIGINT NOT NULL,
    PRIMARY KEY (task_id, agent)
);

-- Projection: the entry ids of each agent's current branch, root first,
-- each with a hash of the branch's ids up to it.
CREATE TABLE history_branch_entries (
    task_id      TEXT COLLATE "C" NOT NULL,
    agent        TEXT COLLATE "C" NOT NULL,
    branch_index BIGINT NOT NULL,
    entry_id     TEXT COLLATE "C" NOT NULL,
    prefix_hash  BYTEA NOT NULL,
    PRIMARY KEY (task_id, agent, branch_index)
);
CREATE INDEX history_branch_entries_entry ON history_branch_entries (task_id, agent, entry_id, branch_index);

-- Projection: the history items of each agent's current branch, with
-- their window and tool attribution.
CREATE TABLE history_items (
    task_id        TEXT COLLATE "C" NOT NULL,
    agent          TEXT COLLATE "C" NOT NULL,
    branch_index   BIGINT NOT NULL,
    entry_id       TEXT COLLATE "C" NOT NULL,
    window_ordinal BIGINT NOT NULL,
    window_id      TEXT COLLATE "C" NOT NULL,
    role           TEXT COLLATE "C" NOT NULL,
    raw_role       TEXT COLLATE "C" NOT NULL,
    tool_namespace TEXT COLLATE "C" NOT NULL,
    tool_name      TEXT COLLATE "C" NOT NULL,
    tool_call_id   TEXT COLLATE "C" NOT NULL,
    hidden         BIGINT NOT NULL,
    n_chars        BIGINT NOT NULL,
    images         BIGINT NOT NULL,
    PRIMARY KEY (task_id, agent, branch_index)
);
CREATE INDEX history_items_entry ON history_items (task_id, agent, entry_id);

-- Projection: the tool calls of the items of each current branch.
CREATE TABLE history_calls (
    task_id      TEXT COLLATE "C" NOT NULL,
    agent        TEXT COLLATE "C" NOT NULL,
    branch_index BIGINT NOT NULL,
    call_id      TEXT COLLATE "C" NOT NULL,
    tool_name    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (task_id, agent, branch_index, call_id)
);
CREATE INDEX history_calls_id ON history_calls (task_id, agent, call_id);

-- Projection: the texts of each agent's open history chunk, one row per
-- entry.
CREATE TABLE history_open_texts (
    task_id     TEXT COLLATE "C" NOT NULL,
    agent       TEXT COLLATE "C" NOT NULL,
    text_offset BIGINT NOT NULL,
    entry_id    TEXT COLLATE "C" NOT NULL,
    breaks      TEXT COLLATE "C" NOT NULL,
    text        BYTEA NOT NULL,
    PRIMARY KEY (task_id, agent, text_offset)
);

-- Projection: sealed history chunks, each with the Bloom filter of its
-- text's byte trigrams (memoryd_bloom_has below).
CREATE TABLE history_chunks (
    task_id  TEXT COLLATE "C" NOT NULL,
    agent    TEXT COLLATE "C" NOT NULL,
    chunk_no BIGINT NOT NULL,
    bloom    BYTEA NOT NULL,
    entries  TEXT COLLATE "C" NOT NULL,
    data     BYTEA NOT NULL,
    PRIMARY KEY (task_id, agent, chunk_no)
);

-- Projection: each agent's checkpoint fence and rollover state.
CREATE TABLE agent_states (
    task_id  TEXT COLLATE "C" NOT NULL,
    agent    TEXT COLLATE "C" NOT NULL,
    state    TEXT COLLATE "C" NOT NULL,
    position BIGINT NOT NULL,
    PRIMARY KEY (task_id, agent)
);

-- Reasons to rebuild every projection from the log when the store is next
-- opened (projections.Open): a later migration that changes a projection's
-- shape adds one.
CREATE TABLE projection_rebuilds (
    reason TEXT COLLATE "C" NOT NULL
);

-- memoryd_bloom_has(filter, probes) is bloomHas of
-- internal/projections/bloom.go: whether every probe bit (a little-endian
-- uint16 per probe) is set in a filter of 2048 bytes. Anything malformed
-- (NULL, a filter of another size, an odd last byte, a bit past the
-- filter) passes: the filter only ever skips a chunk, it never decides a
-- match.
-- +goose StatementBegin
CREATE FUNCTION memoryd_bloom_has(filter bytea, probes bytea) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    b integer;
BEGIN
    IF filter IS NULL OR probes IS NULL OR length(filter) <> 2048 THEN
        RETURN true;
    END IF;
    FOR i IN 0 .. length(probes) / 2 - 1 LOOP
        b := get_byte(probes, 2 * i) | (get_byte(probes, 2 * i + 1) << 8);
        IF b < 16384 AND get_byte(filter, b >> 3) & (1 << (b & 7)) = 0 THEN
            RETURN false;
        END IF;
    END LOOP;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION memoryd_bloom_has(bytea, bytea);
DROP TABLE projection_rebuilds;
DROP TABLE agent_states;
DROP TABLE history_chunks;
DROP TABLE history_open_texts;
DROP TABLE history_calls;
DROP TABLE history_items;
DROP TABLE history_branch_entries;
DROP TABLE history_branches;
DROP TABLE history_entries;
DROP TABLE note_calls;
DROP TABLE note_parts;
DROP TABLE notes;
DROP TABLE agents;
DROP TABLE tasks;
DROP TABLE events;
DROP DOMAIN memoryd_text_bytes;
