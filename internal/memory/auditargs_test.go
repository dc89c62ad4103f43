package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
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

// auditRecords returns the audit.tool_called events of tool, with their
// payloads.
func auditRecords(tb testing.TB, s *Service, tool string) ([]events.Event, []events.ToolCalled) {
	tb.Helper()
	var evs []events.Event
	var recs []events.ToolCalled
	err := s.store.Each(context.Background(), eventlog.Filter{Limit: 1000}, func(ev events.Event) error {
		if ev.Type != events.TypeToolCalled {
			return nil
		}
		var rec events.ToolCalled
		if err := json.Unmarshal(ev.Data, &rec); err != nil {
			return err
		}
		if rec.Tool == tool {
			evs, recs = append(evs, ev), append(recs, rec)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return evs, recs
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
		if len(ev.Data) >= 1024 {
			t.Errorf("the audit of a refused 4 MB append holds %d bytes: %.200s", len(ev.Data), ev.Data)
		}
		rec := recs[i]
		if rec.Outcome != "too_large" || string(rec.Arguments) != `{"path":"a.md"}` || rec.ArgumentsDigest != nil {
			t.Errorf("record %+v, want the path whole and the outcome", rec)
		}
		if got, want := rec.ElidedArguments["text"], (events.Digest{Bytes: 4_000_000, SHA256: sha256Hex(text)}); got != want {
			t.Errorf("text kept as %+v, want %+v", got, want)
		}
		if ev.Schema != 2 {
			t.Errorf("audit record of schema %d, want 2", ev.Schema)
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
		if bytes.Contains(evs[0].Data, []byte(`"text"`)) && !bytes.Contains(evs[0].Data, []byte(`"elided_arguments":{"text"`)) {
			t.Errorf("%s: the audit holds the text: %s", tc.tool, evs[0].Data)
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
		evs, recs := auditRecords(t, s, tc.tool)
		i := seen[tc.tool]
		seen[tc.tool]++
		ev, rec := evs[i], recs[i]
		if len(ev.Data) > 4096+1024 {
			t.Errorf("%s %.60s: the audit record holds %d bytes", tc.tool, tc.args, len(ev.Data))
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
