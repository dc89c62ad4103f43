package projections

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/memoryd/memoryd/internal/events"
)

// noteCeiling is events.MaxNoteBytes, spelt out so that the test also
// runs against a build without it.
const noteCeiling = 1_000_000

// item is one event of a log built by checkLog.
type item struct{ stream, typ, data string }

// checkLog numbers items as an export would.
func checkLog(items []item) []events.Event {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	versions := map[string]int64{}
	out := make([]events.Event, len(items))
	for i, it := range items {
		versions[it.stream]++
		out[i] = events.Event{Position: int64(i + 1), ID: ulid.MustNew(ulid.Timestamp(at), ulid.DefaultEntropy()).String(),
			Stream: it.stream, StreamVersion: versions[it.stream], Type: it.typ, Schema: 1,
			RecordedAt: at.Format(events.TimeFormat), Data: []byte(it.data)}
	}
	return out
}

func budgetJSON(notesMax int64) string {
	return fmt.Sprintf(`{"context_window":null,"reminder_remaining_percent":0.25,"reminder_remaining_floor_tokens":21384,"reminder_remaining_ceiling_tokens":60000,"hard_rollover_used_tokens":0,"max_tool_output_chars":12000,"notes_max_file_bytes":%d,"history_item_preview_chars":400}`, notesMax)
}

func registered(task, agent, parent string, notesMax int64) item {
	p := ""
	if parent != "" {
		p = fmt.Sprintf(`"parent_agent":%q,`, parent)
	}
	return item{task + agent, events.TypeAgentRegistered,
		fmt.Sprintf(`{"task_id":%q,"agent":%q,%s"session_key":"/s/%s%s","budget":%s}`, task, agent, p, task, agent, budgetJSON(notesMax))}
}

func noteItem(typ, task, agent, path, text, by string) item {
	return item{task + agent, typ, fmt.Sprintf(`{"task_id":%q,"agent":%q,"path":%q,"text":%q,"by":%q}`, task, agent, path, text, by)}
}

// checkBase is a task whose root may write notes of 1,000,000 bytes and
// whose child /root/small notes of 100 bytes, each with a note.
var checkBase = []item{
	{"T1/root", events.TypeTaskCreated, `{"task_id":"T1","session_key":"/s/T1/root"}`},
	registered("T1", "/root", "", 1_000_000),
	registered("T1", "/root/small", "/root", 100),
	noteItem(events.TypeNoteWritten, "T1", "/root/small", "s.md", strings.Repeat("s", 60), "/root/small"),
	// The owner's cap applies, as the tools apply it: the child may write
	// a note of the root's larger than its own cap.
	noteItem(events.TypeNoteWritten, "T1", "/root", "given.md", strings.Repeat("g", 500), "/root/small"),
}

