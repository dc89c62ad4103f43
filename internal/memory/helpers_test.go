package memory

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/atrest/atresttest"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/internal/tools"
)

// testClock is a deterministic clock: every reading advances it by 1 ms.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time {
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// mustOpenService opens a new database in t.TempDir() the way the server
// does (Open), with a deterministic clock, and returns its Service.
func mustOpenService(tb testing.TB) *Service {
	tb.Helper()
	return mustOpenAt(tb, pgtest.Or(tb, filepath.Join(tb.TempDir(), "memory.db")), testOptions())
}

// mustOpenServiceWith is mustOpenService with opts (test hooks included).
func mustOpenServiceWith(tb testing.TB, opts serviceOptions) *Service {
	tb.Helper()
	return openWith(tb, pgtest.Or(tb, filepath.Join(tb.TempDir(), "memory.db")), opts)
}

// mustOpenSQLite and mustOpenSQLiteWith are mustOpenService and
// mustOpenServiceWith on SQLite whatever MEMORYD_TEST_ENGINE says: for the
// tests of what only SQLite has (the note cache and its commit stamp,
// pragmas, the database file).
func mustOpenSQLite(tb testing.TB) *Service {
	tb.Helper()
	return mustOpenAt(tb, filepath.Join(tb.TempDir(), "memory.db"), testOptions())
}

func mustOpenSQLiteWith(tb testing.TB, opts serviceOptions) *Service {
	tb.Helper()
	return openWith(tb, filepath.Join(tb.TempDir(), "memory.db"), opts)
}

func openWith(tb testing.TB, path string, opts serviceOptions) *Service {
	tb.Helper()
	o := testOptions()
	o.AuditCalls, o.Logger = opts.AuditCalls, opts.Logger
	o.afterCachedRead, o.syncToWriter = opts.afterCachedRead, opts.syncToWriter
	return mustOpenAt(tb, path, o)
}

// testOptions are the OpenOptions of mustOpenService: a new deterministic
// clock.
func testOptions() OpenOptions {
	clock := &testClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	return OpenOptions{Now: clock.now}
}

// mustOpenAt opens the database at path through Open with opts; the
// Service is closed when the test ends. (memory's own tests cannot import
// internal/memorytest, which imports memory.)
func mustOpenAt(tb testing.TB, path string, opts OpenOptions) *Service {
	tb.Helper()
	s, err := Open(context.Background(), path, atRest(tb, opts))
	if err != nil {
		tb.Fatalf("open %s: %v", filepath.Base(path), err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// atRest is opts with the test key of a database encrypted at rest when
// the tests run on them (atresttest), unless opts gives a key.
func atRest(tb testing.TB, opts OpenOptions) OpenOptions {
	if opts.Sealer == nil && atresttest.On(tb) {
		opts.Sealer, opts.Encrypt = atresttest.Sealer(tb), true
	}
	return opts
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

// call runs a tool with arguments given as a JSON string. In a test (not
// a benchmark), a result's details must match the tool's result schema.
func call(tb testing.TB, s *Service, cc CallContext, tool, args string) (ToolResult, error) {
	tb.Helper()
	res, err := s.CallTool(context.Background(), tool, cc, json.RawMessage(args), "")
	if _, test := tb.(*testing.T); test && err == nil {
		checkResultSchema(tb, tool, res)
	}
	return res, err
}

// checkResultSchema fails the test when res's details do not match the
// result schema of tool in specs.json.
func checkResultSchema(tb testing.TB, tool string, res ToolResult) {
	tb.Helper()
	b, err := json.Marshal(res.Details)
	if err != nil {
		tb.Fatal(err)
	}
	if err := tools.ValidateResult(tool, b); err != nil {
		tb.Fatalf("%s: details %s do not match the result schema: %v", tool, b, err)
	}
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
