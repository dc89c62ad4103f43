package eventlog

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

// logItem is one event of a log built by buildLog: its stream, type and
// data as the log would carry them.
type logItem struct {
	stream, typ, data string
}

// buildLog numbers items as an export would: gapless positions, stream
// versions, ULIDs, recorded_at.
func buildLog(items ...logItem) []events.Event {
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

const (
	noteCeiling = 1_000_000 // MaxNoteBytes, spelt out so that the test also runs against a build without it
	rulesBudget = `{"context_window":null,"reminder_remaining_percent":0.25,"reminder_remaining_floor_tokens":21384,"reminder_remaining_ceiling_tokens":60000,"hard_rollover_used_tokens":0,"max_tool_output_chars":12000,"notes_max_file_bytes":1000000,"history_item_preview_chars":400}`
	rootStream  = "01TASKA/root"
	childStream = "01TASKA/root/reviewer"
)

// rulesLog is a task with a root and a child agent and a note of each:
// what the cases of TestImportRefusesPayloadsThatBreakRules end with one
// more event.
var rulesLog = []logItem{
	{rootStream, events.TypeTaskCreated, `{"task_id":"01TASKA","session_key":"/s/root.jsonl"}`},
	{rootStream, events.TypeAgentRegistered, `{"task_id":"01TASKA","agent":"/root","session_key":"/s/root.jsonl","budget":` + rulesBudget + `}`},
	{childStream, events.TypeAgentRegistered, `{"task_id":"01TASKA","agent":"/root/reviewer","parent_agent":"/root","session_key":"/s/child.jsonl","budget":` + rulesBudget + `}`},
	{rootStream, events.TypeNoteWritten, `{"task_id":"01TASKA","agent":"/root","path":"plan.md","text":"- a\n","by":"/root"}`},
	{childStream, events.TypeNoteAppended, `{"task_id":"01TASKA","agent":"/root/reviewer","path":"notes/r.md","text":"ok\n","by":"/root"}`},
}

func noteData(agent, path, text string) string {
	return fmt.Sprintf(`{"task_id":"01TASKA","agent":%q,"path":%q,"text":%q,"by":"/root"}`, agent, path, text)
}

// TestImportRefusesPayloadsThatBreakRules: an import decodes each payload
// as strictly as the API decodes a request body and checks the rules the
// commands that record it follow (CheckPayload), refusing the first event
// that breaks one, by its position and the rule, keeping nothing.
func TestImportRefusesPayloadsThatBreakRules(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		last logItem
		want string
	}{
		{"duplicate key", logItem{childStream, events.TypeNoteAppended, `{"text":"shrunk","task_id":"01TASKA","agent":"/root/reviewer","path":"r.md","text":"x","by":"/root"}`},
			`its data has the key "text" twice in one object`},
		{"duplicate key deep in an entry", logItem{rootStream, events.TypeHistoryEntryRecorded, `{"task_id":"01TASKA","agent":"/root","entry_id":"e1","entry":{"type":"message","id":"e1","message":{"role":"user","role":"assistant"}}}`},
			`its data has the key "role" twice in one object`},
		{"invalid UTF-8", logItem{rootStream, events.TypeNoteWritten, "{\"task_id\":\"01TASKA\",\"agent\":\"/root\",\"path\":\"a.md\",\"text\":\"\xff\",\"by\":\"/root\"}"},
			"its data is not valid UTF-8"},
		{"unknown field", logItem{rootStream, events.TypeNoteAppended, `{"task_id":"01TASKA","agent":"/root","path":"a.md","text":"x","by":"/root","colour":"red"}`},
			`unknown field "colour"`},
		{"unknown field of an embedded agent reference", logItem{rootStream, events.TypeUserInputReceived, `{"task_id":"01TASKA","agent":"/root","agnet":"/root"}`},
			`unknown field "agnet"`},
		{"unknown budget field", logItem{"01TASKA/root/other", events.TypeAgentRegistered, `{"task_id":"01TASKA","agent":"/root/other","parent_agent":"/root","session_key":"k","budget":{"notes_max_file_bytes":10,"colour":1}}`},
			`unknown field "colour"`},
		{"case variant of a field", logItem{rootStream, events.TypeNoteAppended, `{"task_id":"01TASKA","agent":"/root","Path":"b.md","path":"a.md","text":"x","by":"/root"}`},
			`unknown field "Path" (field names are case-sensitive: "path")`},
		{"number out of range", logItem{rootStream, events.TypeUsageReported, `{"task_id":"01TASKA","agent":"/root","tokens_used":1e999,"context_window":null}`},
			"its data has the number 1e999, which is out of range"},
		{"too deep", logItem{rootStream, events.TypeHistoryEntryRecorded, `{"task_id":"01TASKA","agent":"/root","entry_id":"e1","entry":{"type":"x","id":"e1","v":` + strings.Repeat("[", 99) + strings.Repeat("]", 99) + `}}`},
			"its data nests deeper than 100 levels"},
		{"wrong type", logItem{rootStream, events.TypeNoteWritten, `{"task_id":"01TASKA","agent":"/root","path":"a.md","text":7,"by":"/root"}`},
			"field text must not be number"},
		{"note path out of the notes root", logItem{rootStream, events.TypeNoteAppended, noteData("/root", "../../etc/passwd", "root::0:0")},
			`path: note path "../../etc/passwd" may not contain a ".." segment`},
		{"no note path", logItem{rootStream, events.TypeNoteWritten, `{"task_id":"01TASKA","agent":"/root","text":"x","by":"/root"}`},
			"path: note path is empty"},
		{"a full note path", logItem{rootStream, events.TypeNoteWritten, noteData("/root", "/root/notes/a.md", "x")},
			`path: "/root/notes/a.md" is not a path below the notes root of /root`},
		{"NUL in a note path", logItem{rootStream, events.TypeNoteWritten, `{"task_id":"01TASKA","agent":"/root","path":"a\u0000.md","text":"x","by":"/root"}`},
			"path: note path contains a NUL character"},
		{"note over the ceiling", logItem{rootStream, events.TypeNoteWritten, noteData("/root", "big.md", strings.Repeat("x", noteCeiling+1))},
			"text: 1000001 bytes; a note file holds at most 1000000 bytes"},
		{"2 MB note", logItem{rootStream, events.TypeNoteAppended, noteData("/root", "big.md", strings.Repeat("é", 1_000_000))},
			"text: 2000000 bytes; a note file holds at most 1000000 bytes"},
		{"writer not an address", logItem{rootStream, events.TypeNoteWritten, `{"task_id":"01TASKA","agent":"/root","path":"a.md","text":"x","by":"root"}`},
			`by: agent address "root" must be /root or start with /root/`},
		{"data of another stream", logItem{rootStream, events.TypeNoteWritten, noteData("/root/reviewer", "a.md", "x")},
			"its data is about /root/reviewer of task 01TASKA, not the agent of its stream 01TASKA/root"},
		{"task.created off its root stream", logItem{childStream, events.TypeTaskCreated, `{"task_id":"01TASKA","session_key":"k"}`},
			"its data is about /root of task 01TASKA, not the agent of its stream 01TASKA/root/reviewer"},
		{"agent address", logItem{"01TASKA/root/Bad", events.TypeAgentRegistered, `{"task_id":"01TASKA","agent":"/root/Bad","parent_agent":"/root","session_key":"k","budget":` + rulesBudget + `}`},
			`agent: agent address "/root/Bad": segment "Bad" must match [a-z0-9_]+`},
		{"parent not above the agent", logItem{"01TASKA/root/x", events.TypeAgentRegistered, `{"task_id":"01TASKA","agent":"/root/x","parent_agent":"/root/reviewer","session_key":"k","budget":` + rulesBudget + `}`},
			"parent_agent: /root/x is not below /root/reviewer"},
		{"root with a parent", logItem{"01TASKB/root", events.TypeAgentRegistered, `{"task_id":"01TASKB","agent":"/root","parent_agent":"/root","session_key":"k","budget":` + rulesBudget + `}`},
			"parent_agent: /root has no parent"},
		{"long entry id", logItem{rootStream, events.TypeHistoryEntryRecorded, `{"task_id":"01TASKA","agent":"/root","entry_id":"` + strings.Repeat("e", 300) + `","entry":{"type":"x"}}`},
			"entry_id: must be 1 to 256 bytes of UTF-8"},
		{"branch length", logItem{rootStream, events.TypeHistoryBranchChanged, `{"task_id":"01TASKA","agent":"/root","revision":1,"keep":0,"append":["e1"],"length":5}`},
			"length: 5 is not keep (0) and the 1 appended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, recordingApply)
			log := buildLog(append(rulesLog[:len(rulesLog):len(rulesLog)], tc.last)...)
			n, err := s.Import(ctx, iterate(log))
			if !errors.Is(err, events.ErrInvalidEvent) {
				t.Fatalf("import: %d, %v; want ErrInvalidEvent", n, err)
			}
			if want := fmt.Sprintf("%s at position %d: ", tc.last.typ, len(log)); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("import: %v; want it to name %q and %q", err, want, tc.want)
			}
			if p := lastPosition(t, s); p != 0 {
				t.Fatalf("the refused import left %d events", p)
			}
			if n := appliedCount(t, s); n != 0 {
				t.Fatalf("the refused import left %d applier rows", n)
			}
		})
	}
	// A note of exactly the ceiling, and the log without a bad event,
	// import.
	full := logItem{rootStream, events.TypeNoteWritten, noteData("/root", "full.md", strings.Repeat("x", noteCeiling))}
	if n, err := openStore(t, recordingApply).Import(ctx, iterate(buildLog(append(rulesLog[:len(rulesLog):len(rulesLog)], full)...))); err != nil || n != int64(len(rulesLog)+1) {
		t.Fatalf("import of a clean log: %d, %v", n, err)
	}
}
