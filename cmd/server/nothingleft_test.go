package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/internal/projections"
)

// The secrets planted by TestNothingLeftToGrep: shapes the default
// redaction rules catch (internal/redact/testdata/secrets.txt), generated,
// not real credentials.
const (
	plantedAWSKey      = "AKIASONJB3DC2HOMZ6B4"
	plantedGitHubToken = "ghp_NLv6RhtTjKGHGlbgEyQeJJnKMmNlBD5s33vr"
)

// TestNothingLeftToGrep is issue 36's must-show, end to end through a
// serving memoryd and the verbs, on SQLite and on PostgreSQL (skipped
// without MEMORYD_TEST_POSTGRES, as pgtest says):
// a secret of a default-redacted shape synced in a session entry and
// written and appended in a note, and the texts of a second task that is
// then erased through the route, are in none of what memoryd keeps or
// writes: on SQLite the database file and its -wal (while the server holds
// them open, and after it stops), an export and a backup made after the
// erasure; on PostgreSQL the table contents as the server returns them, an
// export and a pg_dump (when pg_dump is on PATH), and memoryd backup refuses
// with its message. The marker and the kept task's own texts are found in
// each of them, so each grep could have found something. The kept task's
// projection digests (projections.TaskDigest), live and in a replay of
// the exported log, are the same after the erasure as before.
func TestNothingLeftToGrep(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { nothingLeftToGrep(t, filepath.Join(t.TempDir(), "memory.db")) })
	t.Run("postgres", func(t *testing.T) { nothingLeftToGrep(t, pgtest.NewDatabase(t)) })
}

