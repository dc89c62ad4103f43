-- The queries of queries.sql for PostgreSQL: the same names, parameters
-- and results (sqlc generates eventspg from them). Keep the two files in
-- step: a query added to one is added to the other.

-- name: LastPosition :one
SELECT coalesce(max(position), 0)::bigint FROM events;

-- name: StreamVersion :one
SELECT coalesce(max(stream_version), 0)::bigint FROM events WHERE stream = $1;

-- name: InsertEvent :exec
INSERT INTO events (position, id, stream, stream_version, task_id, type, schema, recorded_at, data, request_id, packed)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);

-- name: EventsAfter :many
SELECT * FROM events WHERE position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events)::bigint;

-- name: TaskEventsAfter :many
SELECT * FROM events WHERE task_id = sqlc.arg(task_id) AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events)::bigint;

-- name: TaskEventsWithoutNotesAfter :many
-- A task's events but its notes and audit records, in position order.
SELECT * FROM events WHERE task_id = sqlc.arg(task_id) AND type NOT IN ('note.written', 'note.appended', 'audit.tool_called') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamNotesAfter :many
-- One stream's note writes and appends, every note's, in position order.
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type IN ('note.written', 'note.appended') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY stream_version LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamNoteSizes :many
-- The notes at paths of one stream as of position until (see the SQLite
-- query). PostgreSQL's JSON functions refuse an escaped NUL (\u0000), so
-- each is read as \u0001, a character of the same size, before the path
-- and the text are read.
SELECT path::text AS path, count(*)::bigint AS revisions, max(position)::bigint AS updated,
  sum(CASE WHEN position >= last_write THEN bytes ELSE 0 END)::bigint AS bytes
FROM (
  SELECT path, position, bytes, coalesce(max(CASE WHEN type = 'note.written' THEN position END) OVER (PARTITION BY path), 0) AS last_write
  FROM (
    SELECT doc ->> 'path' AS path, position, type, octet_length(doc ->> 'text') AS bytes
    FROM (
      SELECT position, type, (CASE WHEN strpos(data, '\u0000') = 0 THEN data ELSE regexp_replace(data, '(?<!\\)((?:\\\\)*)\\u0000', '\1\\u0001', 'g') END)::json AS doc
      FROM events WHERE stream = sqlc.arg(stream) AND type IN ('note.written', 'note.appended') AND position > sqlc.arg(after) AND position <= sqlc.arg(until)
    ) d
  ) n WHERE path IN (SELECT json_array_elements_text((sqlc.arg(paths)::text)::json))
) w
GROUP BY path;

-- name: StreamEventsAfter :many
-- One stream's events in position order, by the (stream, stream_version)
-- index: a stream's versions grow with its positions.
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY stream_version LIMIT sqlc.arg(max_events)::bigint;

-- name: EventAt :one
-- The event at a position (an entry's raw JSON, by its projection row).
SELECT * FROM events WHERE position = $1;

-- name: CountEvents :one
SELECT count(*) FROM events;

-- name: NoteEventsAfter :many
-- One note's writes and appends in position order (the inspector's list
-- of its revisions). PostgreSQL's JSON functions refuse a document with
-- an escaped NUL anywhere in it (\u0000, which a note's text may hold),
-- so the escapes of NUL (a \u0000 after an even number of backslashes)
-- are dropped before the path is read: the path itself never holds one.
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type IN ('note.written', 'note.appended') AND position > sqlc.arg(after) AND position <= sqlc.arg(until)
  AND ((CASE WHEN strpos(data, '\u0000') = 0 THEN data ELSE regexp_replace(data, '(?<!\\)((?:\\\\)*)\\u0000', '\1', 'g') END)::json ->> 'path') = sqlc.arg(path)::text
ORDER BY stream_version LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamLifecycleEventsAfter :many
-- One stream's lifecycle events (all but its notes, history and audit
-- ones) in position order, by the partial index events_lifecycle.
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type NOT IN ('note.written', 'note.appended', 'history.entry_recorded', 'history.branch_changed', 'audit.tool_called') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamCallsBefore :many
-- One stream's audited calls before a position, newest first, by the
-- partial index events_calls.
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type = 'audit.tool_called' AND position < sqlc.arg(before) ORDER BY position DESC LIMIT sqlc.arg(max_events)::bigint;

-- name: StreamBranchChangeFrom :one
-- The position of one stream's first history.branch_changed at or after
-- a position (0: none): the inspector's as-of tasks page asks when an
-- entry recorded there went onto the branch.
SELECT CAST(coalesce((SELECT position FROM events WHERE stream = sqlc.arg(stream) AND type = 'history.branch_changed' AND position >= sqlc.arg(from_position) ORDER BY position LIMIT 1), 0) AS BIGINT) AS position;

-- name: StreamBounds :one
-- One stream's first and last positions and its number of events, which
-- is its last version (versions are gapless from 1).
SELECT coalesce((SELECT f.position FROM events f WHERE f.stream = sqlc.arg(stream) AND f.stream_version = 1 AND f.position <= sqlc.arg(until)), 0)::bigint AS first_position,
    coalesce(l.position, 0)::bigint AS last_position, coalesce(l.stream_version, 0)::bigint AS events
FROM (SELECT 1) AS one LEFT JOIN (SELECT position, stream_version FROM events WHERE stream = sqlc.arg(stream) AND position <= sqlc.arg(until) ORDER BY stream_version DESC LIMIT 1) l ON true;

-- name: EraseTaskEvents :execrows
-- Every event of a task that is not a tombstone yet becomes one (see the
-- SQLite query).
UPDATE events SET type = 'event.erased', schema = 1, data = sqlc.arg(tombstone), request_id = '', packed = ''::bytea
WHERE task_id = sqlc.arg(task_id) AND type <> 'event.erased';

-- name: TaskEventCounts :one
-- A task's events before a position: how many, how many tombstones, and
-- how many tombstones hold the data given.
SELECT count(*)::bigint AS events,
  coalesce(sum(CASE WHEN type = 'event.erased' THEN 1 ELSE 0 END), 0)::bigint AS tombstones,
  coalesce(sum(CASE WHEN type = 'event.erased' AND data = sqlc.arg(tombstone)::text THEN 1 ELSE 0 END), 0)::bigint AS erased_here
FROM events WHERE task_id = sqlc.arg(task_id) AND position < sqlc.arg(before);

-- name: TaskErasures :many
-- A task's task.erased events, in position order.
SELECT * FROM events WHERE task_id = sqlc.arg(task_id) AND type = 'task.erased' ORDER BY position;

-- name: TaskLastRecordedBefore :one
-- The recorded_at of a task's latest event before a position: an import
-- checks a retention erasure's last_activity with it.
SELECT recorded_at FROM events WHERE task_id = sqlc.arg(task_id) AND position < sqlc.arg(before) ORDER BY position DESC LIMIT 1;

-- name: MarkAtRest :exec
INSERT INTO at_rest (scheme, key_check)
SELECT sqlc.arg(scheme)::text, sqlc.arg(key_check)::text
WHERE NOT EXISTS (SELECT 1 FROM at_rest) AND NOT EXISTS (SELECT 1 FROM events);

-- name: AtRest :many
SELECT scheme, key_check FROM at_rest;
