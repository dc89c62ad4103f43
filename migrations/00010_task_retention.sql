-- +goose Up
-- A task's own retention policy (task.retention_set): a period such as
-- 30d, or forever; '' when it has none and follows the server's --retain.
-- No rebuild is needed: no log before this migration holds the event.
ALTER TABLE tasks ADD COLUMN retain TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE tasks DROP COLUMN retain;
