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

-- name: AgentBySessionKey :one
SELECT task_id, agent, parent_agent, session_key, session_id, session_file, budget, position
FROM agents WHERE session_key = ?;

-- name: AgentInAnyTask :one
SELECT count(*) FROM agents WHERE agent = ?;

-- name: TaskAgents :many
SELECT agent FROM agents WHERE task_id = ? ORDER BY position;

-- name: GetNote :one
SELECT task_id, agent, path, content, bytes, revision, created_at, updated_at, created_position, updated_position
FROM notes WHERE task_id = ? AND agent = ? AND path = ?;

-- name: NoteSize :one
SELECT bytes FROM notes WHERE task_id = ? AND agent = ? AND path = ?;

-- name: InsertNote :exec
INSERT INTO notes (task_id, agent, path, content, bytes, revision, created_at, updated_at, created_position, updated_position)
VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?);

-- name: ReplaceNoteContent :exec
UPDATE notes SET content = ?, bytes = ?, revision = revision + 1, updated_at = ?, updated_position = ?
WHERE task_id = ? AND agent = ? AND path = ?;

-- name: ListNotes :many
SELECT path, bytes, created_at, updated_at, created_position, updated_position
FROM notes
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent)
  AND substr(path, 1, CAST(sqlc.arg(prefix_chars) AS INTEGER)) = CAST(sqlc.arg(prefix) AS TEXT)
ORDER BY path;

-- name: SearchNotes :many
SELECT path, content, created_at, created_position
FROM notes
WHERE task_id = sqlc.arg(task_id) AND agent = sqlc.arg(agent)
  AND substr(path, 1, CAST(sqlc.arg(prefix_chars) AS INTEGER)) = CAST(sqlc.arg(prefix) AS TEXT)
  AND instr(content, CAST(sqlc.arg(query) AS BLOB)) > 0
ORDER BY path;

-- name: GetNoteCall :one
SELECT request_key, result FROM note_calls WHERE task_id = ? AND agent = ? AND call_id = ?;

-- name: InsertNoteCall :exec
INSERT INTO note_calls (task_id, agent, call_id, request_key, result, position) VALUES (?, ?, ?, ?, ?, ?);
