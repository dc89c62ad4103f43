-- name: InsertTask :exec
INSERT INTO tasks (task_id, root_session, created_at, position) VALUES (?, ?, ?, ?);

-- name: GetTask :one
SELECT task_id, root_session, created_at, position FROM tasks WHERE task_id = ?;

-- name: InsertAgent :exec
INSERT INTO agents (task_id, agent, parent_agent, session_key, session_id, session_file, budget, position)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: UpdateAgentSession :exec
UPDATE agents SET session_id = ?, session_file = ?, budget = ? WHERE task_id = ? AND agent = ?;

-- name: GetAgent :one
SELECT task_id, agent, parent_agent, session_key, session_id, session_file, budget, position
FROM agents WHERE task_id = ? AND agent = ?;

-- name: GetAgentWithState :one
SELECT sqlc.embed(a),
    CAST(coalesce(s.state, '') AS TEXT) AS state,
    CAST((SELECT coalesce(max(position), 0) FROM events) AS INTEGER) AS read_position
FROM agents a LEFT JOIN agent_states s ON s.task_id = a.task_id AND s.agent = a.agent
WHERE a.task_id = ? AND a.agent = ?;

-- name: GetAgentWithStateAndNote :many
-- GetAgentWithState and NoteWithParts in one statement: a note read's
-- first query also fetches the note (no rows of it: n.path is NULL).
SELECT sqlc.embed(a),
    CAST(coalesce(s.state, '') AS TEXT) AS state,
    CAST((SELECT coalesce(max(position), 0) FROM events) AS INTEGER) AS read_position,
    n.path AS note_path, n.bytes AS note_bytes, n.revision AS note_revision, n.created_at AS note_created_at,
    n.updated_at AS note_updated_at, n.created_position AS note_created_position,
    n.updated_position AS note_updated_position, CAST(coalesce(p.text, '') AS TEXT) AS part_text
FROM agents a LEFT JOIN agent_states s ON s.task_id = a.task_id AND s.agent = a.agent
LEFT JOIN notes n ON n.task_id = a.task_id AND n.agent = sqlc.arg(note_agent) AND n.path = sqlc.arg(note_path)
LEFT JOIN note_parts p ON p.task_id = n.task_id AND p.agent = n.agent AND p.path = n.path
WHERE a.task_id = sqlc.arg(task_id) AND a.agent = sqlc.arg(agent)
ORDER BY p.part;

-- name: GetAgentWithStateAndNoteWrite :one
-- What a note write needs to know, in one statement: the caller's row
-- and state (as GetAgentWithState), the note's size, revision and parts
-- (0 when it does not exist) and the first result of the caller's
-- call_id, if it has been used.
SELECT sqlc.embed(a),
    CAST(coalesce(s.state, '') AS TEXT) AS state,
    CAST((SELECT coalesce(max(position), 0) FROM events) AS INTEGER) AS read_position,
    CAST(coalesce(n.bytes, 0) AS INTEGER) AS note_bytes,
    CAST(coalesce(n.revision, 0) AS INTEGER) AS note_revision,
    CAST(coalesce(n.parts, 0) AS INTEGER) AS note_parts,
    CAST(c.call_id IS NOT NULL AS INTEGER) AS called,
    CAST(coalesce(c.request_key, '') AS TEXT) AS request_key,
    CAST(coalesce(c.result, '') AS TEXT) AS result
FROM agents a LEFT JOIN agent_states s ON s.task_id = a.task_id AND s.agent = a.agent
LEFT JOIN notes n ON n.task_id = a.task_id AND n.agent = sqlc.arg(note_agent) AND n.path = sqlc.arg(note_path)
LEFT JOIN note_calls c ON c.task_id = a.task_id AND c.agent = a.agent AND c.call_id = sqlc.arg(call_id)
WHERE a.task_id = sqlc.arg(task_id) AND a.agent = sqlc.arg(agent);

-- name: AgentBySessionKey :one
SELECT task_id, agent, parent_agent, session_key, session_id, session_file, budget, position
FROM agents WHERE session_key = ?;

-- name: AgentInAnyTask :one
SELECT count(*) FROM agents WHERE agent = ?;

-- name: TaskAgents :many
SELECT agent FROM agents WHERE task_id = ? ORDER BY position;

