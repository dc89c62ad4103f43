-- name: LastPosition :one
SELECT coalesce(max(position), 0)::bigint FROM events;

-- name: StreamVersion :one
SELECT coalesce(max(stream_version), 0)::bigint FROM events WHERE stream = $1;

-- name: InsertEvent :exec
INSERT INTO events (position, id, stream, stream_version, task_id, type, schema, recorded_at, data, request_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- name: EventsAfter :many
SELECT * FROM events WHERE position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events)::bigint;

-- name: TaskEventsAfter :many
SELECT * FROM events WHERE task_id = sqlc.arg(task_id) AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamEventsAfter :many
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY stream_version LIMIT sqlc.arg(max_events)::bigint;

-- name: CountEvents :one
SELECT count(*) FROM events;

-- name: NoteEventsAfter :many
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type IN ('note.written', 'note.appended') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) AND (data::jsonb ->> 'path') = sqlc.arg(path)::text ORDER BY stream_version LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamLifecycleEventsAfter :many
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type NOT IN ('note.written', 'note.appended', 'history.entry_recorded', 'history.branch_changed', 'audit.tool_called') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamCallsBefore :many
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type = 'audit.tool_called' AND position < sqlc.arg(before) ORDER BY position DESC LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamBounds :one
SELECT coalesce((SELECT f.position FROM events f WHERE f.stream = sqlc.arg(stream) AND f.stream_version = 1 AND f.position <= sqlc.arg(until)), 0)::bigint AS first_position,
    coalesce(l.position, 0)::bigint AS last_position, coalesce(l.stream_version, 0)::bigint AS events
FROM (SELECT 1) AS one LEFT JOIN (SELECT position, stream_version FROM events WHERE stream = sqlc.arg(stream) AND position <= sqlc.arg(until) ORDER BY stream_version DESC LIMIT 1) l ON true;
