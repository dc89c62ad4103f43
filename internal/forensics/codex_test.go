package forensics_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/codex"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

// codexRollout copies the captured rollout name into the day folder of
// sessions as Codex names it, rollout-<time>-<thread id>.jsonl, and
// returns its path.
func codexRollout(t *testing.T, sessions, day, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "codex", "rollouts", name))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	m, ok := codex.Meta([]byte(first))
	if !ok {
		t.Fatalf("%s does not start with a session_meta", name)
	}
	path := filepath.Join(sessions, day, "rollout-2026-12-07T04-45-00-"+m.ID+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportCodexSessionAfterHooks: a rollout synced piece by piece, as
// the hooks sync it under codex/<session id> while it grows, then
// imported: the import finds the same task and adds nothing, not even an
// event; a sub-agent's rollout, imported before its session's, imports
// the session first and joins its task as codex/<session id>/<thread id>.
func TestImportCodexSessionAfterHooks(t *testing.T) {
	ctx := context.Background()
	svc := memorytest.Open(t, memory.OpenOptions{})
	sessions := filepath.Join(t.TempDir(), "sessions")
	path := codexRollout(t, sessions, filepath.Join("2026", "12", "07"), "rollout-run07-autocompact.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := forensics.CodexMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	req := memory.AttachRequest{SessionKey: "codex/" + meta.SessionID, SessionID: meta.SessionID, SessionFile: path}
	var cur codex.Cursor
	for _, size := range []int64{int64(len(b) / 3), int64(2 * len(b) / 3), int64(len(b))} {
		batch, err := codex.Read(strings.NewReader(string(b)), size, cur)
		if err != nil {
			t.Fatal(err)
		}
		entries := make([]json.RawMessage, len(batch.Entries))
		for i, e := range batch.Entries {
			entries[i] = e.Raw
		}
		if _, err := svc.ImportSession(ctx, req, entries, batch.Branch, nil); err != nil {
			t.Fatal(err)
		}
		cur = batch.Cursor
	}
	before, err := svc.LastPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := forensics.ImportCodexSession(ctx, svc, path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.Stored != 0 || res.SessionKey != req.SessionKey || res.WindowID != "w2" || res.Entries != 32 {
		t.Errorf("imported after the hooks: %+v", res)
	}
	if after, err := svc.LastPosition(ctx); err != nil || after != before {
		t.Errorf("the import after the hooks appended events: position %d → %d (%v)", before, after, err)
	}

	// A sub-agent's rollout on a day before its session's: the session is
	// found in the sessions folder and imported first.
	sub := codexRollout(t, sessions, filepath.Join("2026", "12", "06"), "rollout-run19-subagent.jsonl")
	parent := codexRollout(t, sessions, filepath.Join("2026", "12", "08"), "rollout-run19-parent.jsonl")
	if _, err := forensics.ImportCodexSession(ctx, svc, sub, nil, nil); !errors.Is(err, forensics.ErrSessionNotImported) {
		t.Fatalf("a sub-agent without its session and no finder: %v", err)
	}
	res, err = forensics.ImportCodexSession(ctx, svc, sub, forensics.RolloutFinder(sub), nil)
	if err != nil {
		t.Fatal(err)
	}
	const sid, tid = "01a24edd-4fc3-7022-9ba0-afb29b641f47", "01a24edd-6186-7fb1-bec6-46ae9610f858"
	if res.Session == nil || res.Session.SessionFile != parent || res.Session.SessionKey != "codex/"+sid || res.Session.Agent != "/root" {
		t.Fatalf("the sub-agent's session, imported first: %+v", res.Session)
	}
	if res.SessionKey != "codex/"+sid+"/"+tid || res.SessionID != sid || res.ParentThreadID != sid || res.TaskID != res.Session.TaskID ||
		res.Agent != "/root/"+memory.AutoAgentName(res.SessionKey) || res.Stored != 20 {
		t.Errorf("the sub-agent: %+v", res)
	}
	again, err := forensics.ImportCodexSession(ctx, svc, sub, forensics.RolloutFinder(sub), nil)
	if err != nil || again.Session != nil || again.Stored != 0 || again.Agent != res.Agent {
		t.Errorf("the sub-agent again: %v %+v", err, again)
	}
}

// TestCodexSessionKey: a session's own thread is keyed by its session id,
// a sub-agent's (parent_thread_id, or only source.subagent, or no
// session_id) by its session's and its own.
func TestCodexSessionKey(t *testing.T) {
	for _, c := range []struct {
		payload, key string
		sub          bool
	}{
		{`{"id":"r","session_id":"r"}`, "codex/r", false},
		{`{"id":"r"}`, "codex/r", false},
		{`{"id":"c","session_id":"r","parent_thread_id":"r"}`, "codex/r/c", true},
		{`{"id":"c","session_id":"r","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}}`, "codex/r/c", true},
		{`{"id":"c","parent_thread_id":"r"}`, "codex/r/c", true},
	} {
		m, ok := codex.Meta([]byte(`{"type":"session_meta","payload":` + c.payload + `}`))
		if !ok {
			t.Fatalf("%s: not read", c.payload)
		}
		if key, _, sub := forensics.CodexSessionKey(m); key != c.key || sub != c.sub {
			t.Errorf("%s: %s sub-agent %v, want %s %v", c.payload, key, sub, c.key, c.sub)
		}
	}
	for name, want := range map[string]string{
		"rollout-2026-12-07T04-45-00-01a24edd-4fc3-7022-9ba0-afb29b641f47.jsonl": "01a24edd-4fc3-7022-9ba0-afb29b641f47",
		"rollout-01a24edd-4fc3-7022-9ba0-afb29b641f47.jsonl":                     "",
		"session-2026-12-07T04-45-00-01a24edd-4fc3-7022-9ba0-afb29b641f47.jsonl": "",
	} {
		if got := forensics.CodexThreadID(name); got != want {
			t.Errorf("CodexThreadID(%s) = %q, want %q", name, got, want)
		}
	}
}

// TestImportCodexSessionRefusals: a file that is not a rollout is
// refused before anything is stored, and an entry the service refuses
// stores nothing of the file and names its line.
func TestImportCodexSessionRefusals(t *testing.T) {
	ctx := context.Background()
	svc := memorytest.Open(t, memory.OpenOptions{})
	dir := t.TempDir()
	path := codexRollout(t, dir, "", "rollout-run03-mcp-call.jsonl")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dup := strings.Replace(string(text), `"arguments":"{\"text\":\"remember X\"}"`, `"arguments":"{\"text\":\"remember X\",\"text\":\"Y\"}"`, 1)
	if err := os.WriteFile(path, []byte("\n"+dup), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := forensics.ImportCodexSession(ctx, svc, path, nil, nil); err == nil ||
		!strings.Contains(err.Error(), path+": line 15: ") || !strings.Contains(err.Error(), `the key "text" twice`) {
		t.Errorf("a refused entry: %v, want line 15 named", err)
	}
	if n, err := svc.LastPosition(ctx); err != nil || n != 0 {
		t.Errorf("the refused import stored %d events (%v)", n, err)
	}
	pi := filepath.Join(dir, "pi.jsonl")
	if err := os.WriteFile(pi, []byte(`{"type":"session","version":3,"id":"s"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := forensics.ImportCodexSession(ctx, svc, pi, nil, nil); !errors.Is(err, forensics.ErrNotARollout) ||
		!strings.Contains(err.Error(), "line 1 is not a session_meta record") {
		t.Errorf("a Pi session file: %v", err)
	}
}
