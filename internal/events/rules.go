package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/retention"
	"github.com/memoryd/memoryd/internal/strictjson"
)

// MaxNoteBytes is the ceiling of notes_max_file_bytes. No note file may
// ever hold more UTF-8 bytes, whatever an agent's budget says.
const MaxNoteBytes = 1_000_000

// maxEntryIDBytes bounds a history entry id, as a sync does.
const maxEntryIDBytes = 256

// CheckPayload decodes the payload of ev as strictly as the API decodes a
// request body, and checks the rules the commands that record it follow.
// It is pure, so whether the agents and tasks it names exist is left to the
// projections. What the commands record always passes.
func CheckPayload(ev Event) (any, error) {
	e, err := entryOf(ev)
	if err != nil {
		return nil, err
	}
	v := e.empty(ev.Schema)
	if err := strictjson.Check(ev.Data, reflect.TypeOf(v), strictjson.MaxDepth); err != nil {
		return nil, Broken(ev, "%s", describe(err, "its data"))
	}
	if err := json.Unmarshal(ev.Data, v); err != nil {
		return nil, Broken(ev, "its data does not decode: %s", typeMismatch(err))
	}
	p, ok := v.(ruled)
	if !ok {
		return nil, fmt.Errorf("events: %s has no payload rules", ev.Type) // a catalog entry without rules is a bug
	}
	task, agent := p.owner()                       // the stream is the one the payload belongs to
	if _, tombstone := v.(anyStream); !tombstone { // a tombstone stands in the erased event's stream
		if want := Stream(task, agent); ev.Stream != want {
			return nil, Broken(ev, "its data is about %s of task %s, not the agent of its stream %s", agent, task, ev.Stream)
		}
	}
	if err := p.rules(); err != nil {
		return nil, Broken(ev, "%v", err)
	}
	return current(v), nil
}

// RuleError is an imported event breaking a rule of its envelope, of its
// payload or of the projections. It is an ErrInvalidEvent.
type RuleError struct {
	Position int64
	Type     string
	Rule     string // what is wrong, such as `path: note path is empty`
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("%v: %s at position %d: %s", ErrInvalidEvent, e.Type, e.Position, e.Rule)
}

func (e *RuleError) Unwrap() error { return ErrInvalidEvent }

// Broken returns the *RuleError of ev breaking the rule its arguments say.
func Broken(ev Event, format string, args ...any) error {
	return &RuleError{Position: ev.Position, Type: ev.Type, Rule: fmt.Sprintf(format, args...)}
}

func describe(err error, subject string) string {
	var se *strictjson.Error
	if errors.As(err, &se) {
		return se.Describe(subject)
	}
	return err.Error()
}

// typeMismatch describes a json.Unmarshal error without Go's type names.
func typeMismatch(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("it is %s, not an object", te.Value)
		}
		return fmt.Sprintf("field %s must not be %s", te.Field, te.Value)
	}
	return "it is not valid JSON"
}

// ruled is a payload of the catalog, which knows the agent whose stream it
// belongs in and the rules of its fields beyond their JSON types.
type ruled interface {
	owner() (taskID, agent string)
	rules() error
}

// anyStream is a payload that may stand in any stream: a tombstone keeps
// the stream of the event it replaced and says nothing of its agent.
type anyStream interface{ anyStream() }

// ruleError returns a rule error that names the field it is about.
func ruleError(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
}

func addressRule(field, addr string) error {
	if _, err := address.ParseAgent(addr); err != nil {
		return ruleError(field, "%s", strings.TrimPrefix(err.Error(), address.ErrInvalid.Error()+": "))
	}
	return nil
}

// taskRule checks that id can name the task part of a stream.
func taskRule(id string) error {
	if id == "" || strings.Contains(id, "/") {
		return ruleError("task_id", "%q is not a task id", id)
	}
	return nil
}

func refRules(taskID, agent string) error {
	if err := taskRule(taskID); err != nil {
		return err
	}
	return addressRule("agent", agent)
}

// noteRules checks that a note is addressed as the tools address it, by a
// valid agent, and that its text fits MaxNoteBytes.
func noteRules(taskID, agent, path, text, by string) error {
	if err := refRules(taskID, agent); err != nil {
		return err
	}
	if err := addressRule("by", by); err != nil {
		return err
	}
	np, err := address.ParseNotePath(agent, path)
	if err != nil {
		return ruleError("path", "%s", strings.TrimPrefix(err.Error(), address.ErrInvalid.Error()+": "))
	}
	if np.Agent != agent || np.Path != path {
		return ruleError("path", "%q is not a path below the notes root of %s", path, agent)
	}
	if len(text) > MaxNoteBytes {
		return ruleError("text", "%d bytes; a note file holds at most %d bytes", len(text), MaxNoteBytes)
	}
	return nil
}

func (p *TaskCreated) owner() (string, string) { return p.TaskID, address.Root }
func (p *TaskCreated) rules() error {
	if err := taskRule(p.TaskID); err != nil {
		return err
	}
	if p.SessionKey == "" {
		return ruleError("session_key", "is empty")
	}
	return nil
}

