-- +goose Up
-- The SQLite migration 00012: the user requests of an agent's branch, by
-- branch index, as a partial index (the queries repeat its WHERE).
CREATE INDEX history_items_user_requests ON history_items (task_id, agent, branch_index)
    WHERE raw_role = 'user' AND hidden = 0;

-- +goose Down
DROP INDEX history_items_user_requests;
