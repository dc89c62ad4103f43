-- +goose Up
-- The SQLite migration 00013: history_entries without the raw JSON, which
-- is read from the entry's event.
ALTER TABLE history_entries DROP COLUMN raw;

-- +goose Down
ALTER TABLE history_entries ADD COLUMN raw TEXT COLLATE "C" NOT NULL DEFAULT '';
