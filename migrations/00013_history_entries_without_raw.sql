-- +goose Up
-- history_entries no longer keeps each entry's raw JSON: it is the entry
-- member of the history.entry_recorded event at the row's position, byte
-- for byte, which EntryRaw and Digest read instead (docs/performance.md,
-- issue 37: where the bytes go). No rebuild is needed: the log holds it.
ALTER TABLE history_entries DROP COLUMN raw;

-- +goose Down
ALTER TABLE history_entries ADD COLUMN raw TEXT NOT NULL DEFAULT '';
