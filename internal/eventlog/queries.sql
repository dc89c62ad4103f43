-- name: LastPosition :one
SELECT CAST(coalesce(max(position), 0) AS INTEGER) FROM events;

-- name: StreamVersion :one
SELECT CAST(coalesce(max(stream_version), 0) AS INTEGER) FROM events WHERE stream = ?;

-- name: InsertEvent :exec
INSERT INTO events (position, id, stream, stream_version, task_id, type, schema, recorded_at, data, request_id, packed)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: EventsAfter :many
SELECT * FROM events WHERE position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events);

-- name: TaskEventsAfter :many
SELECT * FROM events WHERE task_id = sqlc.arg(task_id) AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events);

-- name: TaskEventsWithoutNotesAfter :many
-- A task's events but its notes and audit records, in position order (the
-- inspector's copy for a history page as of a position), by the
-- events_task index, the skipped rows unread by Go.
SELECT * FROM events WHERE task_id = sqlc.arg(task_id) AND type NOT IN ('note.written', 'note.appended', 'audit.tool_called') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events);

-- name: StreamNotesAfter :many
-- One stream's note writes and appends, every note's, in position order
-- (the inspector's notes as of a position), by the (stream,
-- stream_version) index.
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type IN ('note.written', 'note.appended') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY stream_version LIMIT sqlc.arg(max_events);

-- name: StreamNoteSizes :many
-- The notes at paths (a JSON array of paths) of one stream as of position
-- until, from the stream's note events in (after, until]: each one's number
-- of writes and appends, its last one's position, and its size in bytes (a
-- write replaces, an append adds). The inspector's notes page as of a
-- position: SQLite folds the events, which are never copied to Go.
SELECT CAST(path AS TEXT) AS path, CAST(count(*) AS INTEGER) AS revisions, CAST(max(position) AS INTEGER) AS updated,
  CAST(sum(CASE WHEN position >= last_write THEN bytes ELSE 0 END) AS INTEGER) AS bytes
FROM (
  SELECT path, position, bytes, coalesce(max(CASE WHEN type = 'note.written' THEN position END) OVER (PARTITION BY path), 0) AS last_write
  FROM (
    SELECT json_extract(data, '$.path') AS path, position, type, octet_length(json_extract(data, '$.text')) AS bytes
    FROM events WHERE stream = sqlc.arg(stream) AND type IN ('note.written', 'note.appended') AND position > sqlc.arg(after) AND position <= sqlc.arg(until)
  ) WHERE path IN (SELECT value FROM json_each(CAST(sqlc.arg(paths) AS TEXT)))
)
GROUP BY path;

-- name: StreamEventsAfter :many
-- One stream's events in position order, by the (stream, stream_version)
-- index: a stream's versions grow with its positions.
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY stream_version LIMIT sqlc.arg(max_events);

-- name: EventAt :one
-- The event at a position (an entry's raw JSON, by its projection row).
SELECT * FROM events WHERE position = ?;

-- name: CountEvents :one
SELECT count(*) FROM events;

-- name: NoteEventsAfter :many
-- One note's writes and appends in position order (the inspector's list
-- of its revisions): its owner's stream by the (stream, stream_version)
-- index, the other events of the stream skipped in SQLite, unread by Go.
-- (An index by note would read fewer rows, but every note event would
-- pay for it on the write path.)
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type IN ('note.written', 'note.appended') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) AND json_extract(data, '$.path') = CAST(sqlc.arg(path) AS TEXT) ORDER BY stream_version LIMIT sqlc.arg(max_events);

