package memory

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// CallTool runs one of the tools for the caller cc with the given JSON
// arguments. requestID is recorded on any event the call appends. When the
// read audit is on, the call is recorded after it returns.
func (s *Service) CallTool(ctx context.Context, name string, cc CallContext, args json.RawMessage, requestID string) (ToolResult, error) {
	if err := checkCallID(cc); err != nil {
		return ToolResult{}, err // before the audit, which would store the call_id
	}
	call := toolCall{name: name, cc: cc, args: args, requestID: requestID, gate: true, wantPosition: s.audit != nil}
	res, readAt, err := s.callTool(ctx, call)
	if s.audit != nil && tools.Known(name) {
		s.audit.record(name, cc, args, readAt, &res, err)
	}
	return res, err
}

// toolCall is one call of a tool, as CallTool and InspectTool pass it down.
type toolCall struct {
	name      string
	cc        CallContext
	args      json.RawMessage
	requestID string
	// gate lets the caller's checkpoint fence block a read tool. The
	// inspector's reads are not the agent's and are not gated.
	// notes_read_file and the writes are always gated.
	gate bool
	// wantPosition asks the call to report the log position it read at,
	// for the audit.
	wantPosition bool
	// past, when set, answers as of a past position (InspectToolAsOf).
	past *PastBranch
}

// callTool runs a tool and returns the log position it read at when
// call.wantPosition asks for it, or else 0.
func (s *Service) callTool(ctx context.Context, call toolCall) (ToolResult, int64, error) {
	name := call.name
	if !tools.Known(name) {
		return ToolResult{}, 0, notFoundf("unknown tool %q; GET /v1/tools lists the tools", name)
	}
	switch name {
	case tools.NotesListFilesByPrefix:
		return runRead(ctx, s, call, listNotes)
	case tools.NotesReadFile:
		return readNoteTool(ctx, s, call)
	case tools.NotesSearchContents:
		return runRead(ctx, s, call, searchNotes)
	case tools.NotesAppendToFile:
		return writeNoteTool(ctx, s, call, true)
	case tools.NotesWriteFile:
		return writeNoteTool(ctx, s, call, false)
	case tools.HistoryListWindows:
		return runRead(ctx, s, call, listWindows)
	case tools.HistoryListItems:
		return runRead(ctx, s, call, listItems)
	case tools.HistoryReadItem:
		return runRead(ctx, s, call, readItem)
	case tools.HistorySearchContents:
		return runRead(ctx, s, call, searchHistory)
	case tools.GetContextRemaining:
		return runRead(ctx, s, call, contextRemaining)
	case tools.NewContext:
		if err := decodeArgs(name, call.args, &struct{}{}); err != nil {
			return ToolResult{}, 0, err
		}
		return newContextTool(ctx, s, call)
	}
	return ToolResult{}, 0, newError(ErrUnavailable, "%s is not available in this build of memoryd yet", name)
}

// decodeArgs parses a call's arguments into v, checked against the tool's
// schema in the same pass.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	err := tools.Decode(tool, args, v)
	var ae *tools.ArgumentError
	if !errors.As(err, &ae) {
		return err
	}
	e := newError(ErrInvalidArgument, "%s", ae.Message)
	if ae.Field != "" {
		e.Details = map[string]any{"field": ae.Field}
	}
	return e
}

// runRead runs a read-only tool in one read transaction, so every query
// it makes sees the same snapshot.
func runRead[A any](ctx context.Context, s *Service, call toolCall,
	fn func(ctx context.Context, r *projections.Reader, c caller, args A) (ToolResult, error)) (ToolResult, int64, error) {
	var args A
	if err := decodeArgs(call.name, call.args, &args); err != nil {
		return ToolResult{}, 0, err
	}
	var res ToolResult
	readAt, err := s.readAt(ctx, call.wantPosition, false, func(r *projections.Reader) (int64, error) {
		c, err := identify(ctx, r, call.cc)
		if err != nil {
			return 0, err
		}
		if call.gate {
			if err := gateRead(c, call.name); err != nil {
				return c.readAt, err
			}
		}
		if call.past != nil {
			if err := call.past.apply(ctx, r, &c); err != nil {
				return c.readAt, err
			}
		}
		res, err = fn(ctx, r, c, args)
		return c.readAt, err
	})
	return res, readAt, err
}
