package events

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckPayload holds each rule of CheckPayload without a database: an
// event of every catalog type that the commands would record passes, and
// each broken rule is refused as a *RuleError naming its field.
func TestCheckPayload(t *testing.T) {
	const task = "01JTASK"
	const auditedCall = `{"call_id":"c1","tool":"notes_read_file","arguments":{"path":"a.md"},"read_position":3,"outcome":"ok","result_digest":"d"}`
	root, sub := Stream(task, "/root"), Stream(task, "/root/sub")
	long := strings.Repeat("x", MaxNoteBytes+1)
	for _, tc := range []struct {
		name, typ, stream, data string
		schema                  int    // 0: the catalog's
		want                    string // "" passes; else in the rule, or the error
	}{
		{"task created", TypeTaskCreated, root, `{"task_id":"01JTASK","session_key":"s"}`, 0, ""},
		{"task id with a slash", TypeTaskCreated, Stream("a/b", "/root"), `{"task_id":"a/b","session_key":"s"}`, 0, `task_id: "a/b" is not a task id`},
		{"task without session key", TypeTaskCreated, root, `{"task_id":"01JTASK"}`, 0, "session_key: is empty"},
		{"root registered", TypeAgentRegistered, root, `{"task_id":"01JTASK","agent":"/root","session_key":"s","budget":{}}`, 0, ""},
		{"root with a parent", TypeAgentRegistered, root, `{"task_id":"01JTASK","agent":"/root","parent_agent":"/root","session_key":"s","budget":{}}`, 0, "parent_agent: /root has no parent"},
		{"child registered", TypeAgentRegistered, sub, `{"task_id":"01JTASK","agent":"/root/sub","parent_agent":"/root","session_key":"s2","budget":{}}`, 0, ""},
		{"child without a parent", TypeAgentRegistered, sub, `{"task_id":"01JTASK","agent":"/root/sub","session_key":"s2","budget":{}}`, 0, "parent_agent:"},
		{"child not below its parent", TypeAgentRegistered, Stream(task, "/root/a/b"), `{"task_id":"01JTASK","agent":"/root/a/b","parent_agent":"/root/c","session_key":"s2","budget":{}}`, 0, "parent_agent: /root/a/b is not below /root/c"},
		{"agent that is no address", TypeAgentReattached, Stream(task, "root"), `{"task_id":"01JTASK","agent":"root","budget":{}}`, 0, "agent:"},
		{"note written", TypeNoteWritten, root, `{"task_id":"01JTASK","agent":"/root","path":"plan.md","text":"x","by":"/root"}`, 0, ""},
		{"note appended by a child", TypeNoteAppended, root, `{"task_id":"01JTASK","agent":"/root","path":"plan.md","text":"x","by":"/root/sub"}`, 0, ""},
		{"note path empty", TypeNoteWritten, root, `{"task_id":"01JTASK","agent":"/root","path":"","text":"x","by":"/root"}`, 0, "path:"},
		{"note path of another agent", TypeNoteWritten, root, `{"task_id":"01JTASK","agent":"/root","path":"/root/sub/notes/a.md","text":"x","by":"/root"}`, 0, "path:"},
		{"note by no agent", TypeNoteWritten, root, `{"task_id":"01JTASK","agent":"/root","path":"a.md","text":"x","by":""}`, 0, "by:"},
		{"note over its cap", TypeNoteWritten, root, `{"task_id":"01JTASK","agent":"/root","path":"a.md","text":"` + long + `","by":"/root"}`, 0, "text: 1000001 bytes"},
		{"entry recorded", TypeHistoryEntryRecorded, root, `{"task_id":"01JTASK","agent":"/root","entry_id":"e1","entry":{"type":"message"}}`, 0, ""},
		{"entry without id", TypeHistoryEntryRecorded, root, `{"task_id":"01JTASK","agent":"/root","entry_id":"","entry":{}}`, 0, "entry_id: must be 1 to 256 bytes"},
		{"entry id too long", TypeHistoryEntryRecorded, root, `{"task_id":"01JTASK","agent":"/root","entry_id":"` + strings.Repeat("e", 257) + `","entry":{}}`, 0, "entry_id:"},
		{"entry not an object", TypeHistoryEntryRecorded, root, `{"task_id":"01JTASK","agent":"/root","entry_id":"e1","entry":[1]}`, 0, "entry: is not a JSON object"},
		{"branch changed", TypeHistoryBranchChanged, root, `{"task_id":"01JTASK","agent":"/root","revision":2,"keep":1,"append":["e2"],"length":2}`, 0, ""},
		{"branch revision 0", TypeHistoryBranchChanged, root, `{"task_id":"01JTASK","agent":"/root","revision":0,"keep":0,"append":[],"length":0}`, 0, "revision: 0 is not a revision"},
		{"branch keep negative", TypeHistoryBranchChanged, root, `{"task_id":"01JTASK","agent":"/root","revision":1,"keep":-1,"append":["e1"],"length":0}`, 0, "keep: -1 is negative"},
		{"branch length wrong", TypeHistoryBranchChanged, root, `{"task_id":"01JTASK","agent":"/root","revision":1,"keep":1,"append":["e2"],"length":3}`, 0, "length: 3 is not keep (1) and the 1 appended"},
		{"calls audited", TypeToolCalled, root, `{"task_id":"01JTASK","agent":"/root","calls":[` + auditedCall + `,` + auditedCall + `]}`, 0, ""},
		{"no call audited", TypeToolCalled, root, `{"task_id":"01JTASK","agent":"/root","calls":[]}`, 0, "calls: 0 calls; an audit event holds 1 to 256"},
		{"too many calls audited", TypeToolCalled, root, `{"task_id":"01JTASK","agent":"/root","calls":[` + strings.Repeat(auditedCall+`,`, MaxCallRecords) + auditedCall + `]}`, 0, "calls: 257 calls"},
		{"one call of schema 2", TypeToolCalled, root, `{"task_id":"01JTASK","agent":"/root",` + auditedCall[1:], 2, ""},
		{"one call of schema 2 in the form of 3", TypeToolCalled, root, `{"task_id":"01JTASK","agent":"/root","calls":[` + auditedCall + `]}`, 2, "calls"},
		{"a batch in the form of schema 2", TypeToolCalled, root, `{"task_id":"01JTASK","agent":"/root",` + auditedCall[1:], 0, `unknown field "call_id"`},
		{"lifecycle event", TypeFenceLifted, root, `{"task_id":"01JTASK","agent":"/root","reason":"branch_changed","window_id":"w1"}`, 0, ""},
		{"in another agent's stream", TypeNoteWritten, sub, `{"task_id":"01JTASK","agent":"/root","path":"a.md","text":"x","by":"/root"}`, 0, "its data is about /root of task 01JTASK, not the agent of its stream " + sub},
		{"unknown field", TypeTaskCreated, root, `{"task_id":"01JTASK","session_key":"s","extra":1}`, 0, "extra"},
		{"key twice", TypeTaskCreated, root, `{"task_id":"01JTASK","task_id":"01JTASK","session_key":"s"}`, 0, "twice"},
		{"not an object", TypeTaskCreated, root, `[1]`, 0, "not an object"},
		{"wrong field type", TypeTaskCreated, root, `{"task_id":1,"session_key":"s"}`, 0, "task_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := Lookup(tc.typ)
			if !ok {
				t.Fatalf("no catalog entry %s", tc.typ)
			}
			schema := tc.schema
			if schema == 0 {
				schema = e.Schema
			}
			ev := Event{Position: 7, Type: tc.typ, Schema: schema, Stream: tc.stream, Data: []byte(tc.data)}
			v, err := CheckPayload(ev)
			if tc.want == "" {
				if err != nil || v == nil {
					t.Fatalf("CheckPayload: %v, want it to pass", err)
				}
				return
			}
			var re *RuleError
			if !errors.As(err, &re) || !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("CheckPayload: %v, want a *RuleError", err)
			}
			if re.Position != 7 || re.Type != tc.typ || !strings.Contains(re.Rule, tc.want) {
				t.Errorf("rule %+v, want position 7, type %s and a rule saying %q", re, tc.typ, tc.want)
			}
		})
	}
}