func nothingLeftToGrep(t *testing.T, db string) {
	ctx := context.Background()
	dir := t.TempDir()
	_, isSQLite := memory.ParseLocation(db).File()
	getenv := env(map[string]string{"HOME": dir})
	secrets := []string{plantedAWSKey, plantedGitHubToken}
	keptTexts := []string{"KEPT-ENTRY-TEXT-5e1c", "KEPT-NOTE-TEXT-a7d2"}
	markers := []string{"[REDACTED:aws_access_key_id:", "[REDACTED:github_token:"}
	erasedTexts := []string{"ERASED-ENTRY-TEXT-c93b", "ERASED-NOTE-TEXT-41f0", "ERASED-APPENDED-TEXT-d62e"}
	gone := append(append([]string{}, secrets...), erasedTexts...)
	found := append(append([]string{}, keptTexts...), markers...)

	// Two tasks, through a serving memoryd's routes, as a host sends them.
	s, client := servedAPI(t, db, getenv)
	attach := func(key string) memory.CallContext {
		t.Helper()
		var att memory.AttachResult
		if err := client.post(ctx, "/v1/sessions/attach", map[string]any{"session_key": key, "session_id": key}, &att); err != nil {
			t.Fatal(err)
		}
		return memory.CallContext{TaskID: att.TaskID, Agent: att.Agent}
	}
	sync := func(cc memory.CallContext, id, text string) {
		t.Helper()
		entry, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": nil, "timestamp": "2026-12-07T10:00:00.000Z",
			"message": map[string]any{"role": "user", "content": text}})
		if err := client.post(ctx, "/v1/history/sync", map[string]any{"context": cc, "entries": []json.RawMessage{entry}, "branch": []string{id}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	note := func(cc memory.CallContext, tool, text string) {
		t.Helper()
		calls++
		cc.CallID = fmt.Sprintf("toolu_nothing_left_%d", calls)
		if err := client.post(ctx, "/v1/tools/"+tool, map[string]any{"context": cc, "arguments": map[string]any{"path": "plan.md", "text": text}}, nil); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	kept := attach("kept-session")
	sync(kept, "k1", fmt.Sprintf("%s: aws_access_key_id = %s and GITHUB_TOKEN=%s", keptTexts[0], plantedAWSKey, plantedGitHubToken))
	note(kept, "notes_write_file", fmt.Sprintf("%s\naws_access_key_id = %s\n", keptTexts[1], plantedAWSKey))
	note(kept, "notes_append_to_file", "export GITHUB_TOKEN="+plantedGitHubToken+"\n")
	erased := attach("erased-session")
	sync(erased, "e1", "please remember "+erasedTexts[0])
	note(erased, "notes_write_file", erasedTexts[1]+"\n")
	note(erased, "notes_append_to_file", erasedTexts[2]+"\n")

	// Redacted before the append: while memoryd serves, with its WAL open.
	if isSQLite {
		holdsNone(t, "the database file while serving", fileBytes(t, db), secrets)
		holdsNone(t, "the -wal while serving", fileBytes(t, db+"-wal"), secrets)
		holdsAll(t, "the database file and its -wal while serving", append(fileBytes(t, db), fileBytes(t, db+"-wal")...), append(found, erasedTexts...))
	} else {
		rows := tableContents(t, db)
		holdsNone(t, "the tables", rows, secrets)
		holdsAll(t, "the tables", rows, append(found, erasedTexts...))
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	liveBefore := keptDigest(t, db, kept.TaskID)
	exportBefore := writeExport(t, dir, "before.jsonl", db)
	holdsNone(t, "an export before the erasure", fileBytes(t, exportBefore), secrets)
	replayedBefore := replayedDigest(t, exportBefore, isSQLite, kept.TaskID)
	if !reflect.DeepEqual(replayedBefore, liveBefore) {
		t.Fatalf("a replay's digest of the kept task differs from the live one before the erasure:\n%v\n%v", replayedBefore, liveBefore)
	}

	// The erasure, through the route of a serving memoryd.
	s, client = servedAPI(t, db, getenv)
	var res memory.Erasure
	if err := client.post(ctx, "/v1/tasks/"+erased.TaskID+"/forget", map[string]any{}, &res); err != nil {
		t.Fatal(err)
	}
	if res.TaskID != erased.TaskID || res.Events == 0 || (isSQLite && (!res.Scrub.WALTruncated || !res.Scrub.SecureDelete)) {
		t.Fatalf("forget answered %+v", res)
	}
	if isSQLite {
		holdsNone(t, "the database file after the erasure, while serving", fileBytes(t, db), gone)
		holdsNone(t, "the -wal after the erasure, while serving", fileBytes(t, db+"-wal"), gone)
		holdsAll(t, "the database file after the erasure, while serving", fileBytes(t, db), found)
	}
	exportAfter := writeExport(t, dir, "after.jsonl", db)
	var backup string
	if isSQLite {
		backup = filepath.Join(dir, "backup.db")
		fxMust(t, "backup", "--db", db, backup)
	} else {
		_, _, err := fxRun(t, nil, "backup", "--db", db, filepath.Join(dir, "backup.db"))
		if err == nil || err.Error() != eventlog.ErrNoBackup.Error() {
			t.Errorf("backup of a PostgreSQL database: %v, want %q", err, eventlog.ErrNoBackup)
		}
		if _, err := os.Stat(filepath.Join(dir, "backup.db")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused backup left a file: %v", err)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}

	// Nothing after it either: the files once memoryd stopped, the export
	// and backup made after the erasure, PostgreSQL's rows and its dump.
	type copyOf struct {
		what string
		b    []byte
	}
	copies := []copyOf{{"an export made after the erasure", fileBytes(t, exportAfter)}}
	if isSQLite {
		copies = append(copies, copyOf{"the database file once memoryd stopped", fileBytes(t, db)}, copyOf{"a backup made after the erasure", fileBytes(t, backup)})
		holdsNone(t, "the -wal once memoryd stopped", fileBytes(t, db+"-wal"), gone)
	} else {
		copies = append(copies, copyOf{"the tables after the erasure", tableContents(t, db)})
		if dump, ok := pgDump(t, db); ok {
			copies = append(copies, copyOf{"a pg_dump after the erasure", dump})
		}
	}
	for _, c := range copies {
		holdsNone(t, c.what, c.b, gone)
		holdsAll(t, c.what, c.b, found)
	}

	// The kept task's projections are the same, live and replayed.
	if got := keptDigest(t, db, kept.TaskID); !reflect.DeepEqual(got, liveBefore) {
		t.Errorf("the kept task's live digest changed with the erasure:\n%v\n%v", got, liveBefore)
	}
	if got := replayedDigest(t, exportAfter, isSQLite, kept.TaskID); !reflect.DeepEqual(got, liveBefore) {
		t.Errorf("the kept task's digest in a replay of the erased log differs:\n%v\n%v", got, liveBefore)
	}
	for _, d := range keptDigest(t, db, erased.TaskID) {
		if d.Rows != 0 {
			t.Errorf("the erased task keeps %d rows in %s", d.Rows, d.Table)
		}
	}
	fxMust(t, "verify", "--db", db)
	grep := []string{"verify", "--db", db, "--erased", erased.TaskID}
	for _, s := range erasedTexts {
		grep = append(grep, "--grep", s)
	}
	fxMust(t, grep...)
}

// fileBytes is a file's content, nil when it does not exist.
func fileBytes(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return b
}

// holdsNone fails for each text found in b.
func holdsNone(t *testing.T, what string, b []byte, texts []string) {
	t.Helper()
	for _, s := range texts {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s holds %q", what, s)
		}
	}
}

// holdsAll fails for each text not found in b: the grep of b could find
// what it looked for.
func holdsAll(t *testing.T, what string, b []byte, texts []string) {
	t.Helper()
	for _, s := range texts {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("%s does not hold %q", what, s)
		}
	}
}

// keptDigest is projections.TaskDigest of a task in the database db,
// which no memoryd serves.
func keptDigest(t *testing.T, db, taskID string) []projections.TableDigest {
	t.Helper()
	svc, err := memory.Open(context.Background(), db, memory.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	d, err := projections.TaskDigest(context.Background(), svc.Store(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// replayedDigest replays an exported log with memoryd replay into a new
// database, SQLite or PostgreSQL, and returns a task's digest there.
func replayedDigest(t *testing.T, log string, sqlite bool, taskID string) []projections.TableDigest {
	t.Helper()
	out := filepath.Join(t.TempDir(), "replayed.db")
	if !sqlite {
		out = pgtest.NewDatabase(t)
	}
	fxMust(t, "replay", log, "--db", out)
	return keptDigest(t, out, taskID)
}

// tableContents is every row of every table of a PostgreSQL database, as
// the server returns them: text as it is, bytea as its bytes, the rest as
// Go prints it, one row a line.
func tableContents(t *testing.T, dsn string) []byte {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(tables) < 5 {
		t.Fatalf("tables: %v", tables)
	}
	var buf bytes.Buffer
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+strings.ReplaceAll(table, `"`, `""`)+`"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&buf, "%s:", table)
			for _, v := range vals {
				switch v := v.(type) {
				case []byte:
					buf.WriteByte(' ')
					buf.Write(v)
				default:
					fmt.Fprintf(&buf, " %v", v)
				}
			}
			buf.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return buf.Bytes()
}

// pgDump is pg_dump's plain-text dump of a PostgreSQL database, when
// pg_dump is on PATH (scripts/local-postgres installs it with the server).
func pgDump(t *testing.T, dsn string) ([]byte, bool) {
	t.Helper()
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		t.Log("no pg_dump on PATH: the dump is not grepped")
		return nil, false
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--no-password", "--dbname", dsn)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, stderr.String())
	}
	return out, true
}
