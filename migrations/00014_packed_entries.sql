-- +goose Up
-- An event of type history.entry_recorded keeps its payload compressed
-- with zstd in packed, and in data only its plain members task_id, agent
-- and entry_id (no SQL of the log reads more of it). The log's queries
-- return the payload decompressed, byte for byte as recorded
-- (docs/performance.md, issue 37). Every other event, and every event
-- written before, has an empty packed and its payload whole in data.
ALTER TABLE events ADD COLUMN packed BLOB NOT NULL DEFAULT x'';

-- +goose Down
ALTER TABLE events DROP COLUMN packed;
