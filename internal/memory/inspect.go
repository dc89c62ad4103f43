package memory

import (
	"context"
	"encoding/json"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// InspectTool runs a read tool for the inspector by the code path CallTool
// takes, but without the read audit and the caller's checkpoint fence.
func (s *Service) InspectTool(ctx context.Context, name string, cc CallContext, args json.RawMessage) (ToolResult, error) {
	if tools.Writes(name) || name == tools.NotesReadFile {
		return ToolResult{}, invalidf("%s is not available to the inspector, which only reads without the fence", name)
	}
	if err := checkCallID(cc); err != nil {
		return ToolResult{}, err
	}
	// No audit, since looking at a memory must not change its log, and no
	// gate, since the inspector looks at the agent and is not the agent.
	res, _, err := s.callTool(ctx, toolCall{name: name, cc: cc, args: args})
	return res, err
}

// StreamEvents returns at most limit events of one agent's stream after
// position after, in position order. The inspector folds them into the
// agent's timeline.
func (s *Service) StreamEvents(ctx context.Context, taskID, agent string, after int64, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, Stream: taskID + agent, Limit: limit})
}

// NoteEvents is StreamNotes for the one note of agent at path.
func (s *Service) NoteEvents(ctx context.Context, taskID, agent, path string, after, until int64, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, Until: until, Stream: taskID + agent, Path: path, Limit: limit, Only: eventlog.OnlyNote})
}

// StreamNotes returns at most limit note.written and note.appended events
// of the notes an agent owns, after position after and up to position
// until, in position order. An until of 0 sets no bound.
func (s *Service) StreamNotes(ctx context.Context, taskID, agent string, after, until int64, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, Until: until, Stream: taskID + agent, Limit: limit, Only: eventlog.OnlyNotes})
}

// NoteSizes folds an agent's note events in (after, until] for the notes
// at paths (eventlog.Store.NoteSizes), for the inspector's notes as of a
// position.
func (s *Service) NoteSizes(ctx context.Context, taskID, agent string, after, until int64, paths []string) ([]eventlog.NoteSize, error) {
	return s.store.NoteSizes(ctx, taskID+agent, after, until, paths)
}

// TaskNotes lists every note of a task without its text, by owner and path,
// for the inspector's list of files.
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
// of an agent's stream at or after position from, or 0 if there is none.
// It is when an entry recorded at from went onto the agent's branch.
func (s *Service) BranchChangeFrom(ctx context.Context, taskID, agent string, from int64) (int64, error) {
	return s.store.BranchChangeFrom(ctx, taskID+agent, from)
}

// FencedStreamEvents is StreamEvents bounded by until like StreamNotes,
// keeping only the events the checkpoint fence folds, for the timeline.
func (s *Service) FencedStreamEvents(ctx context.Context, taskID, agent string, after, until int64, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, Until: until, Stream: taskID + agent, Limit: limit, Only: eventlog.OnlyFenced})
}

// StreamCalls returns the audit.tool_called events of an agent's stream
// before position before, at most limit, newest first.
func (s *Service) StreamCalls(ctx context.Context, taskID, agent string, before int64, limit int) ([]events.Event, error) {
	return s.store.StreamCallsBefore(ctx, taskID+agent, before, limit)
}

// StreamBounds returns the first and last positions of an agent's stream
// and its number of events, up to position until. All are 0 for a stream
// without events, and an until of 0 sets no bound.
func (s *Service) StreamBounds(ctx context.Context, taskID, agent string, until int64) (first, last, n int64, err error) {
	return s.store.StreamBounds(ctx, taskID+agent, until)
}
