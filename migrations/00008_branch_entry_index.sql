-- +goose Up
-- The branch entries of an agent by entry id: a delta sync (API.md §4)
-- checks that the ids it appends are not already in the prefix it keeps
-- with one lookup per id, instead of reading the branch. The index holds
-- the branch index, so the lookup reads no table row. No rebuild is
-- needed: the rows are unchanged.
CREATE INDEX history_branch_entries_entry ON history_branch_entries (task_id, agent, entry_id, branch_index);

-- +goose Down
DROP INDEX history_branch_entries_entry;
