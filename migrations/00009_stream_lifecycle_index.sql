-- +goose Up
-- An agent's lifecycle events (what its checkpoint fence folds) and its
-- audited calls, each by stream and position, for the inspector's
-- timeline, which reads them without the stream's note and history events
-- (most of a stream). Partial indexes: a note or history event is in neither, so the write path of
-- notes and history pays only the test of its type. No rebuild is
-- needed: an index is built from the rows as they are.
CREATE INDEX events_lifecycle ON events (stream, position)
    WHERE type NOT IN ('note.written', 'note.appended', 'history.entry_recorded', 'history.branch_changed', 'audit.tool_called');
CREATE INDEX events_calls ON events (stream, position) WHERE type = 'audit.tool_called';

-- +goose Down
DROP INDEX events_calls;
DROP INDEX events_lifecycle;
