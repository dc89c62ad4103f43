package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/internal/redact"
)

// TestRedactionBeforeAppend: with a Redactor, a secret in a synced entry,
// in an imported session and in a note's text is stored as its marker:
// no event holds it, the history and the note show the marker, and the
// same entry synced again is unchanged, not a conflict. On SQLite, the
// database file and its WAL hold no byte of it either.
func TestRedactionBeforeAppend(t *testing.T) {
	const token = "ghp_NLv6RhtTjKGHGlbgEyQeJJnKMmNlBD5s33vr"
	const aws = "AKIAIOSFODNN7REDACT1"
	red, err := redact.New(redact.Config{DigestKey: []byte("a test key")})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := pgtest.Or(t, filepath.Join(dir, "memory.db"))
	opts := testOptions()
	opts.Redactor = red
	s := mustOpenAt(t, db, opts)
	ctx := context.Background()
	cc := mustAttach(t, s, "redact-session")
	entry := json.RawMessage(`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-07T10:00:00.000Z",` +
		`"message":{"role":"user","content":"deploy with GITHUB_TOKEN=` + token + ` now"}}`)
	branch := []string{"u1"}
	for range 2 { // the second sync of the same entry is no conflict
		if _, err := s.Sync(ctx, SyncRequest{Context: cc, Entries: []json.RawMessage{entry}, Branch: &branch}, ""); err != nil {
			t.Fatal(err)
		}
	}
	mustCall(t, s, CallContext{TaskID: cc.TaskID, Agent: cc.Agent, CallID: "w1"}, "notes_write_file",
		`{"path":"keys.md","text":"aws key `+aws+`"}`)
	if _, err := s.ImportSession(ctx, AttachRequest{SessionKey: "redact-import"},
		[]json.RawMessage{json.RawMessage(strings.Replace(string(entry), "u1", "i1", 1))}, []string{"i1"}, nil); err != nil {
		t.Fatal(err)
	}

	res := mustCall(t, s, CallContext{TaskID: cc.TaskID, Agent: cc.Agent, CallID: "r1"}, "history_search_contents", `{"query":"REDACTED:github_token"}`)
	if text := res.Content[0].Text; !strings.Contains(text, "u1") {
		t.Errorf("the marker is not in the history: %s", text)
	}
	note := mustCall(t, s, CallContext{TaskID: cc.TaskID, Agent: cc.Agent, CallID: "r2"}, "notes_read_file", `{"path":"keys.md"}`)
	if text := note.Content[0].Text; strings.Contains(text, aws) || !strings.Contains(text, "[REDACTED:aws_access_key_id:") {
		t.Errorf("the note: %s", text)
	}
	err = s.Store().Each(ctx, eventlog.Filter{}, func(ev events.Event) error {
		if bytes.Contains(ev.Data, []byte(token)) || bytes.Contains(ev.Data, []byte(aws)) {
			t.Errorf("event %d (%s) holds a secret: %s", ev.Position, ev.Type, ev.Data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if path, ok := ParseLocation(db).File(); ok {
		for _, f := range []string{path, path + "-wal"} {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(token)) || bytes.Contains(b, []byte(aws)) {
				t.Errorf("%s holds a secret", filepath.Base(f))
			}
		}
	}
}

// TestRedactionOfEntriesStoredBefore: an entry stored before redaction was
// on (an upgrade) and sent again after is the same entry, not a conflict,
// in a sync and in an import; the stored bytes stay as they were.
func TestRedactionOfEntriesStoredBefore(t *testing.T) {
	const token = "ghp_NLv6RhtTjKGHGlbgEyQeJJnKMmNlBD5s33vr"
	db := pgtest.Or(t, filepath.Join(t.TempDir(), "memory.db"))
	ctx := context.Background()
	entry := json.RawMessage(`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-07T10:00:00.000Z",` +
		`"message":{"role":"user","content":"GITHUB_TOKEN=` + token + `"}}`)
	branch := []string{"u1"}
	before := mustOpenAt(t, db, testOptions())
	cc := mustAttach(t, before, "stored-before")
	if _, err := before.Sync(ctx, SyncRequest{Context: cc, Entries: []json.RawMessage{entry}, Branch: &branch}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := before.ImportSession(ctx, AttachRequest{SessionKey: "imported-before"}, []json.RawMessage{entry}, branch, nil); err != nil {
		t.Fatal(err)
	}
	before.Close()

	red, err := redact.New(redact.Config{})
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.Redactor = red
	after := mustOpenAt(t, db, opts)
	res, err := after.Sync(ctx, SyncRequest{Context: cc, Entries: []json.RawMessage{entry}, Branch: &branch}, "")
	if err != nil || res.Stored != 0 {
		t.Fatalf("the entry sent again after redaction was turned on: %+v, %v", res, err)
	}
	imp, err := after.ImportSession(ctx, AttachRequest{SessionKey: "imported-before"}, []json.RawMessage{entry}, branch, nil)
	if err != nil || imp.Stored != 0 {
		t.Fatalf("the session imported again: %+v, %v", imp, err)
	}
	// A different entry under a stored id is still a conflict.
	other := json.RawMessage(strings.Replace(string(entry), "GITHUB_TOKEN", "ANOTHER", 1))
	if _, err := after.Sync(ctx, SyncRequest{Context: cc, Entries: []json.RawMessage{other}, Branch: &branch}, ""); err == nil {
		t.Error("a changed entry under a stored id was accepted")
	}
}
