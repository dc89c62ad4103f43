package memory

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/strictjson"
)

// SessionImport is the result of ImportSession.
type SessionImport struct {
	AttachResult
	Stored    int
	Unchanged int
	Revision  int64
	WindowID  string
}

// ImportSession attaches the session of req and syncs a session file's
// entries and then branch, all or nothing, in one transaction. An error
// about one entry is an *EntryError. progress, if set, gets the number of
// entries synced so far.
func (s *Service) ImportSession(ctx context.Context, req AttachRequest, entries []json.RawMessage, branch []string, progress func(int)) (SessionImport, error) {
	if strings.TrimSpace(req.SessionKey) == "" {
		return SessionImport{}, invalidf("attach requires session_key")
	}
	if len(branch) > MaxBranchLength {
		return SessionImport{}, invalidf("a branch has at most %d entries", MaxBranchLength)
	}
	budget, err := req.Budget.resolve()
	if err != nil {
		return SessionImport{}, err
	}
	parsed := make([]syncEntry, 0, len(entries))
	seen := make(map[string]int, len(entries)) // id → index in parsed
	for i, raw := range entries {
		// Each entry is checked as strictly as the API decodes a sync's
		// body, where an entry is two levels down.
		var se *strictjson.Error
		if err := strictjson.Check(raw, nil, strictjson.MaxDepth-2); errors.As(err, &se) {
			return SessionImport{}, &EntryError{Index: i, Err: invalidf("%s", se.Describe("the entry"))}
		}
		e, problem := parseEntry(raw)
		if problem != "" {
			return SessionImport{}, &EntryError{Index: i, Err: invalidf("the entry %s", problem)}
		}
		e.index = i
		if j, dup := seen[e.id]; dup {
			if !sameEntry(parsed[j].raw, e.raw) {
				return SessionImport{}, &EntryError{Index: i, Err: conflictf("the entry id %q appears twice with different content", e.id)}
			}
			continue
		}
		seen[e.id] = len(parsed)
		parsed = append(parsed, e)
	}
	var out SessionImport
	err = s.store.Update(ctx, "", func(tx *eventlog.Tx) error {
		att, err := s.attachIn(ctx, tx, req, budget)
		if err != nil {
			return err
		}
		out = SessionImport{AttachResult: att}
		cc := CallContext{TaskID: att.TaskID, Agent: att.Agent}
		for start := 0; ; start += MaxSyncEntries {
			end := min(start+MaxSyncEntries, len(parsed))
			chunk := SyncRequest{Context: cc}
			if end == len(parsed) {
				chunk.Branch = &branch // with the last entries
			}
			res, err := syncIn(ctx, tx, chunk, parsed[start:end])
			if err != nil {
				return err
			}
			out.Stored += res.Stored
			out.Unchanged += res.Unchanged
			out.Revision, out.WindowID = res.Revision, res.WindowID
			if progress != nil {
				progress(end)
			}
			if end == len(parsed) {
				return nil
			}
		}
	})
	if err != nil {
		return SessionImport{}, err
	}
	return out, nil
}
