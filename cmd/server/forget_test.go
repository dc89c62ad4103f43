package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// plantedTask is a task whose notes, history, audit records and session
// hold texts that an erasure must take away.
type plantedTask struct {
	id    string
	texts []string // the secret first, then the task's other texts
	// rewrite rewrites the large note without the secret, which frees
	// the pages that held it.
	rewrite func()
}

// plantTask makes a task under session key key whose content holds
// secret: a note written, appended to and rewritten; a large note (over a
// page, so in overflow pages), which rewrite rewrites; a child agent's
// note; the history of both agents; and an audited search
// for the secret, whose record keeps it as an argument.
func plantTask(t *testing.T, svc *memory.Service, key, secret string) plantedTask {
	t.Helper()
	ctx := context.Background()
	p := plantedTask{texts: []string{secret}}
	other := func(s string) string { p.texts = append(p.texts, s); return s }
	file := other("/home/someone/projects/" + key + "/session.jsonl")
	root, err := svc.Attach(ctx, memory.AttachRequest{SessionKey: other("session-key-" + key), SessionID: other("session-id-" + key), SessionFile: file}, "")
	if err != nil {
		t.Fatal(err)
	}
	p.id = root.TaskID
	cc := memory.CallContext{TaskID: root.TaskID, Agent: root.Agent}
	call := func(cc memory.CallContext, tool string, args map[string]any) {
		t.Helper()
		cc.CallID = fmt.Sprintf("toolu_%s_%d", key, len(p.texts)+len(args)+int(svcCalls.Add(1)))
		b, _ := json.Marshal(args)
		if _, err := svc.CallTool(ctx, tool, cc, b, ""); err != nil {
			t.Fatalf("%s %s: %v", tool, b, err)
		}
	}
	call(cc, "notes_write_file", map[string]any{"path": "plan.md", "text": "goal: " + secret + "\n" + other("the plan of "+key) + "\n"})
	call(cc, "notes_append_to_file", map[string]any{"path": "plan.md", "text": "again " + secret + "\n"})
	call(cc, "notes_write_file", map[string]any{"path": "plan.md", "text": other("rewritten plan of "+key) + "\n"})
	big := strings.Repeat(other("a long line of "+key+"'s large note")+"\n", 600)
	call(cc, "notes_write_file", map[string]any{"path": "big.md", "text": big[:len(big)/2] + secret + big[len(big)/2:]})
	short := other("big note of " + key + " shortened")
	p.rewrite = func() { call(cc, "notes_write_file", map[string]any{"path": "big.md", "text": short}) }

	b := sessiongen.NewBuilder(7)
	b.UserText(other("please remember " + key))
	b.UserText("the password is " + secret)
	history := other("history of " + key)
	for i := range 40 { // enough entries to fill several pages of history
		b.UserText(fmt.Sprintf("%s message %d of %s", history, i, secret))
	}
	sess := b.Session()
	if _, err := svc.Sync(ctx, memory.SyncRequest{Context: cc, Entries: sess.Entries, Branch: &sess.Branch}, ""); err != nil {
		t.Fatal(err)
	}
	call(cc, "history_search_contents", map[string]any{"query": secret})

	child, err := svc.Attach(ctx, memory.AttachRequest{SessionKey: "child-" + key, Task: &memory.TaskRef{TaskID: root.TaskID, ParentAgent: "/root", AgentName: "helper"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	ccChild := memory.CallContext{TaskID: root.TaskID, Agent: child.Agent}
	call(ccChild, "notes_write_file", map[string]any{"path": "found.md", "text": "the child found " + secret})
	cb := sessiongen.NewBuilder(8)
	cb.UserText("child task: find " + secret)
	cs := cb.Session()
	if _, err := svc.Sync(ctx, memory.SyncRequest{Context: ccChild, Entries: cs.Entries, Branch: &cs.Branch}, ""); err != nil {
		t.Fatal(err)
	}
	return p
}

// svcCalls numbers the planted calls' ids.
var svcCalls atomic.Int64

// fileHolds returns the texts found in the bytes of a file, if it exists.
func fileHolds(t *testing.T, file string, texts []string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, s := range texts {
		if bytes.Contains(b, []byte(s)) {
			found = append(found, s)
		}
	}
	return found
}

// TestForgetTask: a task erased through a serving memoryd's route leaves
// none of its planted secret nor its other texts in the database file, its
// WAL, an export or a backup made afterwards; the log stays gapless and
// valid (verify clean, import accepts it), the other tasks' events are
// byte for byte the same, verify --erased is clean, and erasing it again
// or an unknown task is a clear 404 (exit 1 for the verb).
func TestForgetTask(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	svc, err := memory.Open(context.Background(), db, memory.OpenOptions{AuditCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	keep1 := plantTask(t, svc, "keep-one", "KEEP-ONE-SECRET-6d1f")
	victim := plantTask(t, svc, "victim", "VICTIM-SECRET-93ab7c")
	keep2 := plantTask(t, svc, "keep-two", "KEEP-TWO-SECRET-55e0")
	// Last, so that nothing reuses them: free pages that held the secret.
	keep1.rewrite()
	victim.rewrite()
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if found := fileHolds(t, db, victim.texts); len(found) != len(victim.texts) {
		t.Fatalf("planting: the database holds only %q of %q", found, victim.texts)
	}
	fxMust(t, "verify", "--db", db)
	before := fxLines(t, writeExport(t, dir, "before.jsonl", db))

	getenv := env(map[string]string{"HOME": dir})
	s := startServe(t, db, getenv)
	token, err := existingToken(getenv, db)
	if err != nil {
		t.Fatal(err)
	}
	var res memory.Erasure
	if code := s.call(t, token, http.MethodPost, "/v1/tasks/"+victim.id+"/forget", `{}`, &res); code != http.StatusOK {
		t.Fatalf("forget: %d", code)
	}
	if res.TaskID != victim.id || res.Position != int64(len(before))+1 || res.Events == 0 ||
		len(res.Agents) != 2 || res.Rows["notes"] != 3 || !res.Scrub.WALTruncated || !res.Scrub.SecureDelete {
		t.Errorf("forget answered %+v", res)
	}
	// While memoryd serves, with its WAL open: nothing of the task in the
	// files, in an export, in a backup.
	for _, f := range []string{db, db + "-wal"} {
		if found := fileHolds(t, f, victim.texts); len(found) > 0 {
			t.Errorf("%s holds %q after the erasure", f, found)
		}
	}
	if found := fileHolds(t, db, keep1.texts); len(found) != len(keep1.texts) {
		t.Errorf("another task's texts are gone from the file: only %q", found)
	}
	after := fxLines(t, writeExport(t, dir, "after.jsonl", db))
	backup := filepath.Join(dir, "backup.db")
	fxMust(t, "backup", "--db", db, backup)
	for _, f := range []string{filepath.Join(dir, "after.jsonl"), backup} {
		if found := fileHolds(t, f, victim.texts); len(found) > 0 {
			t.Errorf("%s holds %q", f, found)
		}
	}
	// A second erasure, and one of an unknown task: 404.
	client := apiClient{addr: strings.TrimPrefix(s.url, "http://"), token: token, http: http.DefaultClient}
	var refused *apiError
	err = client.post(context.Background(), "/v1/tasks/"+victim.id+"/forget", map[string]any{}, nil)
	if !errors.As(err, &refused) || refused.status != http.StatusNotFound || refused.code != memory.CodeNotFound ||
		!strings.Contains(refused.message, fmt.Sprintf("task %s was erased already, at position %d", victim.id, res.Position)) {
		t.Errorf("forget again: %v", err)
	}
	err = client.post(context.Background(), "/v1/tasks/no-such-task/forget", map[string]any{}, nil)
	if !errors.As(err, &refused) || refused.status != http.StatusNotFound || refused.message != "no task no-such-task" {
		t.Errorf("forget an unknown task: %v", err)
	}
	if code := s.call(t, "", http.MethodPost, "/v1/tasks/"+keep1.id+"/forget", `{}`, nil); code != http.StatusUnauthorized {
		t.Errorf("forget without the token: %d", code)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}

	// The log: one event more, gapless, the task's events tombstones in
	// place, every other line byte for byte as before.
	if len(after) != len(before)+1 {
		t.Fatalf("%d events after, %d before", len(after), len(before))
	}
	for i, line := range after {
		ev, err := events.DecodeEnvelope([]byte(line))
		if err != nil || ev.Position != int64(i+1) {
			t.Fatalf("line %d: position %d, %v", i+1, ev.Position, err)
		}
		switch {
		case i == len(before):
			if ev.Type != events.TypeTaskErased || ev.TaskID() != victim.id {
				t.Errorf("the last event: %s", line)
			}
		case ev.TaskID() == victim.id:
			old, _ := events.DecodeEnvelope([]byte(before[i]))
			if ev.Type != events.TypeEventErased || string(ev.Data) != string(events.Tombstone(res.Position)) || ev.RequestID != "" ||
				ev.ID != old.ID || ev.Stream != old.Stream || ev.StreamVersion != old.StreamVersion || ev.RecordedAt != old.RecordedAt {
				t.Errorf("a tombstone %s of %s", line, before[i])
			}
		case line != before[i]:
			t.Errorf("another task's event changed:\n%s\n%s", before[i], line)
		}
	}
	fxMust(t, "verify", "--db", db)
	grep := []string{"verify", "--db", db, "--erased", victim.id}
	for _, s := range victim.texts {
		grep = append(grep, "--grep", s)
	}
	var rep map[string]any
	if err := json.Unmarshal([]byte(fxMust(t, grep...)), &rep); err != nil || rep["clean"] != true {
		t.Errorf("verify --erased --grep: %v %v", rep, err)
	}
	if err := json.Unmarshal([]byte(fxMust(t, "verify", "--db", db, "--erased", victim.id)), &rep); err != nil || rep["clean"] != true {
		t.Errorf("verify --erased: %v %v", rep, err)
	}
	// Another task is not erased, and its secret is there: exit 1.
	if out, _, err := fxRun(t, nil, "verify", "--db", db, "--erased", keep2.id, "--grep", keep2.texts[0]); err == nil ||
		!strings.Contains(err.Error(), "was not erased") || !strings.Contains(out, `"clean": false`) {
		t.Errorf("verify --erased of a task that is not: %v\n%s", err, out)
	}
	// The log after imports and replays as any log does.
	fxMust(t, "import", "--db", filepath.Join(dir, "imported.db"), filepath.Join(dir, "after.jsonl"))
	fxMust(t, "verify", "--db", filepath.Join(dir, "imported.db"))
	// The verb: again, an unknown task.
	if _, _, err := fxRun(t, nil, "forget", victim.id, "--db", db); err == nil || !strings.Contains(err.Error(), "erased already") {
		t.Errorf("forget again: %v", err)
	}
	if _, _, err := fxRun(t, nil, "forget", "nope", "--db", db); err == nil || fxExit(err) != 1 || !strings.Contains(err.Error(), "no task nope") {
		t.Errorf("forget an unknown task: %v", err)
	}
}

// writeExport writes memoryd export of db to the file name in dir.
func writeExport(t *testing.T, dir, name, db string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(fxMust(t, "export", "--db", db)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestForgetOlderDatabase: a database file written without secure_delete,
// as an older memoryd wrote it, may keep inside its pages what its deletes
// freed. Its first erasure rebuilds it (VACUUM), as forget --vacuum does,
// and then neither the file nor its WAL holds anything of the task.
func TestForgetOlderDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "old.db")
	svc, err := memory.Open(context.Background(), db, memory.OpenOptions{AuditCalls: true, WriterPragmas: []string{"secure_delete(OFF)"}})
	if err != nil {
		t.Fatal(err)
	}
	keep := plantTask(t, svc, "keep", "KEEP-SECRET-0c4e")
	victim := plantTask(t, svc, "victim", "VICTIM-SECRET-a81f")
	keep.rewrite()
	victim.rewrite()
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	setUserVersion := func(file string, v int) {
		t.Helper()
		raw, err := sql.Open("sqlite", eventlog.FileURI(file, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
			t.Fatal(err)
		}
	}
	setUserVersion(db, 0) // as an older memoryd left it
	grep := []string{"verify", "--erased", victim.id}
	for _, s := range victim.texts {
		grep = append(grep, "--grep", s)
	}
	marked, asked := filepath.Join(dir, "marked.db"), filepath.Join(dir, "asked.db")
	for _, f := range []string{marked, asked} {
		if err := copyPrivate(db, f); err != nil {
			t.Fatal(err)
		}
		setUserVersion(f, 1) // marked as overwriting, though it was not
	}

	for _, tc := range []struct {
		db    string
		flags []string
		why   string // VacuumReason, "" for none
	}{
		{db, nil, "did not overwrite"},
		{asked, []string{"--vacuum"}, "asked for"},
		{marked, nil, ""},
	} {
		var res memory.Erasure
		if err := json.Unmarshal([]byte(fxMust(t, append([]string{"forget", victim.id, "--db", tc.db}, tc.flags...)...)), &res); err != nil {
			t.Fatal(err)
		}
		out, _, err := fxRun(t, nil, append(grep, "--db", tc.db)...)
		if tc.why == "" {
			// What such a file keeps depends on how its pages were filled.
			t.Logf("no VACUUM: %+v; verify --erased: %v", res.Scrub, err)
			continue
		}
		if !strings.Contains(res.Scrub.VacuumReason, tc.why) || len(res.Scrub.Vacuumed) != 1 || !res.Scrub.WALTruncated {
			t.Errorf("%s: forget %v: %+v", tc.db, tc.flags, res.Scrub)
		}
		if err != nil {
			t.Errorf("%s: after forget %v, verify --erased: %v\n%s", tc.db, tc.flags, err, out)
		}
		for _, f := range []string{tc.db, tc.db + "-wal"} {
			if found := fileHolds(t, f, victim.texts); len(found) > 0 {
				t.Errorf("%s holds %q after forget %v", f, found, tc.flags)
			}
		}
		if found := fileHolds(t, tc.db, keep.texts[:1]); len(found) != 1 {
			t.Errorf("%s: the other task's secret is gone", tc.db)
		}
		fxMust(t, "verify", "--db", tc.db)
	}
	// Rebuilt, the file is marked: the next erasure does not rebuild it.
	var res memory.Erasure
	if err := json.Unmarshal([]byte(fxMust(t, "forget", keep.id, "--db", db)), &res); err != nil || res.Scrub.VacuumReason != "" {
		t.Errorf("a second erasure: %+v %v", res.Scrub, err)
	}
}

// TestForgetPostgres: memoryd forget on a PostgreSQL database: the task's
// events are tombstones, its rows gone, the tables rewritten (VACUUM
// FULL), what PostgreSQL keeps itself said; verify and verify --erased
// --grep (its rows: memoryd cannot read the server's files) are clean,
// and an export holds nothing of the task.
func TestForgetPostgres(t *testing.T) {
	db := pgtest.NewDatabase(t)
	svc, err := memory.Open(context.Background(), db, memory.OpenOptions{AuditCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	keep := plantTask(t, svc, "keep", "KEEP-PG-SECRET-1b7a")
	victim := plantTask(t, svc, "victim", "VICTIM-PG-SECRET-e43d")
	victim.rewrite()
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	before := fxLines(t, writeExport(t, dir, "before.jsonl", db))
	var res memory.Erasure
	if err := json.Unmarshal([]byte(fxMust(t, "forget", victim.id, "--db", db)), &res); err != nil {
		t.Fatal(err)
	}
	if res.Scrub.Engine != eventlog.Postgres || !slices.Contains(res.Scrub.Vacuumed, "events") || !slices.Contains(res.Scrub.Vacuumed, "note_parts") ||
		len(res.Scrub.Left) == 0 || res.Position != int64(len(before))+1 {
		t.Errorf("forget: %+v", res)
	}
	fxMust(t, "verify", "--db", db)
	grep := []string{"verify", "--db", db, "--erased", victim.id}
	for _, s := range victim.texts {
		grep = append(grep, "--grep", s)
	}
	fxMust(t, grep...)
	after := writeExport(t, dir, "after.jsonl", db)
	if found := fileHolds(t, after, victim.texts); len(found) > 0 {
		t.Errorf("the export holds %q", found)
	}
	if found := fileHolds(t, after, keep.texts[:1]); len(found) != 1 {
		t.Error("the export lost the other task's secret")
	}
	if _, _, err := fxRun(t, nil, "forget", victim.id, "--db", db); err == nil || !strings.Contains(err.Error(), "erased already") {
		t.Errorf("forget again: %v", err)
	}
}