func (p *AgentRegistered) owner() (string, string) { return p.TaskID, p.Agent }
func (p *AgentRegistered) rules() error {
	if err := refRules(p.TaskID, p.Agent); err != nil {
		return err
	}
	if p.SessionKey == "" {
		return ruleError("session_key", "is empty")
	}
	if p.Agent == address.Root {
		if p.ParentAgent != "" {
			return ruleError("parent_agent", "%s has no parent", address.Root)
		}
		return nil
	}
	if err := addressRule("parent_agent", p.ParentAgent); err != nil {
		return err
	}
	if !strings.HasPrefix(p.Agent, p.ParentAgent+"/") {
		return ruleError("parent_agent", "%s is not below %s", p.Agent, p.ParentAgent)
	}
	return nil
}

func (p *AgentReattached) owner() (string, string) { return p.TaskID, p.Agent }
func (p *AgentReattached) rules() error            { return refRules(p.TaskID, p.Agent) }

func (p *NoteWritten) owner() (string, string) { return p.TaskID, p.Agent }
func (p *NoteWritten) rules() error            { return noteRules(p.TaskID, p.Agent, p.Path, p.Text, p.By) }

func (p *NoteAppended) owner() (string, string) { return p.TaskID, p.Agent }
func (p *NoteAppended) rules() error            { return noteRules(p.TaskID, p.Agent, p.Path, p.Text, p.By) }

func (p *HistoryEntryRecorded) owner() (string, string) { return p.TaskID, p.Agent }
func (p *HistoryEntryRecorded) rules() error {
	if err := refRules(p.TaskID, p.Agent); err != nil {
		return err
	}
	if p.EntryID == "" || len(p.EntryID) > maxEntryIDBytes || !utf8.ValidString(p.EntryID) {
		return ruleError("entry_id", "must be 1 to %d bytes of UTF-8", maxEntryIDBytes)
	}
	if len(p.Entry) == 0 || p.Entry[0] != '{' {
		return ruleError("entry", "is not a JSON object (a Pi session entry)")
	}
	return nil
}

func (p *HistoryBranchChanged) owner() (string, string) { return p.TaskID, p.Agent }
func (p *HistoryBranchChanged) rules() error {
	if err := refRules(p.TaskID, p.Agent); err != nil {
		return err
	}
	switch {
	case p.Revision < 1:
		return ruleError("revision", "%d is not a revision (1 or more)", p.Revision)
	case p.Keep < 0:
		return ruleError("keep", "%d is negative", p.Keep)
	case p.Length != p.Keep+int64(len(p.Append)):
		return ruleError("length", "%d is not keep (%d) and the %d appended", p.Length, p.Keep, len(p.Append))
	}
	return nil
}

func (p *ToolCalled) rules() error {
	if err := refRules(p.TaskID, p.Agent); err != nil {
		return err
	}
	if n := len(p.Calls); n < 1 || n > MaxCallRecords {
		return ruleError("calls", "%d calls; an audit event holds 1 to %d", n, MaxCallRecords)
	}
	return nil
}

func (p *AgentRef) owner() (string, string) { return p.TaskID, p.Agent }
func (p *AgentRef) rules() error            { return refRules(p.TaskID, p.Agent) }

func (p *EventErased) owner() (string, string) { return "", "" }
func (p *EventErased) anyStream()              {}
func (p *EventErased) rules() error {
	if p.ErasedBy < 1 {
		return ruleError("erased_by", "%d is not a position (1 or more)", p.ErasedBy)
	}
	return nil
}

func (p *TaskErased) owner() (string, string) { return p.TaskID, address.Root }
func (p *TaskErased) rules() error {
	if err := taskRule(p.TaskID); err != nil {
		return err
	}
	if p.Events < 0 {
		return ruleError("events", "%d is negative", p.Events)
	}
	if r := p.Retention; r != nil {
		text, pol, err := retention.ParseTask(r.Retain)
		if err != nil || !pol.On() || text != r.Retain {
			return ruleError("retention.retain", "%q is not a period in its canonical form (such as 90d)", r.Retain)
		}
		if r.Source != RetentionGlobal && r.Source != RetentionTask {
			return ruleError("retention.source", "%q is neither %s nor %s", r.Source, RetentionGlobal, RetentionTask)
		}
		if _, err := time.Parse(TimeFormat, r.LastActivity); err != nil {
			return ruleError("retention.last_activity", "%q is not a time as recorded_at spells it", r.LastActivity)
		}
	}
	return nil
}

func (p *TaskRetentionSet) owner() (string, string) { return p.TaskID, address.Root }
func (p *TaskRetentionSet) rules() error {
	if err := taskRule(p.TaskID); err != nil {
		return err
	}
	text, _, err := retention.ParseTask(p.Retain)
	if err != nil {
		return ruleError("retain", "%v", err)
	}
	if p.Retain != retention.Default && text != p.Retain {
		return ruleError("retain", "%q is not in its canonical form, %q", p.Retain, text)
	}
	return nil
}
