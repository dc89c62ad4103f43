package memory

import (
	"context"
	"encoding/json"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// InspectTool runs a read tool for the inspector (internal/inspector) by
// the code path CallTool takes, with three differences: it refuses the
// tools that write, it is never recorded by the read audit (looking at a
// memory must not change its log), and the caller's checkpoint fence does
// not block it (the inspector looks at the agent; it is not the agent).
func (s *Service) InspectTool(ctx context.Context, name string, cc CallContext, args json.RawMessage) (ToolResult, error) {
	if tools.Writes(name) || name == tools.NotesReadFile {
		return ToolResult{}, invalidf("%s is not available to the inspector, which only reads without the fence", name)
	}
	if err := checkCallID(cc); err != nil {
		return ToolResult{}, err
	}
	res, _, err := s.callTool(ctx, toolCall{name: name, cc: cc, args: args})
	return res, err
}

// StreamEvents returns one page of the events of one agent's stream
// (<task_id><agent>) in position order: at most limit events after
// position after. The inspector folds them into the agent's timeline.
func (s *Service) StreamEvents(ctx context.Context, taskID, agent string, after int64, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, Stream: taskID + agent, Limit: limit})
}

// NoteEvents returns one page of the note.written and note.appended
// events of one note (agent's, at path) in position order: at most limit
// events after position after, up to position until (0: no bound).
func (s *Service) NoteEvents(ctx context.Context, taskID, agent, path string, after, until int64, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, Until: until, Stream: taskID + agent, Path: path, Limit: limit, Only: eventlog.OnlyNote})
}

// StreamNotes returns the note.written and note.appended events of every
// note an agent owns, after position after up to until, at most limit,
// in position order.
func (s *Service) StreamNotes(ctx context.Context, taskID, agent string, after, until int64, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, Until: until, Stream: taskID + agent, Limit: limit, Only: eventlog.OnlyNotes})
}

// TaskNotes lists every note of a task, its text left out, from the
// notes projection, by owner and path: the inspector's list of files.
func (s *Service) TaskNotes(ctx context.Context, taskID string) ([]projections.TaskNote, error) {
	var notes []projections.TaskNote
	err := s.read(ctx, func(r *projections.Reader) error {
		var err error
		notes, err = r.TaskNotes(ctx, taskID)
		return err
	})
	return notes, err
}

// BranchChangeFrom returns the position of the first history.branch_changed
// of an agent's stream at or after position from (0: none): when an
// entry recorded at from went onto the agent's branch.
func (s *Service) BranchChangeFrom(ctx context.Context, taskID, agent string, from int64) (int64, error) {
	return s.store.BranchChangeFrom(ctx, taskID+agent, from)
}

// FencedStreamEvents is StreamEvents without the notes, history and
// audit events, up to position until (0: no bound): every event the
// checkpoint fence folds, for the timeline.
func (s *Service) FencedStreamEvents(ctx context.Context, taskID, agent string, after, until int64, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, Until: until, Stream: taskID + agent, Limit: limit, Only: eventlog.OnlyFenced})
}

// StreamCalls returns the audited calls (audit.tool_called events) of an
// agent's stream before position before, at most limit, newest first.
func (s *Service) StreamCalls(ctx context.Context, taskID, agent string, before int64, limit int) ([]events.Event, error) {
	return s.store.StreamCallsBefore(ctx, taskID+agent, before, limit)
}

// StreamBounds returns the first and last positions of an agent's stream
// and its number of events (all 0 when it has none), up to position
// until (0: no bound).
func (s *Service) StreamBounds(ctx context.Context, taskID, agent string, until int64) (first, last, n int64, err error) {
	return s.store.StreamBounds(ctx, taskID+agent, until)
}
