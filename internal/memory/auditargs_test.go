package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// mustOpenAuditedService is mustOpenService with the read audit on;
// flush records what waits (the service stays usable).
func mustOpenAuditedService(tb testing.TB) (s *Service, flush func()) {
	tb.Helper()
	opts := testOptions()
	opts.AuditCalls = true
	s = mustOpenAt(tb, filepath.Join(tb.TempDir(), "memory.db"), opts)
	return s, func() {
		s.audit.close()
		s.audit = newAuditor(s.store, s.audit.log)
	}
}

// auditRecords returns the audited calls of tool, each with the
// audit.tool_called event that holds it.
func auditRecords(tb testing.TB, s *Service, tool string) ([]events.Event, []events.CallRecord) {
	tb.Helper()
	var evs []events.Event
	var recs []events.CallRecord
	err := s.store.Each(context.Background(), eventlog.Filter{Limit: 1000}, func(ev events.Event) error {
		if ev.Type != events.TypeToolCalled {
			return nil
		}
		var batch events.ToolCalled
		if err := json.Unmarshal(ev.Data, &batch); err != nil {
			return err
		}
		for _, rec := range batch.Calls {
			if rec.Tool == tool {
				evs, recs = append(evs, ev), append(recs, rec)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return evs, recs
}

// recordBytes returns the size of an audited call's record in its event.
func recordBytes(tb testing.TB, rec events.CallRecord) int {
	b, err := json.Marshal(rec)
	if err != nil {
		tb.Fatal(err)
	}
	return len(b)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestAuditOfARefusedAppendStoresNoBody: appends of 4 MB refused by a
// full note record audit events of well under 1 KB each: the path whole,
// the text as its size and digest.
func TestAuditOfARefusedAppendStoresNoBody(t *testing.T) {
	s, flush := mustOpenAuditedService(t)
	root := attachWithBudget(t, s, "refused", capBytes(10))
	mustCall(t, s, root, "notes_write_file", args("path", "a.md", "text", "0123456789"))
	text := strings.Repeat("x", 4_000_000)
	const appends = 5
	for range appends {
		_, err := call(t, s, root, "notes_append_to_file", args("path", "a.md", "text", text))
		checkTooLarge(t, err, 4_000_010, 10, 0)
	}
	flush()
	evs, recs := auditRecords(t, s, "notes_append_to_file")
	if len(evs) != appends {
		t.Fatalf("%d audit records of the appends, want %d", len(evs), appends)
	}
	for i, ev := range evs {
		rec := recs[i]
		if n := recordBytes(t, rec); n >= 1024 {
			t.Errorf("the audit of a refused 4 MB append holds %d bytes: %+v", n, rec)
		}
		if rec.Outcome != "too_large" || string(rec.Arguments) != `{"path":"a.md"}` || rec.ArgumentsDigest != nil {
			t.Errorf("record %+v, want the path whole and the outcome", rec)
		}
		if got, want := rec.ElidedArguments["text"], (events.Digest{Bytes: 4_000_000, SHA256: sha256Hex(text)}); got != want {
			t.Errorf("text kept as %+v, want %+v", got, want)
		}
		if ev.Schema != 3 {
			t.Errorf("audit record of schema %d, want 3", ev.Schema)
		}
	}
}

// TestAuditOfAWriteKeepsSizeAndDigest: the audit of a successful write or
// append holds no text, but its UTF-8 size and SHA-256, which match the
// note event's text; the other arguments are kept whole, in order.
func TestAuditOfAWriteKeepsSizeAndDigest(t *testing.T) {
	s, flush := mustOpenAuditedService(t)
	root := mustAttach(t, s, "writes")
	text := "goal: <ship> & \"test\"\n😀 é \u2028 end"
	mustCall(t, s, root, "notes_write_file", `{"text":`+string(mustJSON(t, text))+`,"path":"c.md"}`)
	mustCall(t, s, root, "notes_append_to_file", `{"path":"c.md","text":""}`)
	flush()
	for _, tc := range []struct {
		tool, text string
		noteType   string
	}{{"notes_write_file", text, events.TypeNoteWritten}, {"notes_append_to_file", "", events.TypeNoteAppended}} {
		evs, recs := auditRecords(t, s, tc.tool)
		if len(recs) != 1 {
			t.Fatalf("%s: %d audit records", tc.tool, len(recs))
		}
		rec := recs[0]
		if bytes.Contains(evs[0].Data, []byte("goal:")) {
			t.Errorf("%s: the audit event holds the written text: %s", tc.tool, evs[0].Data)
		}
		if string(rec.Arguments) != `{"path":"c.md"}` || rec.Outcome != "ok" {
			t.Errorf("%s: record %+v", tc.tool, rec)
		}
		want := events.Digest{Bytes: int64(len(tc.text)), SHA256: sha256Hex(tc.text)}
		if got := rec.ElidedArguments["text"]; got != want {
			t.Errorf("%s: text kept as %+v, want %+v", tc.tool, got, want)
		}
		if rec.ArgumentsWhole() {
			t.Errorf("%s: ArgumentsWhole of a record without its text", tc.tool)
		}
		// The digest identifies the note event's text.
		var noteText string
		s.store.Each(context.Background(), eventlog.Filter{Limit: 1000}, func(ev events.Event) error {
			if ev.Type == tc.noteType {
				var n struct {
					Text string `json:"text"`
				}
				json.Unmarshal(ev.Data, &n)
				noteText = n.Text
			}
			return nil
		})
		if sha256Hex(noteText) != want.SHA256 || int64(len(noteText)) != want.Bytes {
			t.Errorf("%s: the note event's text %q does not match the audit's digest", tc.tool, noteText)
		}
	}
}

// TestAuditBoundsEveryArgument: whatever a call sends, its audit record
// keeps at most 4 KiB of its arguments. Small arguments are kept whole
// (the store compacts them, as it always did); larger ones as the size
// and digest of their JSON text as the call received it, refused calls
// included.
func TestAuditBoundsEveryArgument(t *testing.T) {
	s, flush := mustOpenAuditedService(t)
	root := mustAttach(t, s, "bounds")
	mustCall(t, s, root, "notes_write_file", args("path", "a.md", "text", "needle"))
	long := strings.Repeat("q", 5000)
	huge := strings.Repeat("z", 4_000_000)
	small := `{"query":"needle",  "path_prefix":"a"}`
	cases := []struct {
		tool, args string
		whole      bool
	}{
		{"notes_search_contents", small, true},
		{"notes_read_file", `{"path":"` + strings.Repeat("😀", 512) + `"}`, true}, // the longest valid path
		{"notes_search_contents", `{"query":"` + long + `"}`, false},             // a long query
		{"notes_read_file", `{"path":"a.md","junk":"` + huge + `"}`, false},      // refused: unknown field
		{"history_search_contents", `"` + huge + `"`, false},                     // refused: not an object
		{"notes_write_file", `{"path":"` + long + `","text":"x"}`, false},        // refused: the path is too long
		{"notes_append_to_file", `{"path":"a.md","text":"x","Text":"` + huge + `"}`, false},
	}
	for _, tc := range cases {
		call(t, s, root, tc.tool, tc.args)
	}
	flush()
	seen := map[string]int{"notes_write_file": 1} // after the write of a.md
	for _, tc := range cases {
		_, recs := auditRecords(t, s, tc.tool)
		i := seen[tc.tool]
		seen[tc.tool]++
		rec := recs[i]
		if n := recordBytes(t, rec); n > 4096+1024 {
			t.Errorf("%s %.60s: the audit record holds %d bytes", tc.tool, tc.args, n)
		}
		if tc.whole {
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(tc.args)); err != nil {
				t.Fatal(err)
			}
			if !rec.ArgumentsWhole() || string(rec.Arguments) != compact.String() {
				t.Errorf("%s: arguments kept as %s (%+v), want %s whole", tc.tool, rec.Arguments, rec, tc.args)
			}
			continue
		}
		want := events.Digest{Bytes: int64(len(tc.args)), SHA256: sha256Hex(tc.args)}
		if rec.ArgumentsWhole() || rec.ArgumentsDigest == nil || *rec.ArgumentsDigest != want ||
			string(rec.Arguments) != "null" || rec.ElidedArguments != nil {
			t.Errorf("%s %.60s: record %+v, want arguments null and their digest %+v", tc.tool, tc.args, rec, want)
		}
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestAuditBatchIsOneEventPerAgent: a batch of records becomes one
// audit.tool_called event per agent, holding its calls in the order they
// came, split past events.MaxCallRecords; the calls of an agent that is
// not registered are not recorded.
func TestAuditBatchIsOneEventPerAgent(t *testing.T) {
	s, _ := mustOpenAuditedService(t)
	a, b := mustAttach(t, s, "batch-a"), mustAttach(t, s, "batch-b")
	ghost := CallContext{TaskID: a.TaskID, Agent: "/root/ghost"}
	entry := func(cc CallContext, id string) auditEntry {
		return auditEntry{ref: events.AgentRef{TaskID: cc.TaskID, Agent: cc.Agent},
			rec: events.CallRecord{CallID: id, Tool: "notes_read_file", Arguments: json.RawMessage(`{}`), Outcome: "ok", ResultDigest: "d"}}
	}
	var batch []auditEntry
	var wantA []string
	for i := range events.MaxCallRecords + 47 {
		id := fmt.Sprint("a", i)
		wantA = append(wantA, id)
		batch = append(batch, entry(a, id))
		if i == 2 {
			batch = append(batch, entry(b, "b0"), entry(ghost, "g0"), entry(b, "b1"))
		}
	}
	au := &auditor{store: s.store, log: slog.New(slog.DiscardHandler), known: map[string]bool{}}
	au.commit(batch)

	var got []string // agent and call ids of each event, in log order
	var gotA []string
	err := s.store.Each(context.Background(), eventlog.Filter{Limit: 1000}, func(ev events.Event) error {
		if ev.Type != events.TypeToolCalled {
			return nil
		}
		p, err := events.Decode(ev)
		if err != nil {
			return err
		}
		tc := p.(*events.ToolCalled)
		if ev.Stream != events.Stream(tc.TaskID, tc.Agent) {
			t.Errorf("event %d of %s on stream %s", ev.Position, tc.Agent, ev.Stream)
		}
		got = append(got, fmt.Sprintf("%s:%d", events.Stream(tc.TaskID, tc.Agent), len(tc.Calls)))
		for _, c := range tc.Calls {
			if tc.TaskID == a.TaskID && tc.Agent == a.Agent {
				gotA = append(gotA, c.CallID)
			}
		}
		if tc.TaskID == b.TaskID && (len(tc.Calls) != 2 || tc.Calls[0].CallID != "b0" || tc.Calls[1].CallID != "b1") {
			t.Errorf("b's calls %+v, want b0 b1", tc.Calls)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := events.Stream(a.TaskID, a.Agent), events.Stream(b.TaskID, b.Agent)
	want := []string{fmt.Sprintf("%s:%d", sa, events.MaxCallRecords), sa + ":47", sb + ":2"}
	if !slices.Equal(got, want) {
		t.Errorf("audit events %q, want %q", got, want)
	}
	if !slices.Equal(gotA, wantA) {
		t.Errorf("a's calls in another order or incomplete: %d of %d", len(gotA), len(wantA))
	}
}