-- name: NoteWithParts :many
SELECT n.path, n.bytes, n.revision, n.created_at, n.updated_at, n.created_position, n.updated_position,
    CAST(coalesce(p.text, '') AS TEXT) AS text
FROM notes n LEFT JOIN note_parts p ON p.task_id = n.task_id AND p.agent = n.agent AND p.path = n.path
WHERE n.task_id = ? AND n.agent = ? AND n.path = ?
ORDER BY p.part;

-- name: NoteParts :many
SELECT text FROM note_parts WHERE task_id = ? AND agent = ? AND path = ? ORDER BY part;

-- name: NoteSize :one
SELECT bytes, revision, parts FROM notes WHERE task_id = ? AND agent = ? AND path = ?;

-- name: InsertNote :exec
INSERT INTO notes (task_id, agent, path, bytes, revision, created_at, updated_at, created_position, updated_position, parts)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: UpdateNote :exec
UPDATE notes SET bytes = ?, revision = ?, parts = ?, updated_at = ?, updated_position = ?
WHERE task_id = ? AND agent = ? AND path = ?;

-- name: InsertNotePart :exec
INSERT INTO note_parts (task_id, agent, path, part, text) VALUES (?, ?, ?, ?, ?);

-- name: DeleteNoteParts :exec
DELETE FROM note_parts WHERE task_id = ? AND agent = ? AND path = ?;

-- name: ListNotes :many
SELECT path, bytes, created_at, updated_at, created_position, updated_position
FROM notes
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent)
  AND substr(path, 1, CAST(sqlc.arg(prefix_chars) AS INTEGER)) = CAST(sqlc.arg(prefix) AS TEXT)
ORDER BY path;

-- name: TaskNotes :many
-- Every note of a task, without its text (the inspector's list of files).
SELECT agent, path, bytes, revision, created_position, updated_position
FROM notes WHERE task_id = ? ORDER BY agent, path;

-- name: NotePartsUnder :many
SELECT n.path, n.created_at, n.created_position, p.text
FROM notes n LEFT JOIN note_parts p ON p.task_id = n.task_id AND p.agent = n.agent AND p.path = n.path
WHERE n.task_id = sqlc.arg(task_id) AND n.agent = sqlc.arg(agent)
  AND substr(n.path, 1, CAST(sqlc.arg(prefix_chars) AS INTEGER)) = CAST(sqlc.arg(prefix) AS TEXT)
ORDER BY n.path, p.part;

-- name: InsertNoteCall :exec
INSERT INTO note_calls (task_id, agent, call_id, request_key, result, position) VALUES (?, ?, ?, ?, ?, ?);

-- name: GetHistoryEntry :one
SELECT item, role, raw_role, n_chars, images, calls_only, tool_call_id, tool_name, compaction, control, marked_window, calls
FROM history_entries WHERE task_id = ? AND agent = ? AND entry_id = ?;

-- name: StoredEntryIDs :many
-- The ids among a JSON array of entry ids that an agent has stored.
SELECT entry_id FROM history_entries
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent)
  AND entry_id IN (SELECT value FROM json_each(CAST(sqlc.arg(ids) AS TEXT)));

-- name: FirstUnstoredEntry :one
-- The index in a JSON array of entry ids of the first one an agent has not
-- stored (json_each walks the array in order, so the scan stops there).
SELECT CAST(ids.key AS INTEGER) AS idx FROM json_each(CAST(sqlc.arg(ids) AS TEXT)) AS ids
WHERE NOT EXISTS (SELECT 1 FROM history_entries
    WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND entry_id = ids.value)
LIMIT 1;

-- name: InsertHistoryEntry :exec
INSERT INTO history_entries (task_id, agent, entry_id, item, role, raw_role, n_chars, images, calls_only,
    tool_call_id, tool_name, compaction, control, marked_window, position, text_chunk, text_offset, text_bytes,
    calls, breaks)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: LastChunkNo :one
SELECT CAST(coalesce(max(chunk_no), 0) AS INTEGER) FROM history_chunks WHERE task_id = ? AND agent = ?;

-- name: OpenTextsEnd :one
-- The bytes of text in an agent's open chunk: the end of its last text
-- (found by the key, not by scanning the open chunk's texts).
SELECT CAST(coalesce((SELECT text_offset + length(text) FROM history_open_texts
    WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) ORDER BY text_offset DESC LIMIT 1), 0) AS INTEGER);