-- name: StreamLifecycleEventsAfter :many
-- One stream's lifecycle events (all but its notes, history and audit
-- ones) in position order: every event the checkpoint fence folds (the
-- inspector's timeline), by the partial index events_lifecycle, whose
-- WHERE this repeats word for word (SQLite uses it only then).
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type NOT IN ('note.written', 'note.appended', 'history.entry_recorded', 'history.branch_changed', 'audit.tool_called') AND position > sqlc.arg(after) AND position <= sqlc.arg(until) ORDER BY position LIMIT sqlc.arg(max_events);

-- name: StreamCallsBefore :many
-- One stream's audited calls before a position, newest first (the
-- inspector's timeline lists the last ones), by the partial index
-- events_calls.
SELECT * FROM events WHERE stream = sqlc.arg(stream) AND type = 'audit.tool_called' AND position < sqlc.arg(before) ORDER BY position DESC LIMIT sqlc.arg(max_events);

-- name: StreamBranchChangeFrom :one
-- The position of one stream's first history.branch_changed at or after
-- a position (0: none): the inspector's as-of tasks page asks when an
-- entry recorded there went onto the branch.
SELECT CAST(coalesce((SELECT position FROM events WHERE stream = sqlc.arg(stream) AND type = 'history.branch_changed' AND position >= sqlc.arg(from_position) ORDER BY position LIMIT 1), 0) AS INTEGER) AS position;

-- name: StreamBounds :one
-- One stream's first and last positions and its number of events, which
-- is its last version (versions are gapless from 1): two lookups in the
-- (stream, stream_version) index instead of counting the stream.
SELECT CAST(coalesce((SELECT f.position FROM events f WHERE f.stream = sqlc.arg(stream) AND f.stream_version = 1 AND f.position <= sqlc.arg(until)), 0) AS INTEGER) AS first_position,
    CAST(coalesce(l.position, 0) AS INTEGER) AS last_position, CAST(coalesce(l.stream_version, 0) AS INTEGER) AS events
FROM (SELECT 1) LEFT JOIN (SELECT position, stream_version FROM events WHERE stream = sqlc.arg(stream) AND position <= sqlc.arg(until) ORDER BY stream_version DESC LIMIT 1) l;

-- name: EraseTaskEvents :execrows
-- Every event of a task that is not a tombstone yet becomes one, of the
-- erasure at the position its data names: its type, schema, payload and
-- request id are replaced; its position, id, stream, stream version, task
-- and time are kept (docs/forgetting.md). By the events_task index. OR
-- FAIL: a failure ends the statement without undoing its rows (the
-- erasure's transaction is rolled back whole), so SQLite keeps no
-- statement journal, a copy of every page a task's events fill.
UPDATE OR FAIL events SET type = 'event.erased', schema = 1, data = sqlc.arg(tombstone), request_id = '', packed = x''
WHERE task_id = sqlc.arg(task_id) AND type <> 'event.erased';

-- name: TaskEventCounts :one
-- A task's events before a position: how many there are, how many are
-- tombstones, and how many of those hold the tombstone data given (the
-- erasure's own). An import checks a task.erased with it.
SELECT CAST(count(*) AS INTEGER) AS events,
  CAST(coalesce(sum(CASE WHEN type = 'event.erased' THEN 1 ELSE 0 END), 0) AS INTEGER) AS tombstones,
  CAST(coalesce(sum(CASE WHEN type = 'event.erased' AND data = CAST(sqlc.arg(tombstone) AS TEXT) THEN 1 ELSE 0 END), 0) AS INTEGER) AS erased_here
FROM events WHERE task_id = sqlc.arg(task_id) AND position < sqlc.arg(before);

-- name: TaskErasures :many
-- A task's task.erased events, in position order.
SELECT * FROM events WHERE task_id = sqlc.arg(task_id) AND type = 'task.erased' ORDER BY position;

-- name: TaskLastRecordedBefore :one
-- The recorded_at of a task's latest event before a position: an import
-- checks a retention erasure's last_activity with it.
SELECT recorded_at FROM events WHERE task_id = sqlc.arg(task_id) AND position < sqlc.arg(before) ORDER BY position DESC LIMIT 1;

-- name: MarkAtRest :exec
-- Marks a new database encrypted at rest: the row is written only while
-- the database has neither the row nor an event.
INSERT INTO at_rest (scheme, key_check)
SELECT CAST(sqlc.arg(scheme) AS TEXT), CAST(sqlc.arg(key_check) AS TEXT)
WHERE NOT EXISTS (SELECT 1 FROM at_rest) AND NOT EXISTS (SELECT 1 FROM events);

-- name: AtRest :many
SELECT scheme, key_check FROM at_rest;
