-- +goose Up
-- Projection: every raw Pi session entry ever synced, verbatim, with its
-- rendering (computed once, when the entry is recorded).
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

-- Projection: each agent's current branch revision and length.
CREATE TABLE history_branches (
    task_id  TEXT    NOT NULL,
    agent    TEXT    NOT NULL,
    revision INTEGER NOT NULL,
    length   INTEGER NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent)
);

-- Projection: the entry ids of each agent's current branch, root first.
CREATE TABLE history_branch_entries (
    task_id      TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    branch_index INTEGER NOT NULL,
    entry_id     TEXT    NOT NULL,
    PRIMARY KEY (task_id, agent, branch_index)
);

-- Projection: the history items of each agent's current branch, with
-- their window and tool attribution.
CREATE TABLE history_items (
    task_id        TEXT    NOT NULL,
    agent          TEXT    NOT NULL,
    branch_index   INTEGER NOT NULL,
    entry_id       TEXT    NOT NULL,
    window_ordinal INTEGER NOT NULL,
    window_id      TEXT    NOT NULL,
    role           TEXT    NOT NULL,
    raw_role       TEXT    NOT NULL,
    tool_namespace TEXT    NOT NULL,
    tool_name      TEXT    NOT NULL,
    tool_call_id   TEXT    NOT NULL,
    hidden         INTEGER NOT NULL,
    n_chars        INTEGER NOT NULL,
    images         INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent, branch_index)
);
CREATE INDEX history_items_entry ON history_items (task_id, agent, entry_id);

-- Projection: the tool calls of the items of each current branch.
CREATE TABLE history_calls (
    task_id      TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    branch_index INTEGER NOT NULL,
    call_id      TEXT    NOT NULL,
    tool_name    TEXT    NOT NULL,
    PRIMARY KEY (task_id, agent, branch_index, call_id)
);
CREATE INDEX history_calls_id ON history_calls (task_id, agent, call_id);

-- +goose Down
DROP TABLE history_calls;
DROP TABLE history_items;
DROP TABLE history_branch_entries;
DROP TABLE history_branches;
DROP TABLE history_entries;
