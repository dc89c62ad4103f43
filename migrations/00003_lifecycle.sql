-- +goose Up
-- Projection: each agent's checkpoint fence and rollover state, folded
-- from its lifecycle events by fence.Apply.
CREATE TABLE agent_states (
    task_id  TEXT    NOT NULL,
    agent    TEXT    NOT NULL,
    state    TEXT    NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent)
);

-- +goose Down
DROP TABLE agent_states;
