package forensics_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

// claudeCodeSession copies the captured session with a sub-agent into dir
// as Claude Code keeps it, and returns the paths of its transcript and of
// its sub-agent's.
func claudeCodeSession(t *testing.T, dir string) (session, sub string) {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "claude-code", "transcripts", "with-subagent")
	session = filepath.Join(dir, "0d4eecf6-23f6-4ef1-b0a1-05fda90e0bbf.jsonl")
	sub = filepath.Join(dir, "0d4eecf6-23f6-4ef1-b0a1-05fda90e0bbf", "subagents", "agent-a02dee9184452a481.jsonl")
	for from, to := range map[string]string{filepath.Join(src, "session.jsonl"): session,
		filepath.Join(src, "subagents", "agent-a02dee9184452a481.jsonl"): sub} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return session, sub
}

// edit replaces old by new in the file at path, once.
func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestImportClaudeCodeSessionIsWhole: a Claude Code session whose
// sub-agent's transcript has a refused entry is not imported at all, and
// the error names the sub-agent's file; an entry refused after the
// session's own file was written in the transaction leaves the log as it
// was too. A whole import, again, stores nothing.
func TestImportClaudeCodeSessionIsWhole(t *testing.T) {
	ctx := context.Background()
	svc := memorytest.Open(t, memory.OpenOptions{})
	position := func() int64 {
		t.Helper()
		p, err := svc.LastPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	session, sub := claudeCodeSession(t, t.TempDir())
	edit(t, sub, `"input":{"text":"from subagent"}`, `"input":{"text":"from subagent","text":"twice"}`)
	_, err := forensics.ImportClaudeCodeSession(ctx, svc, session, nil)
	if !errors.Is(err, memory.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), sub+": ") || !strings.Contains(err.Error(), `the key "text" twice`) {
		t.Fatalf("ImportClaudeCodeSession: %v; want the sub-agent's file named and its duplicate key", err)
	}
	if p := position(); p != 0 {
		t.Errorf("the refused import stored %d events", p)
	}
	if tasks, err := svc.Tasks(ctx, 0, 10); err != nil || len(tasks.Tasks) != 0 {
		t.Errorf("tasks after the refused import: %v %+v, want none", err, tasks)
	}

	session, sub = claudeCodeSession(t, t.TempDir())
	res, err := forensics.ImportClaudeCodeSession(ctx, svc, session, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.SubAgents) != 1 || res.SubAgents[0].TaskID != res.TaskID || !strings.HasPrefix(res.SubAgents[0].Agent, "/root/") ||
		res.Stored == 0 || res.SubAgents[0].Stored == 0 || res.SessionKey != "claude-code/0d4eecf6-23f6-4ef1-b0a1-05fda90e0bbf" {
		t.Fatalf("the session with a sub-agent: %+v", res)
	}
	end := position()
	again, err := forensics.ImportClaudeCodeSession(ctx, svc, session, nil)
	if err != nil || again.Stored != 0 || again.SubAgents[0].Stored != 0 || again.TaskID != res.TaskID || position() != end {
		t.Fatalf("imported again: %v %+v, %d events after %d", err, again, position(), end)
	}

	// The session grows while the sub-agent's transcript says otherwise
	// of an entry already imported.
	b, err := os.ReadFile(session)
	if err != nil {
		t.Fatal(err)
	}
	var grown string // the last line with a uuid, as a new line
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, `"uuid":"`) {
			grown = strings.Replace(l, `"uuid":"`, `"uuid":"b`, 1)
		}
	}
	if err := os.WriteFile(session, []byte(string(b)+grown+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	edit(t, sub, `"from subagent"`, `"changed"`)
	_, err = forensics.ImportClaudeCodeSession(ctx, svc, session, nil)
	if !errors.Is(err, memory.ErrConflict) || !strings.HasPrefix(err.Error(), sub+": ") {
		t.Fatalf("a changed entry of the sub-agent: %v; want a conflict naming %s", err, sub)
	}
	if p := position(); p != end {
		t.Errorf("the refused import moved the log from %d to %d", end, p)
	}
}
