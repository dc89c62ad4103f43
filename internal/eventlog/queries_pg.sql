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

-- name: TaskNoteEventsAfter :many
SELECT * FROM events WHERE task_id = sqlc.arg(task_id) AND type IN ('note.written', 'note.appended') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamLifecycleEventsAfter :many
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type NOT IN ('note.written', 'note.appended', 'history.entry_recorded', 'history.branch_changed') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY stream_version LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamBounds :one
SELECT coalesce(min(position), 0)::bigint AS first_position, coalesce(max(position), 0)::bigint AS last_position, count(*) AS events
FROM events WHERE stream = sqlc.arg(stream) AND position <= sqlc.arg(until);