// TestImportChecksWhatTheLogNames: an import refuses an event that names
// an agent or task that does not exist at its position, or that leaves a
// note over its owner's cap (the owner's notes_max_file_bytes as of that
// position, never more than events.MaxNoteBytes), whoever wrote it, naming its position and
// the rule, and keeps nothing.
func TestImportChecksWhatTheLogNames(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		more []item
		want string
	}{
		{"note of an agent never registered", []item{noteItem(events.TypeNoteWritten, "T1", "/root/ghost", "a.md", "boo", "/root")},
			"agent /root/ghost is not registered in task T1"},
		{"note of an unknown task", []item{noteItem(events.TypeNoteWritten, "T9", "/root", "a.md", "x", "/root")},
			"task T9 does not exist (no task.created before it)"},
		{"note by an agent never registered", []item{noteItem(events.TypeNoteAppended, "T1", "/root", "a.md", "x", "/root/ghost")},
			"agent /root/ghost is not registered in task T1"},
		{"entry of an agent never registered", []item{{"T1/root/ghost", events.TypeHistoryEntryRecorded, `{"task_id":"T1","agent":"/root/ghost","entry_id":"e1","entry":{"type":"message","id":"e1"}}`}},
			"agent /root/ghost is not registered in task T1"},
		{"usage of an unknown task", []item{{"T9/root", events.TypeUsageReported, `{"task_id":"T9","agent":"/root","tokens_used":5,"context_window":null}`}},
			"task T9 does not exist"},
		{"audited call of an agent never registered", []item{{"T1/root/ghost", events.TypeToolCalled, `{"task_id":"T1","agent":"/root/ghost","tool":"notes_read_file","arguments":{},"read_position":1,"outcome":"ok","result_digest":"x"}`}},
			"agent /root/ghost is not registered in task T1"},
		{"reattach of an agent never registered", []item{{"T1/root/ghost", events.TypeAgentReattached, `{"task_id":"T1","agent":"/root/ghost","budget":` + budgetJSON(10) + `}`}},
			"agent /root/ghost is not registered in task T1"},
		{"agent of an unknown task", []item{registered("T9", "/root", "", 100)},
			"task T9 does not exist (no task.created before it)"},
		{"agent registered twice", []item{registered("T1", "/root/small", "/root", 100)},
			"agent /root/small is registered in task T1 already"},
		{"parent never registered", []item{registered("T1", "/root/a/b", "/root/a", 100)},
			"agent /root/a is not registered in task T1"},
		{"task created twice", []item{{"T1/root", events.TypeTaskCreated, `{"task_id":"T1","session_key":"/s/again"}`}},
			"task T1 exists already"},
		{"write over the owner's cap", []item{noteItem(events.TypeNoteWritten, "T1", "/root/small", "w.md", strings.Repeat("w", 101), "/root/small")},
			"/root/small/notes/w.md would hold 101 bytes; the notes of /root/small hold at most 100"},
		{"append over the owner's cap", []item{noteItem(events.TypeNoteAppended, "T1", "/root/small", "s.md", strings.Repeat("a", 41), "/root/small")},
			"/root/small/notes/s.md would hold 101 bytes; the notes of /root/small hold at most 100"},
		{"a write by the root into a child's note, over the child's cap", []item{noteItem(events.TypeNoteWritten, "T1", "/root/small", "r.md", strings.Repeat("r", 101), "/root")},
			"/root/small/notes/r.md would hold 101 bytes; the notes of /root/small hold at most 100"},
		{"appends of the same import over the cap", []item{
			noteItem(events.TypeNoteAppended, "T1", "/root/small", "s.md", strings.Repeat("a", 40), "/root/small"),
			noteItem(events.TypeNoteAppended, "T1", "/root/small", "s.md", "a", "/root/small")},
			"/root/small/notes/s.md would hold 101 bytes"},
		{"append after a reattach lowered the cap", []item{
			{"T1/root/small", events.TypeAgentReattached, `{"task_id":"T1","agent":"/root/small","session_id":"2","budget":` + budgetJSON(70) + `}`},
			noteItem(events.TypeNoteAppended, "T1", "/root/small", "s.md", strings.Repeat("a", 11), "/root/small")},
			"would hold 71 bytes; the notes of /root/small hold at most 70"},
		{"a budget over the ceiling", []item{
			registered("T1", "/root/big", "/root", 5_000_000),
			noteItem(events.TypeNoteWritten, "T1", "/root/big", "b.md", strings.Repeat("b", noteCeiling), "/root/big"),
			noteItem(events.TypeNoteAppended, "T1", "/root/big", "b.md", "!", "/root/big")},
			"/root/big/notes/b.md would hold 1000001 bytes; the notes of /root/big hold at most 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openDeferring(t)
			log := checkLog(append(checkBase[:len(checkBase):len(checkBase)], tc.more...))
			n, err := store.Import(ctx, iterSlice(log))
			if !errors.Is(err, events.ErrInvalidEvent) {
				t.Fatalf("import: %d, %v; want ErrInvalidEvent", n, err)
			}
			if want := fmt.Sprintf("%s at position %d: ", log[len(log)-1].Type, len(log)); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("import: %v; want it to name %q and %q", err, want, tc.want)
			}
			if p, err := store.LastPosition(ctx); err != nil || p != 0 {
				t.Fatalf("the refused import left %d events (%v)", p, err)
			}
		})
	}
	// What the commands would have recorded imports: appends up to the
	// cap, a raised cap, a budget over the ceiling up to the ceiling.
	ok := append(checkBase[:len(checkBase):len(checkBase)],
		noteItem(events.TypeNoteAppended, "T1", "/root/small", "s.md", strings.Repeat("a", 40), "/root/small"),
		item{"T1/root/small", events.TypeAgentReattached, `{"task_id":"T1","agent":"/root/small","budget":` + budgetJSON(200) + `}`},
		noteItem(events.TypeNoteAppended, "T1", "/root/small", "s.md", strings.Repeat("a", 100), "/root/small"),
		registered("T1", "/root/big", "/root", 5_000_000),
		noteItem(events.TypeNoteWritten, "T1", "/root/big", "b.md", strings.Repeat("b", noteCeiling), "/root/big"),
		item{"T1/root", events.TypeUsageReported, `{"task_id":"T1","agent":"/root","tokens_used":5,"context_window":null}`},
	)
	store := openDeferring(t)
	if n, err := store.Import(ctx, iterSlice(checkLog(ok))); err != nil || n != int64(len(ok)) {
		t.Fatalf("import of a log the commands could have written: %d, %v", n, err)
	}
	if n, err := NewReader(store.Reader()).Note(ctx, "T1", "/root/small", "s.md"); err != nil || n.Bytes != 200 {
		t.Errorf("s.md: %d bytes, %v; want 200", n.Bytes, err)
	}
}

func iterSlice(evs []events.Event) func() (events.Event, bool, error) {
	return func() (events.Event, bool, error) {
		if len(evs) == 0 {
			return events.Event{}, false, nil
		}
		ev := evs[0]
		evs = evs[1:]
		return ev, true, nil
	}
}
