-- +goose Up
-- The SQLite migration 00010: a task's own retention policy
-- (task.retention_set), '' when it follows the server's --retain.
ALTER TABLE tasks ADD COLUMN retain TEXT COLLATE "C" NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE tasks DROP COLUMN retain;
