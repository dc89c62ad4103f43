-- +goose Up
-- History text moves out of history_entries into per-agent chunks, so a
-- literal search reads a few large rows instead of one row per entry (and
-- never reads the raw JSON stored beside the text).
--
-- An entry's rendered text is appended to its agent's open chunk, kept
-- as one history_open_texts row per entry; once the open chunk holds at
-- least 64 KiB it is sealed into one immutable history_chunks row (the
-- texts concatenated in order, with a table of the entries in it) and the
-- open rows are deleted. history_entries records where the text is:
-- text_chunk (0: no text), text_offset and text_bytes within the chunk.
--
-- history_entries is recreated with raw last: SQLite walks a large
-- value's overflow pages to reach the columns stored after it, and every
-- metadata read would pay for the raw JSON. It no longer keeps a digest
-- of each entry's canonical JSON: a re-sent entry is compared with the
-- stored one when it is re-sent, not hashed on every first send.
DROP TABLE history_entries;
CREATE TABLE history_entries (
    task_id       TEXT    NOT NULL,
    agent         TEXT    NOT NULL,
    entry_id      TEXT    NOT NULL,
    item          INTEGER NOT NULL,
    role          TEXT    NOT NULL,
    raw_role      TEXT    NOT NULL,
    n_chars       INTEGER NOT NULL,
    images        INTEGER NOT NULL,
    calls_only    INTEGER NOT NULL,
    tool_call_id  TEXT    NOT NULL,
    tool_name     TEXT    NOT NULL,
    compaction    INTEGER NOT NULL,
    control       INTEGER NOT NULL,
    marked_window TEXT    NOT NULL,
    position      INTEGER NOT NULL,
    text_chunk    INTEGER NOT NULL,
    text_offset   INTEGER NOT NULL,
    text_bytes    INTEGER NOT NULL,
    calls         TEXT    NOT NULL,
    breaks        TEXT    NOT NULL,
    raw           TEXT    NOT NULL,
    PRIMARY KEY (task_id, agent, entry_id)
);

-- history_branch_entries gains prefix_hash, a hash of the branch's ids up
-- to and including the row's: a sync finds the prefix it shares with the
-- current branch by comparing a few hashes instead of reading every id.
DROP TABLE history_branch_entries;
CREATE TABLE history_branch_entries (
    task_id      TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    branch_index INTEGER NOT NULL,
    entry_id     TEXT    NOT NULL,
    prefix_hash  BLOB    NOT NULL,
    PRIMARY KEY (task_id, agent, branch_index)
);

-- Projection: the texts of the open chunk, one row per entry. The open
-- chunk's number follows the last sealed one; its size is the end of its
-- last text.
CREATE TABLE history_open_texts (
    task_id     TEXT    NOT NULL,
    agent       TEXT    NOT NULL,
    text_offset INTEGER NOT NULL,
    entry_id    TEXT    NOT NULL,
    breaks      TEXT    NOT NULL,
    text        BLOB    NOT NULL,
    PRIMARY KEY (task_id, agent, text_offset)
);

-- Projection: sealed chunks. A search reads bloom (a 2 KiB Bloom filter
-- of the byte trigrams of data) to skip the chunks that cannot hold the
-- needle and checks the others exactly in Go. entries (a JSON array of
-- the entries in the chunk: id, byte offset, byte length, breaks) and
-- bloom come before data so that reading them never walks data's
-- overflow pages.
CREATE TABLE history_chunks (
    task_id  TEXT    NOT NULL,
    agent    TEXT    NOT NULL,
    chunk_no INTEGER NOT NULL,
    bloom    BLOB    NOT NULL,
    entries  TEXT    NOT NULL,
    data     BLOB    NOT NULL,
    PRIMARY KEY (task_id, agent, chunk_no)
);

-- The history projections of an existing database lost their text: mark
-- every projection for a rebuild from the log, which runs when the store
-- is next opened (projections.Open).
CREATE TABLE projection_rebuilds (
    reason TEXT NOT NULL
);
INSERT INTO projection_rebuilds (reason)
SELECT '00004: history text moved into chunks' WHERE EXISTS (SELECT 1 FROM events);

-- +goose Down
-- Going back leaves the history projections empty: rebuild them from the
-- log (server replay) after a downgrade.
DROP TABLE projection_rebuilds;
DROP TABLE history_chunks;
DROP TABLE history_open_texts;
DROP TABLE history_branch_entries;
CREATE TABLE history_branch_entries (
    task_id      TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    branch_index INTEGER NOT NULL,
    entry_id     TEXT    NOT NULL,
    PRIMARY KEY (task_id, agent, branch_index)
);
DROP TABLE history_entries;
CREATE TABLE history_entries (
    task_id       TEXT    NOT NULL,
    agent         TEXT    NOT NULL,
    entry_id      TEXT    NOT NULL,
    raw           TEXT    NOT NULL,
    digest        TEXT    NOT NULL,
    item          INTEGER NOT NULL,
    role          TEXT    NOT NULL,
    raw_role      TEXT    NOT NULL,
    text          BLOB    NOT NULL,
    breaks        TEXT    NOT NULL,
    n_chars       INTEGER NOT NULL,
    images        INTEGER NOT NULL,
    calls         TEXT    NOT NULL,
    calls_only    INTEGER NOT NULL,
    tool_call_id  TEXT    NOT NULL,
    tool_name     TEXT    NOT NULL,
    compaction    INTEGER NOT NULL,
    control       INTEGER NOT NULL,
    marked_window TEXT    NOT NULL,
    position      INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent, entry_id)
);