-- name: InsertOpenText :exec
INSERT INTO history_open_texts (task_id, agent, text_offset, entry_id, breaks, text) VALUES (?, ?, ?, ?, ?, ?);

-- name: OpenTexts :many
SELECT text_offset, entry_id, breaks, text FROM history_open_texts
WHERE task_id = ? AND agent = ? ORDER BY text_offset;

-- name: OpenText :one
SELECT text FROM history_open_texts WHERE task_id = ? AND agent = ? AND text_offset = ?;

-- name: DeleteOpenTexts :exec
DELETE FROM history_open_texts WHERE task_id = ? AND agent = ?;

-- name: InsertChunk :exec
INSERT INTO history_chunks (task_id, agent, chunk_no, bloom, entries, data) VALUES (?, ?, ?, ?, ?, ?);

-- name: ChunkText :one
SELECT CAST(substr(data, CAST(sqlc.arg(start) AS INTEGER), CAST(sqlc.arg(n_bytes) AS INTEGER)) AS BLOB) AS text FROM history_chunks
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND chunk_no = sqlc.arg(chunk_no);

-- name: CandidateChunks :many
-- The chunks that may hold a needle: every trigram of the needle is in the
-- chunk's Bloom filter (memoryd_bloom_has, registered by this package).
SELECT chunk_no FROM history_chunks
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent)
  AND memoryd_bloom_has(bloom, CAST(sqlc.arg(probes) AS BLOB))
ORDER BY chunk_no;

-- name: ChunkData :one
SELECT entries, data FROM history_chunks WHERE task_id = ? AND agent = ? AND chunk_no = ?;

-- name: ChunkDataIfCandidate :one
-- ChunkData of a chunk whose Bloom filter has every probe bit (no row when
-- it cannot hold the needle: its data is then not read).
SELECT entries, data FROM history_chunks
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND chunk_no = sqlc.arg(chunk_no)
  AND memoryd_bloom_has(bloom, CAST(sqlc.arg(probes) AS BLOB));

-- name: GetHistoryBranch :one
SELECT revision, length, position FROM history_branches WHERE task_id = ? AND agent = ?;

-- name: UpsertHistoryBranch :exec
INSERT INTO history_branches (task_id, agent, revision, length, position) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (task_id, agent) DO UPDATE SET revision = excluded.revision, length = excluded.length, position = excluded.position;

-- name: BranchEntryIDs :many
SELECT entry_id FROM history_branch_entries WHERE task_id = ? AND agent = ? ORDER BY branch_index;

-- name: BranchEntryIDsFrom :many
-- The entry ids of an agent's current branch from branch index from_index,
-- at most max_count of them, in order.
SELECT entry_id FROM history_branch_entries
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND branch_index >= sqlc.arg(from_index)
ORDER BY branch_index
LIMIT sqlc.arg(max_count);

-- name: OnBranchBefore :many
-- Those of a JSON array of entry ids that are on an agent's current branch
-- before branch index before_index, with their index: one lookup of
-- the history_branch_entries_entry index per id (no ORDER BY, which would
-- make SQLite walk the branch in index order instead).
SELECT entry_id, branch_index FROM history_branch_entries INDEXED BY history_branch_entries_entry
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent)
  AND entry_id IN (SELECT value FROM json_each(CAST(sqlc.arg(ids) AS TEXT)))
  AND branch_index < sqlc.arg(before_index);

-- name: LastBranchChangeKeep :one
-- How many entries the last change of an agent's branch kept of the branch
-- before it: the keep of the history.branch_changed event the branch row
-- names.
SELECT CAST(json_extract(e.data, '$.keep') AS INTEGER) AS keep
FROM history_branches b JOIN events e ON e.position = b.position
WHERE b.task_id = ? AND b.agent = ?;

-- name: BranchLengthAt :one
-- The length of an agent's branch as of a log position: that of the last
-- history.branch_changed of its stream at or before the position (0: none).
-- A stream's versions grow with its positions, so the (stream,
-- stream_version) index is walked back from the stream's end.
SELECT CAST(coalesce((SELECT json_extract(data, '$.length') FROM events
    WHERE stream = sqlc.arg(stream) AND type = 'history.branch_changed' AND position <= sqlc.arg(at)
    ORDER BY stream_version DESC LIMIT 1), 0) AS INTEGER) AS length;

