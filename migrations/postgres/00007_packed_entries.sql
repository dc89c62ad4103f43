-- +goose Up
-- The SQLite migration 00014: a history entry's event payload compressed
-- in packed. EXTERNAL: TOAST does not compress again what zstd did.
ALTER TABLE events ADD COLUMN packed bytea NOT NULL DEFAULT '\x'::bytea;
ALTER TABLE events ALTER COLUMN packed SET STORAGE EXTERNAL;

-- +goose Down
ALTER TABLE events DROP COLUMN packed;