// TestCheckPayloadRefusesUnknownTypesAndSchemas: a type or a schema this
// build does not know is ErrUnknownEvent, not a broken rule.
func TestCheckPayloadRefusesUnknownTypesAndSchemas(t *testing.T) {
	e, _ := Lookup(TypeTaskCreated)
	for _, ev := range []Event{
		{Type: "task.renamed", Schema: 1, Data: []byte(`{}`)},
		{Type: TypeTaskCreated, Schema: e.Schema + 1, Data: []byte(`{}`)},
		{Type: TypeTaskCreated, Schema: 0, Data: []byte(`{}`)},
	} {
		if _, err := CheckPayload(ev); !errors.Is(err, ErrUnknownEvent) {
			t.Errorf("%s schema %d: %v, want ErrUnknownEvent", ev.Type, ev.Schema, err)
		}
	}
}

// TestOldAuditRecordIsABatchOfOne: an audit.tool_called event of schema 1
// or 2, one call beside the agent, decodes (through Decode and through
// CheckPayload alike) as the current payload holding that one call.
func TestOldAuditRecordIsABatchOfOne(t *testing.T) {
	data := `{"task_id":"01JTASK","agent":"/root","call_id":"c1","tool":"notes_read_file","arguments":{"path":"a.md"},"elided_arguments":{"text":{"bytes":3,"sha256":"s"}},"read_position":3,"outcome":"ok","result_digest":"d"}`
	for _, schema := range []int{1, 2} {
		ev := Event{Position: 7, Type: TypeToolCalled, Schema: schema, Stream: Stream("01JTASK", "/root"), Data: []byte(data)}
		checked, err := CheckPayload(ev)
		if err != nil {
			t.Fatalf("schema %d: %v", schema, err)
		}
		decoded, err := Decode(ev)
		if err != nil {
			t.Fatalf("schema %d: %v", schema, err)
		}
		for _, p := range []any{checked, decoded} {
			tc, ok := p.(*ToolCalled)
			if !ok || tc.TaskID != "01JTASK" || tc.Agent != "/root" || len(tc.Calls) != 1 {
				t.Fatalf("schema %d: %#v, want a batch of one", schema, p)
			}
			c := tc.Calls[0]
			if c.CallID != "c1" || c.Tool != "notes_read_file" || string(c.Arguments) != `{"path":"a.md"}` || c.ReadPosition != 3 ||
				c.Outcome != "ok" || c.ResultDigest != "d" || c.ElidedArguments["text"].Bytes != 3 {
				t.Errorf("schema %d: call %+v", schema, c)
			}
		}
	}
}