-- name: BranchChangesAfter :one
-- The history.branch_changed events of a stream after a log position: how
-- many, the fewest entries one kept (0: none) and the last one's position.
SELECT CAST(count(*) AS INTEGER) AS changes, CAST(coalesce(min(json_extract(data, '$.keep')), 0) AS INTEGER) AS min_keep,
    CAST(coalesce(max(position), 0) AS INTEGER) AS last_position
FROM events WHERE stream = sqlc.arg(stream) AND type = 'history.branch_changed' AND position > sqlc.arg(after);

-- name: BudgetAt :one
-- An agent's budget as of a log position, that of the last agent.registered
-- or agent.reattached of its stream at or before it, by the partial index
-- events_lifecycle, whose WHERE this repeats word for word (SQLite uses it
-- only then).
SELECT CAST(json_extract(data, '$.budget') AS TEXT) AS budget FROM events
WHERE stream = sqlc.arg(stream) AND type NOT IN ('note.written', 'note.appended', 'history.entry_recorded', 'history.branch_changed', 'audit.tool_called')
    AND type IN ('agent.registered', 'agent.reattached') AND position <= sqlc.arg(at)
ORDER BY position DESC LIMIT 1;

-- name: DeleteBranchEntriesFrom :exec
DELETE FROM history_branch_entries WHERE task_id = ? AND agent = ? AND branch_index >= ?;

-- name: InsertBranchEntry :exec
INSERT INTO history_branch_entries (task_id, agent, branch_index, entry_id, prefix_hash) VALUES (?, ?, ?, ?, ?);

-- name: BranchPrefixHash :one
SELECT prefix_hash FROM history_branch_entries WHERE task_id = ? AND agent = ? AND branch_index = ?;

-- name: DeleteItemsFrom :exec
DELETE FROM history_items WHERE task_id = ? AND agent = ? AND branch_index >= ?;

-- name: DeleteCallsFrom :exec
DELETE FROM history_calls WHERE task_id = ? AND agent = ? AND branch_index >= ?;

-- name: LastItemBefore :one
SELECT window_ordinal, window_id FROM history_items
WHERE task_id = ? AND agent = ? AND branch_index < ? ORDER BY branch_index DESC LIMIT 1;

-- name: WindowIDsBefore :many
-- The window ids of an agent's items before a branch index, by a scan of
-- them all: the reference TestWindowIDsBefore checks windowIDsBefore's
-- binary search against.
SELECT DISTINCT window_id FROM history_items WHERE task_id = ? AND agent = ? AND branch_index < ?;

-- name: InsertItem :exec
INSERT INTO history_items (task_id, agent, branch_index, entry_id, window_ordinal, window_id, role, raw_role,
    tool_namespace, tool_name, tool_call_id, hidden, n_chars, images)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: InsertCall :exec
INSERT OR IGNORE INTO history_calls (task_id, agent, branch_index, call_id, tool_name) VALUES (?, ?, ?, ?, ?);

-- name: CallToolName :one
SELECT tool_name FROM history_calls
WHERE task_id = ? AND agent = ? AND call_id = ? AND branch_index < ?
ORDER BY branch_index DESC LIMIT 1;

-- name: HistoryWindows :many
-- The windows of the items below branch_end, with their item counts.
SELECT window_ordinal, window_id, count(*) AS item_count FROM history_items
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND branch_index < sqlc.arg(branch_end)
GROUP BY window_ordinal, window_id ORDER BY window_ordinal;

-- name: HistoryItemsAfter :many
-- The items after a branch index and below branch_end, in branch order.
SELECT branch_index, entry_id, window_ordinal, window_id, role, raw_role, tool_namespace, tool_name, tool_call_id,
    hidden, n_chars, images
FROM history_items WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND branch_index > sqlc.arg(after)
    AND branch_index < sqlc.arg(branch_end)
ORDER BY branch_index LIMIT sqlc.arg(max_items);

-- name: HistoryItemsBefore :many
SELECT branch_index, entry_id, window_ordinal, window_id, role, raw_role, tool_namespace, tool_name, tool_call_id,
    hidden, n_chars, images
