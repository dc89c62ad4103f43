package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/internal/projections"
)

// TestEncryptionAtRest is issue 36's encryption at rest, end to end
// through serve --encrypt and the verbs, on SQLite and on PostgreSQL
// (skipped without MEMORYD_TEST_POSTGRES, as pgtest says). A session's
// history (enough to seal chunks) and a note, written through a serving
// memoryd, answer the tools as on a plain database (literal search
// included), and are in none of what the database keeps: the file and its
// -wal while served and after, a backup (SQLite), the tables as the
// server returns them and a pg_dump (PostgreSQL). The export is the plain
// log, whose import into a plain database and into an encrypted one give
// equal projection digests. Without its key, or with another, every verb
// refuses the database, naming where the key is looked for; verify
// --erased --grep finds a task's text in the sealed values until the task
// is forgotten, and none after; serve
// --encrypt refuses a database of plain events and leaves no key file.
func TestEncryptionAtRest(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { encryptionAtRest(t, filepath.Join(t.TempDir(), "db", "memory.db")) })
	t.Run("postgres", func(t *testing.T) { encryptionAtRest(t, pgtest.NewDatabase(t)) })
}

// atRestRun runs the program with getenv, as a user's shell would.
func atRestRun(getenv func(string) string, args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, getenv, nil, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func atRestMust(t *testing.T, getenv func(string) string, args ...string) string {
	t.Helper()
	out, stderr, err := atRestRun(getenv, args...)
	if err != nil {
		t.Fatalf("memoryd %s: %v\nstderr %s", strings.Join(args, " "), err, stderr)
	}
	return out
}

func encryptionAtRest(t *testing.T, db string) {
	ctx := context.Background()
	dir := t.TempDir()
	file, isSQLite := memory.ParseLocation(db).File()
	vars := map[string]string{"HOME": dir}
	if !isSQLite { // the data folder's key file would serve every database on a server: give it
		vars["MEMORYD_ENCRYPTION_KEY"] = strings.Repeat("3c", atrest.KeySize)
	}
	getenv := env(vars)
	needle := "SEALED-NEEDLE-7f3a"
	entryText := "SEALED-ENTRY-TEXT-b21d"
	noteText, appended := "SEALED-NOTE-TEXT-e4c9", "SEALED-APPENDED-TEXT-0a5f"
	texts := []string{needle, entryText, noteText, appended}

	s := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--encrypt"}, getenv)
	token, err := existingToken(getenv, db)
	if err != nil {
		t.Fatal(err)
	}
	client := apiClient{addr: strings.TrimPrefix(s.url, "http://"), token: token, http: s.client}
	if isSQLite {
		fi, err := os.Stat(filepath.Join(filepath.Dir(file), "encryption.key"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("serve --encrypt made no private key file beside the database: %v", err)
		}
	}
	var att memory.AttachResult
	if err := client.post(ctx, "/v1/sessions/attach", map[string]any{"session_key": "sealed-session", "session_id": "sealed-session"}, &att); err != nil {
		t.Fatal(err)
	}
	cc := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent}
	// 40 entries of 4 KiB: more than two sealed chunks of history text.
	var entries []json.RawMessage
	var branch []string
	for i := range 40 {
		id := fmt.Sprintf("e%02d", i)
		text := fmt.Sprintf("%s %d %s", entryText, i, strings.Repeat("filler words of a long tool output ", 115))
		if i == 7 {
			text += " " + needle
		}
		e, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": nil, "timestamp": "2026-12-07T10:00:00.000Z",
			"message": map[string]any{"role": "user", "content": text}})
		entries, branch = append(entries, e), append(branch, id)
	}
	if err := client.post(ctx, "/v1/history/sync", map[string]any{"context": cc, "entries": entries, "branch": branch}, nil); err != nil {
		t.Fatal(err)
	}
	tool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		c := cc
		c.CallID = "call-" + name
		var out map[string]any
		if err := client.post(ctx, "/v1/tools/"+name, map[string]any{"context": c, "arguments": args}, &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return out
	}
	tool("notes_write_file", map[string]any{"path": "plan.md", "text": noteText + "\n"})
	tool("notes_append_to_file", map[string]any{"path": "plan.md", "text": appended + "\n"})
	answers := func() string {
		t.Helper()
		var b strings.Builder
		for _, a := range []map[string]any{
			tool("history_search_contents", map[string]any{"query": needle}),
			tool("notes_read_file", map[string]any{"path": "plan.md"}),
			tool("notes_search_contents", map[string]any{"query": appended}),
		} {
			j, _ := json.Marshal(a)
			b.Write(j)
		}
		return b.String()
	}
	got := answers()
	for _, want := range []string{`"e07"`, noteText, appended} {
		if !strings.Contains(got, want) {
			t.Errorf("the tools on the encrypted database do not answer %q: %s", want, got)
		}
	}
	if isSQLite {
		live := append(fileBytes(t, file), fileBytes(t, file+"-wal")...)
		holdsNone(t, "the database file and its -wal while serving", live, texts)
		holdsAll(t, "the database file and its -wal while serving", live, []string{"plan.md", att.TaskID})
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}

	// What the database keeps, once memoryd stopped.
	if isSQLite {
		holdsNone(t, "the database file", fileBytes(t, file), texts)
		holdsNone(t, "the -wal", fileBytes(t, file+"-wal"), texts)
		backup := filepath.Join(dir, "backup.db")
		atRestMust(t, getenv, "backup", "--db", db, backup)
		holdsNone(t, "a backup", fileBytes(t, backup), texts)
		// The backup is restored and verified with the key, which is not
		// in its folder: the variable gives it.
		restored := filepath.Join(dir, "restored", "memory.db")
		if _, stderr, err := atRestRun(getenv, "restore", backup, "--db", restored); err == nil || !strings.Contains(err.Error(), "MEMORYD_ENCRYPTION_KEY") {
			t.Errorf("restore without the key: %v (%s), want a refusal naming MEMORYD_ENCRYPTION_KEY", err, stderr)
		}
		key := strings.TrimSpace(string(fileBytes(t, filepath.Join(filepath.Dir(file), "encryption.key"))))
		withKey := env(map[string]string{"HOME": dir, "MEMORYD_ENCRYPTION_KEY": key})
		atRestMust(t, withKey, "restore", backup, "--db", restored)
		atRestMust(t, withKey, "verify", "--db", restored)
	} else {
		rows := tableContents(t, db)
		holdsNone(t, "the tables", rows, texts)
		holdsAll(t, "the tables", rows, []string{"plan.md", att.TaskID})
		if dump, ok := pgDump(t, db); ok {
			holdsNone(t, "a pg_dump", dump, texts)
		}
	}

	// The verbs open it with its key; the export is the plain log.
	atRestMust(t, getenv, "verify", "--db", db)
	if out := atRestMust(t, getenv, "search", "--db", db, needle); !strings.Contains(out, "e07") {
		t.Errorf("memoryd search on the encrypted database: %s", out)
	}
	export := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(export, []byte(atRestMust(t, getenv, "export", "--db", db)), 0o600); err != nil {
		t.Fatal(err)
	}
	holdsAll(t, "the export", fileBytes(t, export), texts)

	// Imported plain and encrypted: the same projections, the same answers.
	plainDB, sealedDB := filepath.Join(dir, "plain", "memory.db"), filepath.Join(dir, "sealed", "memory.db")
	if !isSQLite {
		plainDB, sealedDB = pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	}
	atRestMust(t, env(map[string]string{"HOME": t.TempDir()}), "import", "--db", plainDB, export)
	sealedVars := map[string]string{"HOME": dir, "MEMORYD_ENCRYPT": "1"}
	if !isSQLite {
		sealedVars["MEMORYD_ENCRYPTION_KEY"] = vars["MEMORYD_ENCRYPTION_KEY"]
	}
	atRestMust(t, env(sealedVars), "import", "--db", sealedDB, export)
	replayedDB := filepath.Join(dir, "replayed", "memory.db")
	if !isSQLite {
		replayedDB = pgtest.NewDatabase(t)
	}
	atRestMust(t, env(sealedVars), "replay", export, "--db", replayedDB)
	if isSQLite {
		holdsNone(t, "an encrypted import", fileBytes(t, sealedDB), texts)
		holdsNone(t, "an encrypted replay", fileBytes(t, replayedDB), texts)
	}
	plainDigest := atRestDigest(t, plainDB, nil)
	for _, d := range []string{db, sealedDB, replayedDB} {
		sealer, _, err := atRestKey(env(sealedVars), d, false)
		if err != nil || sealer == nil {
			t.Fatalf("the key of %s: %v", d, err)
		}
		if got := atRestDigest(t, d, sealer); !reflect.DeepEqual(got, plainDigest) {
			t.Errorf("the projections of %s differ from a plain import of its export:\n%v\n%v", d, got, plainDigest)
		}
	}

	// verify --erased searches the sealed texts opened: before the
	// erasure it finds them, after it none.
	sealedEnv := env(sealedVars)
	out, _, err := atRestRun(sealedEnv, "verify", "--db", sealedDB, "--erased", att.TaskID, "--grep", entryText)
	if err == nil || !strings.Contains(out, `"history_chunks (sealed)"`) || !strings.Contains(out, `"events (sealed)"`) {
		t.Errorf("verify --erased --grep before the erasure: %v\n%s", err, out)
	}
	atRestMust(t, sealedEnv, "forget", "--db", sealedDB, att.TaskID)
	atRestMust(t, sealedEnv, "verify", "--db", sealedDB, "--erased", att.TaskID, "--grep", entryText, "--grep", noteText)

	// Without its key, or with another, every verb refuses it.
	noKey := env(map[string]string{"HOME": t.TempDir()})
	if isSQLite {
		keyFile := filepath.Join(filepath.Dir(file), "encryption.key")
		if err := os.Rename(keyFile, keyFile+".away"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(keyFile+".away", keyFile)
		noKey = getenv
	}
	for _, args := range [][]string{{"tasks", "--db", db}, {"export", "--db", db}, {"verify", "--db", db}} {
		_, _, err := atRestRun(noKey, args...)
		if !errors.Is(err, eventlog.ErrKeyNeeded) || !strings.Contains(err.Error(), "MEMORYD_ENCRYPTION_KEY") {
			t.Errorf("memoryd %s without the key: %v", args[0], err)
		}
	}
	wrong := env(map[string]string{"HOME": dir, "MEMORYD_ENCRYPTION_KEY": strings.Repeat("77", atrest.KeySize)})
	if _, _, err := atRestRun(wrong, "tasks", "--db", db); !errors.Is(err, eventlog.ErrWrongKey) {
		t.Errorf("memoryd tasks with another key: %v", err)
	}
	bad := env(map[string]string{"HOME": dir, "MEMORYD_ENCRYPTION_KEY": "not a key"})
	if _, _, err := atRestRun(bad, "tasks", "--db", db); !errors.Is(err, atrest.ErrKey) {
		t.Errorf("memoryd tasks with a malformed key: %v", err)
	}

	// serve --encrypt on a database of plain events: refused, no key left.
	plainVars := map[string]string{"HOME": t.TempDir()}
	var plainKey string
	if isSQLite {
		plainKey = filepath.Join(filepath.Dir(plainDB), "encryption.key")
	} else {
		plainKey = filepath.Join(plainVars["HOME"], ".local", "share", "memoryd", "encryption.key")
	}
	_, stderr, err := atRestRun(env(plainVars), "serve", "--addr", "127.0.0.1:0", "--db", plainDB, "--encrypt")
	if !errors.Is(err, eventlog.ErrNotEncrypted) {
		t.Errorf("serve --encrypt on a database of plain events: %v (%s)", err, stderr)
	}
	if _, err := os.Stat(plainKey); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused serve --encrypt left a key file: %v", err)
	}
}

// atRestDigest is projections.Digest of the database db, opened with
// sealer's key (nil: a plain database).
func atRestDigest(t *testing.T, db string, sealer *atrest.Sealer) []projections.TableDigest {
	t.Helper()
	svc, err := memory.Open(context.Background(), db, memory.OpenOptions{Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if (svc.Store().Sealer() != nil) != (sealer != nil) {
		t.Fatalf("%s: encrypted %v, want %v", db, svc.Store().Sealer() != nil, sealer != nil)
	}
	d, err := projections.Digest(context.Background(), svc.Store())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
