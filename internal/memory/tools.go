package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// CallTool runs one of the 11 tools for the caller cc with the given JSON
// arguments. requestID is recorded on any event the call appends. When the
// read audit is on, the call is recorded after it returns.
func (s *Service) CallTool(ctx context.Context, name string, cc CallContext, args json.RawMessage, requestID string) (ToolResult, error) {
	if err := checkCallID(cc); err != nil {
		return ToolResult{}, err // before the audit, which would store the call_id
	}
	var pos int64
	at := &pos // the position the call read at, for the audit
	if s.audit == nil {
		at = nil
	}
	res, err := s.callTool(ctx, name, cc, args, requestID, at, true)
	if s.audit != nil && tools.Known(name) {
		s.audit.record(name, cc, args, pos, &res, err)
	}
	return res, err
}

// callTool runs a tool and sets *pos (unless pos is nil) to the log
// position it read at. gate says whether the caller's checkpoint fence may
// block a read tool (the inspector's reads are not the agent's:
// InspectTool); notes_read_file and the writes are always gated.
func (s *Service) callTool(ctx context.Context, name string, cc CallContext, args json.RawMessage, requestID string, pos *int64, gate bool) (ToolResult, error) {
	if !tools.Known(name) {
		return ToolResult{}, notFoundf("unknown tool %q; GET /v1/tools lists the tools", name)
	}
	if err := tools.Validate(name, args); err != nil {
		var ae *tools.ArgumentError
		if errors.As(err, &ae) {
			e := newError(ErrInvalidArgument, "%s", ae.Message)
			if ae.Field != "" {
				e.Details = map[string]any{"field": ae.Field}
			}
			return ToolResult{}, e
		}
		return ToolResult{}, err
	}
	switch name {
	case tools.NotesListFilesByPrefix:
		return runRead(ctx, s, name, cc, args, pos, gate, listNotes)
	case tools.NotesReadFile:
		return readNoteTool(ctx, s, name, cc, args, pos)
	case tools.NotesSearchContents:
		return runRead(ctx, s, name, cc, args, pos, gate, searchNotes)
	case tools.NotesAppendToFile:
		return writeNoteTool(ctx, s, name, cc, args, requestID, true, pos)
	case tools.NotesWriteFile:
		return writeNoteTool(ctx, s, name, cc, args, requestID, false, pos)
	case tools.HistoryListWindows:
		return runRead(ctx, s, name, cc, args, pos, gate, listWindows)
	case tools.HistoryListItems:
		return runRead(ctx, s, name, cc, args, pos, gate, listItems)
	case tools.HistoryReadItem:
		return runRead(ctx, s, name, cc, args, pos, gate, readItem)
	case tools.HistorySearchContents:
		return runRead(ctx, s, name, cc, args, pos, gate, searchHistory)
	case tools.GetContextRemaining:
		return runRead(ctx, s, name, cc, args, pos, gate, contextRemaining)
	case tools.NewContext:
		if err := decodeArgs(name, args, &struct{}{}); err != nil {
			return ToolResult{}, err
		}
		return newContextTool(ctx, s, cc, requestID, pos)
	}
	return ToolResult{}, newError(ErrUnavailable, "%s is not available in this build of memoryd yet", name)
}

// decodeArgs decodes validated arguments into v.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidf("%s: arguments do not match the schema", tool)
	}
	return nil
}

// runRead runs a read-only tool in one read transaction, so every query
// it makes sees the same snapshot; gate says whether the caller's
// checkpoint fence may block it.
func runRead[A any](ctx context.Context, s *Service, name string, cc CallContext, raw json.RawMessage, pos *int64, gate bool,
	fn func(ctx context.Context, r *projections.Reader, c caller, args A) (ToolResult, error)) (ToolResult, error) {
	var args A
	if err := decodeArgs(name, raw, &args); err != nil {
		return ToolResult{}, err
	}
	var res ToolResult
	err := s.readAt(ctx, pos, false, func(r *projections.Reader) error {
		c, err := identify(ctx, r, cc)
		if err != nil {
			return err
		}
		if gate {
			if err := gateRead(c, name); err != nil {
				return err
			}
		}
		res, err = fn(ctx, r, c, args)
		return err
	})
	return res, err
}
