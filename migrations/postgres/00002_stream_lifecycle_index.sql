-- +goose Up
-- The SQLite migration 00009: an agent's lifecycle events and its audited
-- calls, each by stream and position, for the inspector's timeline, as
-- partial indexes (the queries repeat their WHERE, so the planner can
-- use them; a note or history event is in neither).
CREATE INDEX events_lifecycle ON events (stream, position)
    WHERE type NOT IN ('note.written', 'note.appended', 'history.entry_recorded', 'history.branch_changed', 'audit.tool_called');
CREATE INDEX events_calls ON events (stream, position) WHERE type = 'audit.tool_called';

-- +goose Down
DROP INDEX events_calls;
DROP INDEX events_lifecycle;
