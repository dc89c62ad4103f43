package memory

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/redact"
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

// SessionFile is one file of ImportSessions: the session Attach attaches,
// and the entries and branch to sync as that session's.
type SessionFile struct {
	Attach  AttachRequest
	Entries []json.RawMessage
	Branch  []string
}

// FileError is a refusal of one of the files of ImportSessions. File is
// its index; Err is what ImportSession would answer for that file alone,
// an *EntryError for one of its entries.
type FileError struct {
	File int
	Err  error
}

// Error returns the refusal's message, the same as for the file alone.
func (e *FileError) Error() string { return e.Err.Error() }

// Unwrap returns the refusal.
func (e *FileError) Unwrap() error { return e.Err }

// ImportSession attaches the session of req and syncs a session file's
// entries and then branch, all or nothing, in one transaction. An error
// about one entry is an *EntryError. progress, if set, gets the number of
// entries synced so far.
func (s *Service) ImportSession(ctx context.Context, req AttachRequest, entries []json.RawMessage, branch []string, progress func(int)) (SessionImport, error) {
	res, err := s.ImportSessions(ctx, []SessionFile{{Attach: req, Entries: entries, Branch: branch}}, progress)
	if fe, ok := err.(*FileError); ok { // not errors.As: a store error wrapped around it stays
		return SessionImport{}, fe.Err
	}
	if err != nil {
		return SessionImport{}, err
	}
	return res[0], nil
}

// ImportSessions is ImportSession for several files in one transaction, so
// that a session and its sub-agents are imported whole or not at all. The
// files are attached and synced in order; a later file whose
// Attach.Task has an empty TaskID joins the task of files[0], which the
// same transaction may create. Every file's entries are checked before
// anything is written. An error about one file is a *FileError; progress,
// if set, gets the number of entries synced so far, over all the files.
func (s *Service) ImportSessions(ctx context.Context, files []SessionFile, progress func(int)) ([]SessionImport, error) {
	if len(files) == 0 {
		return nil, invalidf("an import has at least one session file")
	}
	checked := make([]parsedFile, len(files))
	for i, f := range files {
		pf, err := parseSessionFile(f, s.redactor)
		if err != nil {
			return nil, &FileError{File: i, Err: err}
		}
		checked[i] = pf
	}
	out := make([]SessionImport, len(files))
	err := s.store.Update(ctx, "", func(tx *eventlog.Tx) error {
		synced := 0
		for i, f := range checked {
			if i > 0 && f.req.Task != nil && f.req.Task.TaskID == "" {
				t := *f.req.Task // the caller's TaskRef stays as it was
				t.TaskID = out[0].TaskID
				f.req.Task = &t
			}
			var report func(int)
			if progress != nil {
				report = func(n int) { progress(synced + n) }
			}
			res, err := s.importIn(ctx, tx, f, report)
			if err != nil {
				return &FileError{File: i, Err: err}
			}
			out[i] = res
			synced += len(f.entries)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Reclaim gives back the space an import's churn left in the database
// (eventlog.Store.Reclaim): on PostgreSQL the dead rows of the texts that
// waited for their chunk to seal, up to a quarter of a large import's
// database (docs/performance.md). The import verbs call it once they are
// done; memoryd may be serving the database meanwhile, and waits while
// the table is rewritten.
func (s *Service) Reclaim(ctx context.Context) error {
	return s.store.Reclaim(ctx, projections.ChurnTables)
}

// parsedFile is a SessionFile checked before the transaction.
type parsedFile struct {
	req     AttachRequest
	budget  events.Budget
	entries []syncEntry
	branch  []string
}

// parseSessionFile checks a file's attach and parses its entries as
// strictly as the API decodes a sync's; an entry given twice with the
// same content is kept once.
func parseSessionFile(f SessionFile, red *redact.Redactor) (parsedFile, error) {
	req := f.Attach
	if strings.TrimSpace(req.SessionKey) == "" {
		return parsedFile{}, invalidf("attach requires session_key")
	}
	if len(f.Branch) > MaxBranchLength {
		return parsedFile{}, invalidf("a branch has at most %d entries", MaxBranchLength)
	}
	budget, err := req.Budget.resolve()
	if err != nil {
		return parsedFile{}, err
	}
	parsed := make([]syncEntry, 0, len(f.Entries))
	seen := make(map[string]int, len(f.Entries)) // id → index in parsed
	for i, raw := range f.Entries {
		// Each entry is checked as strictly as the API decodes a sync's
		// body, where an entry is two levels down.
		var se *strictjson.Error
		if err := strictjson.Check(raw, nil, strictjson.MaxDepth-2); errors.As(err, &se) {
			return parsedFile{}, &EntryError{Index: i, Err: invalidf("%s", se.Describe("the entry"))}
		}
		e, problem := parseEntry(raw)
		if problem == "" {
			problem = redactEntry(&e, red)
		}
		if problem != "" {
			return parsedFile{}, &EntryError{Index: i, Err: invalidf("the entry %s", problem)}
		}
		e.index = i
		if j, dup := seen[e.id]; dup {
			if !sameEntry(parsed[j].raw, e.raw) {
				return parsedFile{}, &EntryError{Index: i, Err: conflictf("the entry id %q appears twice with different content", e.id)}
			}
			continue
		}
		seen[e.id] = len(parsed)
		parsed = append(parsed, e)
	}
	return parsedFile{req: req, budget: budget, entries: parsed, branch: f.Branch}, nil
}

// importIn attaches a checked file's session and syncs its entries, in
// chunks of MaxSyncEntries, and then its branch, inside tx.
func (s *Service) importIn(ctx context.Context, tx *eventlog.Tx, f parsedFile, progress func(int)) (SessionImport, error) {
	att, err := s.attachIn(ctx, tx, f.req, f.budget)
	if err != nil {
		return SessionImport{}, err
	}
	out := SessionImport{AttachResult: att}
	cc := CallContext{TaskID: att.TaskID, Agent: att.Agent}
	for start := 0; ; start += MaxSyncEntries {
		end := min(start+MaxSyncEntries, len(f.entries))
		chunk := SyncRequest{Context: cc}
		if end == len(f.entries) {
			chunk.Branch = &f.branch // with the last entries
		}
		res, err := syncIn(ctx, tx, chunk, f.entries[start:end], s.redactor)
		if err != nil {
			return SessionImport{}, err
		}
		out.Stored += res.Stored
		out.Unchanged += res.Unchanged
		out.Revision, out.WindowID = res.Revision, res.WindowID
		if progress != nil {
			progress(end)
		}
		if end == len(f.entries) {
			return out, nil
		}
	}
}