FROM history_items WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND branch_index < sqlc.arg(before)
ORDER BY branch_index DESC LIMIT sqlc.arg(max_items);

-- name: NewestUserRequests :many
-- The newest user requests of an agent's branch (items of raw role user,
-- not hidden), newest first, by the partial index
-- history_items_user_requests, whose WHERE this repeats word for word.
SELECT branch_index, entry_id, window_id FROM history_items INDEXED BY history_items_user_requests
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND raw_role = 'user' AND hidden = 0
ORDER BY branch_index DESC LIMIT sqlc.arg(max_items);

-- name: CountUserRequests :one
-- How many user requests an agent's branch holds, by the same index.
SELECT count(*) FROM history_items INDEXED BY history_items_user_requests
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND raw_role = 'user' AND hidden = 0;

-- name: HistoryItemPlacesAfter :many
-- HistoryItemsAfter with the chunk that holds each item's text (a search's
-- walk in branch order).
SELECT i.branch_index, i.entry_id, i.window_ordinal, i.window_id, i.role, i.raw_role, i.tool_namespace, i.tool_name,
    i.tool_call_id, i.hidden, i.n_chars, i.images, e.text_chunk, e.text_bytes
FROM history_items i JOIN history_entries e ON e.task_id = i.task_id AND e.agent = i.agent AND e.entry_id = i.entry_id
WHERE i.task_id = sqlc.arg(task_id) AND i.agent = sqlc.arg(agent) AND i.branch_index > sqlc.arg(after)
    AND i.branch_index < sqlc.arg(branch_end)
ORDER BY i.branch_index LIMIT sqlc.arg(max_items);

-- name: HistoryItemPlacesBefore :many
-- HistoryItemPlacesAfter newest first.
SELECT i.branch_index, i.entry_id, i.window_ordinal, i.window_id, i.role, i.raw_role, i.tool_namespace, i.tool_name,
    i.tool_call_id, i.hidden, i.n_chars, i.images, e.text_chunk, e.text_bytes
FROM history_items i JOIN history_entries e ON e.task_id = i.task_id AND e.agent = i.agent AND e.entry_id = i.entry_id
WHERE i.task_id = sqlc.arg(task_id) AND i.agent = sqlc.arg(agent) AND i.branch_index < sqlc.arg(before)
ORDER BY i.branch_index DESC LIMIT sqlc.arg(max_items);

-- name: HistoryCallsBetween :many
SELECT branch_index, call_id, tool_name FROM history_calls
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND branch_index >= sqlc.arg(low) AND branch_index <= sqlc.arg(high)
ORDER BY branch_index, call_id;

-- name: HistoryCallsAt :many
SELECT call_id, tool_name FROM history_calls WHERE task_id = ? AND agent = ? AND branch_index = ? ORDER BY call_id;

-- name: HistoryItemByEntry :one
SELECT branch_index, entry_id, window_ordinal, window_id, role, raw_role, tool_namespace, tool_name, tool_call_id,
    hidden, n_chars, images
FROM history_items WHERE task_id = ? AND agent = ? AND entry_id = ?;

-- name: HistoryEntryText :one
SELECT text_chunk, text_offset, text_bytes, breaks FROM history_entries WHERE task_id = ? AND agent = ? AND entry_id = ?;

-- name: HistoryEntryPosition :one
-- The position of an entry's history.entry_recorded event, which holds
-- its raw JSON.
SELECT position FROM history_entries WHERE task_id = ? AND agent = ? AND entry_id = ?;

-- name: GetAgentState :one
SELECT state FROM agent_states WHERE task_id = ? AND agent = ?;

-- name: UpsertAgentState :exec
INSERT INTO agent_states (task_id, agent, state, position) VALUES (?, ?, ?, ?)
ON CONFLICT (task_id, agent) DO UPDATE SET state = excluded.state, position = excluded.position;

-- name: ChunkFilters :many
-- The Bloom filters of an agent's sealed chunks after..until (ChunkFilters
-- loads them).
SELECT chunk_no, bloom FROM history_chunks
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent) AND chunk_no > sqlc.arg(after) AND chunk_no <= sqlc.arg(until)
ORDER BY chunk_no;

