package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

// TestServeAndImportRedactAlike: serve (by default) and import-session
// store a secret as the same marker, keyed by the database's redaction key, so
// that a session synced by a hook and then imported stores nothing
// twice; the database's files hold no byte of the secret; --redact off
// keeps it.
func TestServeAndImportRedactAlike(t *testing.T) {
	const secret = "ghp_NLv6RhtTjKGHGlbgEyQeJJnKMmNlBD5s33vr"
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	getenv := env(map[string]string{"HOME": dir})
	s, client := servedAPI(t, db, getenv)
	var att memory.AttachResult
	if err := client.post(context.Background(), "/v1/sessions/attach", map[string]any{"session_key": "hooked", "session_id": "h"}, &att); err != nil {
		t.Fatal(err)
	}
	entry := `{"type":"message","id":"e1","parentId":null,"timestamp":"2026-12-07T10:00:00.000Z","message":{"role":"user","content":"token ` + secret + `"}}`
	if err := client.post(context.Background(), "/v1/history/sync", map[string]any{"context": memory.CallContext{TaskID: att.TaskID, Agent: att.Agent},
		"entries": []json.RawMessage{json.RawMessage(entry)}, "branch": []string{"e1"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(dir, "s.jsonl")
	header := `{"type":"session","version":3,"id":"0f4b7c1e-2d9a-4e51-9a43-7d2c1b0e5f12","timestamp":"2026-12-07T10:00:00.000Z","cwd":"/home/dev/p"}`
	if err := os.WriteFile(session, []byte(header+"\n"+entry+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fxRunEnv := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := run(context.Background(), args, getenv, strings.NewReader(""), &out, &errb); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		return out.String()
	}
	fxRunEnv("import-session", "--db", db, session)
	found := fxRunEnv("search", "--db", db, "REDACTED:github_token")
	markers := regexp.MustCompile(`REDACTED:github_token:[0-9a-f]{8}`).FindAllString(found, -1)
	if len(markers) < 2 || markers[0] != markers[len(markers)-1] {
		t.Errorf("the markers of serve and import-session: %v in %s", markers, found)
	}
	for _, f := range []string{db, db + "-wal"} {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", filepath.Base(f))
		}
	}

	plain := filepath.Join(dir, "plain.db")
	off := env(map[string]string{"HOME": dir, "MEMORYD_REDACT": "off"})
	if err := run(context.Background(), []string{"import-session", "--db", plain, session}, off, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"search", "--db", plain, secret}, off, strings.NewReader(""), &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Matches []any `json:"matches"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Matches) == 0 {
		t.Errorf("with MEMORYD_REDACT=off the secret is kept: %v %s", err, out.String())
	}
}
