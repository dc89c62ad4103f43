package memory

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
)

// testClock is a deterministic clock: every reading advances it by 1 ms.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time {
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// mustOpenService opens a migrated database file in t.TempDir() and
// returns a Service over it.
func mustOpenService(tb testing.TB) *Service {
	tb.Helper()
	return mustOpenServiceWith(tb, Options{})
}

// mustOpenServiceWith is mustOpenService with opts (test hooks included).
func mustOpenServiceWith(tb testing.TB, opts Options) *Service {
	tb.Helper()
	clock := &testClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	store, err := eventlog.Open(context.Background(), filepath.Join(tb.TempDir(), "memory.db"),
		eventlog.Options{Apply: projections.Apply, Now: clock.now})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { store.Close() })
	return NewWithOptions(store, opts)
}

// mustAttach attaches a new root session and returns its call context.
func mustAttach(tb testing.TB, s *Service, sessionKey string) CallContext {
	tb.Helper()
	res, err := s.Attach(context.Background(), AttachRequest{SessionKey: sessionKey}, "")
	if err != nil {
		tb.Fatalf("attach %s: %v", sessionKey, err)
	}
	return CallContext{TaskID: res.TaskID, Agent: res.Agent}
}

// mustAttachChild attaches a child session to task under /root.
func mustAttachChild(tb testing.TB, s *Service, taskID, sessionKey, name string) CallContext {
	tb.Helper()
	res, err := s.Attach(context.Background(), AttachRequest{SessionKey: sessionKey,
		Task: &TaskRef{TaskID: taskID, ParentAgent: "/root", AgentName: name}}, "")
	if err != nil {
		tb.Fatalf("attach child %s: %v", sessionKey, err)
	}
	return CallContext{TaskID: res.TaskID, Agent: res.Agent}
}

// call runs a tool with arguments given as a JSON string.
func call(tb testing.TB, s *Service, cc CallContext, tool, args string) (ToolResult, error) {
	tb.Helper()
	return s.CallTool(context.Background(), tool, cc, json.RawMessage(args), "")
}

// mustCall runs a tool and fails the test on error.
func mustCall(tb testing.TB, s *Service, cc CallContext, tool, args string) ToolResult {
	tb.Helper()
	res, err := call(tb, s, cc, tool, args)
	if err != nil {
		tb.Fatalf("%s %s: %v", tool, args, err)
	}
	return res
}

// detailsMap returns a result's details as decoded JSON.
func detailsMap(tb testing.TB, res ToolResult) map[string]any {
	tb.Helper()
	b, err := json.Marshal(res.Details)
	if err != nil {
		tb.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	return m
}