-- name: ChunkAgents :many
-- The agents with sealed history chunks, the one whose branch changed last
-- first, with their last sealed chunk (the chunk filters loaded at start).
SELECT b.task_id, b.agent, CAST((SELECT max(c.chunk_no) FROM history_chunks c
    WHERE c.task_id = b.task_id AND c.agent = b.agent) AS INTEGER) AS sealed
FROM history_branches b
WHERE EXISTS (SELECT 1 FROM history_chunks c WHERE c.task_id = b.task_id AND c.agent = b.agent)
ORDER BY b.position DESC;

-- name: CandidateChunksAmong :many
-- CandidateChunks among the chunks numbered in chunk_nos (a JSON array).
SELECT chunk_no FROM history_chunks
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent)
  AND chunk_no IN (SELECT value FROM json_each(CAST(sqlc.arg(chunk_nos) AS TEXT)))
  AND memoryd_bloom_has(bloom, CAST(sqlc.arg(probes) AS BLOB))
ORDER BY chunk_no;

-- name: TasksByActivity :many
-- The tasks whose latest event is before a position, newest activity
-- first (GET /v1/tasks). Each task's latest event is one seek of the
-- log's events_task index, and its time one lookup by position: no scan
-- of the log.
SELECT t.task_id, t.created_at, t.position AS created_position,
    e.position AS last_position, e.recorded_at AS last_at
FROM tasks t
JOIN events e ON e.position = (SELECT l.position FROM events l WHERE l.task_id = t.task_id ORDER BY l.position DESC LIMIT 1)
WHERE e.position < sqlc.arg(before)
ORDER BY e.position DESC
LIMIT sqlc.arg(max_tasks);

-- name: AgentsOfTasks :many
-- The agents of the tasks in task_ids (a JSON array), in registration
-- order, each with its fence state, its registration time and its
-- stream's latest event (one seek of the log's (stream, stream_version)
-- index), and its first request: the first item of its current branch
-- that the user typed (raw role user), its entry and when it was recorded.
SELECT a.task_id, a.agent, a.parent_agent, a.session_key, a.session_id, a.session_file,
    a.position AS registered_position, r.recorded_at AS registered_at,
    CAST(coalesce(s.state, '') AS TEXT) AS state,
    e.position AS last_position, e.recorded_at AS last_at,
    CAST(coalesce(fr.entry_id, '') AS TEXT) AS first_request_entry, CAST(coalesce(fr.position, 0) AS INTEGER) AS first_request_position
FROM agents a
JOIN events r ON r.position = a.position
LEFT JOIN agent_states s ON s.task_id = a.task_id AND s.agent = a.agent
LEFT JOIN history_entries fr ON fr.task_id = a.task_id AND fr.agent = a.agent AND fr.entry_id = (
    SELECT i.entry_id FROM history_items i WHERE i.task_id = a.task_id AND i.agent = a.agent AND i.raw_role = 'user' AND i.hidden = 0
    ORDER BY i.branch_index LIMIT 1)
JOIN events e ON e.position = (SELECT l.position FROM events l WHERE l.stream = a.task_id || a.agent ORDER BY l.stream_version DESC LIMIT 1)
WHERE a.task_id IN (SELECT value FROM json_each(CAST(sqlc.arg(task_ids) AS TEXT)))
ORDER BY a.task_id, a.position;

-- name: SetTaskRetain :execrows
-- A task's own retention policy (task.retention_set), '' for default.
UPDATE tasks SET retain = sqlc.arg(retain) WHERE task_id = sqlc.arg(task_id);

-- name: TasksForRetention :many
-- Every task with its own retention policy and its latest event (its last
-- activity), least recent first: what a retention pass weighs. Each task's
-- latest event is one seek of the log's events_task index.
SELECT t.task_id, t.retain, e.position AS last_position, e.recorded_at AS last_at
FROM tasks t
JOIN events e ON e.position = (SELECT l.position FROM events l WHERE l.task_id = t.task_id ORDER BY l.position DESC LIMIT 1)
ORDER BY e.position;

-- name: TaskForRetention :one
-- TasksForRetention of one task, in the erasure's transaction.
SELECT t.task_id, t.retain, e.position AS last_position, e.recorded_at AS last_at
FROM tasks t
JOIN events e ON e.position = (SELECT l.position FROM events l WHERE l.task_id = t.task_id ORDER BY l.position DESC LIMIT 1)
WHERE t.task_id = sqlc.arg(task_id);
