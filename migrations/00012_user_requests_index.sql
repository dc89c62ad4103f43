-- +goose Up
-- The user requests of an agent's branch (its history items of raw role
-- user, not hidden), by branch index: the bootstrap of a new window lists
-- the newest and counts the rest (UserRequests) without walking every item
-- of the branch (docs/performance.md, issue 37: rollover latency). Partial:
-- only user items pay for it on the write path. No rebuild is needed: an
-- index is built from the rows as they are.
CREATE INDEX history_items_user_requests ON history_items (task_id, agent, branch_index)
    WHERE raw_role = 'user' AND hidden = 0;

-- +goose Down
DROP INDEX history_items_user_requests;
