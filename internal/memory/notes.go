package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// Notes limits, as docs/behaviour.md §G sets them.
const (
	defaultNotesListMax   = 100
	maxNotesListMax       = 500
	defaultSearchFiles    = 50
	maxSearchFiles        = 500
	defaultSearchMatches  = 10
	maxSearchMatches      = 100
	searchLineChars       = 300
	maxOffsetChars        = 10_000_000
	indexOutputCharsLimit = 6000
	notesHint             = "narrow the prefix or lower max_results"
	notesSearchHint       = "narrow path_prefix or the query, or lower max_files"
)

// listBudget is the text budget of list and search results, the agent's
// max_tool_output_chars capped at indexOutputCharsLimit.
func listBudget(b events.Budget) int {
	return int(min(b.MaxToolOutputChars, indexOutputCharsLimit))
}

// noteOwner checks that the owner of a note path or prefix is an agent
// of the caller's task.
func noteOwner(ctx context.Context, r *projections.Reader, c caller, agent string) error {
	if agent == c.agent.Agent {
		return nil
	}
	_, err := target(ctx, r, c.taskID, agent)
	return err
}

// parseNotePath resolves a note path given by the agent current, the
// caller's context.agent, which identify checks.
func parseNotePath(tool, current, p string) (address.NotePath, error) {
	np, err := address.ParseNotePath(current, p)
	if err != nil {
		return np, invalidf("%s: %s", tool, addressMessage(err))
	}
	return np, nil
}

func parsePrefix(tool, field string, c caller, p *string) (address.NotePath, error) {
	prefix := ""
	if p != nil {
		prefix = *p
	}
	np, err := address.ParsePrefix(c.agent.Agent, prefix)
	if err != nil {
		return np, invalidf("%s: %s: %s", tool, field, addressMessage(err))
	}
	return np, nil
}

type listNotesArgs struct {
	Prefix      *string `json:"prefix"`
	MaxResults  *count  `json:"max_results"`
	FileOrderBy *string `json:"file_order_by"`
	FileOrder   *string `json:"file_order"`
}

// listNotes is notes_list_files_by_prefix.
func listNotes(ctx context.Context, r *projections.Reader, c caller, a listNotesArgs) (ToolResult, error) {
	np, err := parsePrefix("notes_list_files_by_prefix", "prefix", c, a.Prefix)
	if err != nil {
		return ToolResult{}, err
	}
	if err := noteOwner(ctx, r, c, np.Agent); err != nil {
		return ToolResult{}, err
	}
	infos, err := r.Notes(ctx, c.taskID, np.Agent, np.Path)
	if err != nil {
		return ToolResult{}, err
	}
	orderBy, order := "name", "ascending"
	if a.FileOrderBy != nil {
		orderBy = *a.FileOrderBy
	}
	if a.FileOrder != nil {
		order = *a.FileOrder
	}
	switch orderBy {
	case "created_at":
		slices.SortStableFunc(infos, func(x, y projections.NoteInfo) int { return int(x.CreatedPosition - y.CreatedPosition) })
	case "updated_at":
		slices.SortStableFunc(infos, func(x, y projections.NoteInfo) int { return int(x.UpdatedPosition - y.UpdatedPosition) })
	}
	if order == "descending" {
		slices.Reverse(infos)
	}
	infos, omitted := limitList(infos, limitOr(a.MaxResults, defaultNotesListMax, maxNotesListMax))
	files := make([]tools.NoteFile, len(infos))
	for i, n := range infos {
		files[i] = tools.NoteFile{Path: address.Full(np.Agent, n.Path), Bytes: n.Bytes, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt}
	}
	if len(files) == 0 && omitted == 0 {
		return textResult(compactJSON(map[string]any{"n_returned": 0, "note": "no note files match"}),
			tools.NotesListFilesByPrefixDetails{Files: files}), nil
	}
	text, shown, omitted := fitList(files, listBudget(c.agent.Budget), omitted, notesHint)
	return textResult(text, tools.NotesListFilesByPrefixDetails{Files: shown, NReturned: len(shown), Omitted: omitted}), nil
}

type readNoteArgs struct {
	Path        string `json:"path"`
	StartLine   *count `json:"start_line"`
	StopLine    *count `json:"stop_line"`
	OffsetChars *count `json:"offset_chars"`
	LimitChars  *count `json:"limit_chars"`
}

// readNoteTool is notes_read_file, a read tool whose caller and note come in
// one query, or from the note cache when nothing was committed since.
func readNoteTool(ctx context.Context, s *Service, call toolCall) (ToolResult, int64, error) {
	name, cc := call.name, call.cc
	var a readNoteArgs
	if err := decodeArgs(name, call.args, &a); err != nil {
		return ToolResult{}, 0, err
	}
	// The path is parsed once, before the transaction. One that does not
	// parse is refused after the caller is identified and let through the
	// fence, as the other read tools refuse theirs.
	np, pathErr := parseNotePath(name, cc.Agent, a.Path)
	var res ToolResult
	readAt, err := s.readAt(ctx, call.wantPosition, pathErr == nil, func(r *projections.Reader) (int64, error) {
		var n projections.Note
		found := false
		c, err := identifyWith(ctx, r, cc, func() (projections.AgentState, error) {
			if pathErr != nil {
				return r.AgentWithState(ctx, cc.TaskID, cc.Agent)
			}
			as, note, ok, err := r.AgentWithNote(ctx, cc.TaskID, cc.Agent, np)
			n, found = note, ok
			return as, err
		})
		if err != nil {
			return 0, err
		}
		if err := gateRead(c, name); err != nil {
			return c.readAt, err
		}
		if pathErr != nil {
			return c.readAt, pathErr
		}
		var note *projections.Note // nil when there is no note
		if found {
			note = &n
		}
		res, err = readNote(ctx, r, c, a, np, note)
		return c.readAt, err
	})
	return res, readAt, err
}

// readNote answers notes_read_file from the note n at np, which is nil when
// there is none. It selects lines first, then code points.
func readNote(ctx context.Context, r *projections.Reader, c caller, a readNoteArgs, np address.NotePath, n *projections.Note) (ToolResult, error) {
	if err := noteOwner(ctx, r, c, np.Agent); err != nil {
		return ToolResult{}, err
	}
	if n == nil {
		return ToolResult{}, notFoundf("no note file at %q", np.Full())
	}
	total := strings.Count(n.Content, "\n") + 1
	lineArg := func(c *count, def int) int {
		if c == nil {
			return def
		}
		v := int64(*c)
		if v < 0 {
			v = int64(total) + 1 + v
		}
		return int(max(min(v, int64(total)+1), -1))
	}
	start := max(lineArg(a.StartLine, 1), 1)
	stop := min(lineArg(a.StopLine, total), total)
	if start > stop {
		return ToolResult{}, invalidf("line range %d..%d is empty for %q (it has %d lines)", start, stop, np.Full(), total)
	}
	sel := lineSpan(n.Content, start, stop)
	d := tools.NotesReadFileDetails{Path: np.Full(), StartLine: start, StopLine: stop, TotalLines: total, TotalChars: chars(sel)}
	d.OffsetChars = min(limitOr(a.OffsetChars, 0, maxOffsetChars), d.TotalChars)
	limit := -1
	if a.LimitChars != nil {
		limit = int(min(int64(*a.LimitChars), int64(maxOffsetChars)))
	}
	pg, text := fitPage(sel, d.OffsetChars, d.TotalChars, limit, int(c.agent.Budget.MaxToolOutputChars), func(p textPage) string {
		d.EndChars, d.NextOffsetChars = p.End, p.Next
		return readNoteHeader(&d) // d's fields without its text
	})
	d.EndChars, d.NextOffsetChars = pg.End, pg.Next
	d.Text = sliceChars(sel, d.OffsetChars, d.EndChars-d.OffsetChars)
	return textResult(text, d), nil
}

// lineSpan returns lines start to stop of s, counted from 1 and both within
// the text, as strings.Split's lines joined back without building them.
func lineSpan(s string, start, stop int) string {
	i := 0
	for range start - 1 {
		i += strings.IndexByte(s[i:], '\n') + 1
	}
	j := i
	for range stop - start + 1 {
		e := strings.IndexByte(s[j:], '\n')
		if e < 0 {
			return s[i:]
		}
		j += e + 1
	}
	return s[i : j-1]
}

// textPage is a fragment of a text and where the next one starts.
type textPage struct {
	Offset, End int  // in code points, End excluded
	Next        *int // nil when the text ends with this fragment
}

// fitPage fits a header line and the fragment of body from offset into
// budget code points, and returns the page and "header\nfragment".
// The header function makes each page's header, which is always whole.
func fitPage(body string, offset, total, limit, budget int, header func(textPage) string) (textPage, string) {
	n := total - offset
	if limit >= 0 {
		n = min(n, limit)
	}
	for {
		p := textPage{Offset: offset, End: offset + n}
		if p.End < total {
			next := p.End
			p.Next = &next
		}
		h := header(p) // of the fragment as it now is
		room := budget - chars(h) - 1
		if n <= room || n <= 1 { // at least one content character goes out, if any is left
			return p, h + "\n" + sliceChars(body, offset, n)
		}
		n = max(room, 1) // shrinking n can lengthen the header, so check again
	}
}

type searchNotesArgs struct {
	Query             string  `json:"query"`
	PathPrefix        *string `json:"path_prefix"`
	MaxFiles          *count  `json:"max_files"`
	MaxMatchesPerFile *count  `json:"max_matches_per_file"`
	RecentFileFirst   *bool   `json:"recent_file_first"`
}

// searchNotes is notes_search_contents, a literal, case-sensitive search by line.
func searchNotes(ctx context.Context, r *projections.Reader, c caller, a searchNotesArgs) (ToolResult, error) {
	np, err := parsePrefix("notes_search_contents", "path_prefix", c, a.PathPrefix)
	if err != nil {
		return ToolResult{}, err
	}
	if err := noteOwner(ctx, r, c, np.Agent); err != nil {
		return ToolResult{}, err
	}
	found, err := r.SearchNotes(ctx, c.taskID, np.Agent, np.Path, a.Query)
	if err != nil {
		return ToolResult{}, err
	}
	if a.RecentFileFirst != nil && *a.RecentFileFirst {
		slices.SortStableFunc(found, func(x, y projections.NoteMatch) int { return int(y.CreatedPosition - x.CreatedPosition) })
	}
	maxFiles := limitOr(a.MaxFiles, defaultSearchFiles, maxSearchFiles)
	maxMatches := limitOr(a.MaxMatchesPerFile, defaultSearchMatches, maxSearchMatches)
	var files []tools.NoteSearchFile
	omitted := 0
	for _, f := range found {
		var ms []tools.NoteLineMatch
		hits := 0
		for i, line := range strings.Split(f.Content, "\n") {
			if !strings.Contains(line, a.Query) {
				continue
			}
			hits++
			if len(ms) < maxMatches {
				if chars(line) > searchLineChars {
					line = sliceChars(line, 0, searchLineChars-1) + "…"
				}
				ms = append(ms, tools.NoteLineMatch{Line: i + 1, Text: line})
			}
		}
		if hits == 0 {
			continue // the query spans lines, so no line matches
		}
		if len(files) == maxFiles {
			omitted++
			continue
		}
		files = append(files, tools.NoteSearchFile{Path: address.Full(np.Agent, f.Path), CreatedAt: f.CreatedAt,
			Matches: ms, OmittedMatches: hits - len(ms)})
	}
	if len(files) == 0 {
		return textResult(compactJSON(map[string]any{"n_returned": 0, "note": "no matches for " + compactJSON(a.Query)}),
			tools.NotesSearchContentsDetails{Files: []tools.NoteSearchFile{}}), nil
	}
	budget := listBudget(c.agent.Budget)
	lines := jsonLines(files)
	text, shown, omittedAll := fitRendered(files, lines, budget, omitted, notesSearchHint)
	if kept := len(shown); kept < len(files) {
		// The first file left out may still fit with fewer matches.
		f := files[kept]
		for len(f.Matches) > 1 {
			f.OmittedMatches++
			f.Matches = f.Matches[:len(f.Matches)-1]
			trial := append(slices.Clone(shown), f)
			trialLines := append(slices.Clone(lines[:kept]), compactJSON(f))
			if t, s, o := fitRendered(trial, trialLines, budget, omitted+len(files)-kept-1, notesSearchHint); len(s) == kept+1 {
				text, shown, omittedAll = t, s, o
				break
			}
		}
	}
	return textResult(text, tools.NotesSearchContentsDetails{Files: shown, NReturned: len(shown), Omitted: omittedAll}), nil
}

type writeNoteArgs struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// writeNoteTool is notes_append_to_file in appendMode and notes_write_file
// otherwise. A write is idempotent per task, calling agent and call_id.
func writeNoteTool(ctx context.Context, s *Service, call toolCall, appendMode bool) (ToolResult, int64, error) {
	name, cc := call.name, call.cc
	var a writeNoteArgs
	if err := decodeArgs(name, call.args, &a); err != nil {
		return ToolResult{}, 0, err
	}
	// A secret in the text is stored as its marker (docs/redaction.md),
	// before the request key, so that a retry matches its first call.
	if s.redactor != nil {
		a.Text, _ = s.redactor.Text(a.Text)
	}
	// The path is parsed once, before the transaction; one that does not
	// parse is refused after the caller is identified and gated.
	np, pathErr := parseNotePath(name, cc.Agent, a.Path)
	key := requestKey(name, np.Full(), a.Text)
	var res projections.NoteWriteResult
	terminate := false
	var readAt int64
	err := s.store.Update(ctx, requestIDOr(call.requestID, cc.CallID), func(tx *eventlog.Tx) error {
		defer func() {
			if call.wantPosition {
				readAt, _ = tx.Position(ctx)
			}
		}()
		r := projections.TxReader(tx)
		// The caller's row, the note's size and the call_id's first
		// result in one query.
		var ws projections.NoteWriteState
		c, err := identifyWith(ctx, r, cc, func() (projections.AgentState, error) {
			if pathErr != nil {
				return r.AgentWithState(ctx, cc.TaskID, cc.Agent)
			}
			as, w, err := r.AgentWithNoteWrite(ctx, cc.TaskID, cc.Agent, np, cc.CallID)
			ws = w
			return as, err
		})
		if err != nil {
			return err
		}
		st := c.state
		if pathErr == nil && ws.Called {
			if ws.RequestKey != key {
				return conflictf("call_id %q was already used for a different request", c.callID)
			}
			res, terminate = ws.Result, st.CheckpointCallID == c.callID
			return nil
		}
		// The fence admits one write to the caller's own notes; an invalid
		// path counts as its own, so that its failure releases the claim.
		verdict, reason := st.Gate(c.callID, pathErr != nil || np.Agent == c.agent.Agent)
		if verdict == fence.Blocked {
			return fencedError(name, reason)
		}
		if pathErr != nil {
			return pathErr
		}
		// The cap is the note owner's, whoever writes.
		owner := c.agent
		if np.Agent != c.agent.Agent {
			if owner, err = target(ctx, r, c.taskID, np.Agent); err != nil {
				return err
			}
		}
		size, revision := ws.Size, ws.Revision
		if err := checkCapacity(notesCap(owner.Budget), np, size, a.Text, appendMode); err != nil {
			return err
		}
		note := events.NoteWritten{TaskID: c.taskID, Agent: np.Agent, Path: np.Path,
			Text: a.Text, By: c.agent.Agent, CallID: c.callID, RequestKey: key}
		ev := events.NewPending(note)
		if appendMode {
			ev = events.NewPending(events.NoteAppended(note))
		}
		if _, err := tx.Append(ctx, events.Stream(c.taskID, np.Agent), eventlog.AnyVersion, ev); err != nil {
			return err
		}
		if verdict == fence.Admitted {
			if err := appendOwn(ctx, tx, c, fence.Checkpoint(ref(c), st, c.callID, np.Full()).Events); err != nil {
				return err
			}
			terminate = true
		}
		res = projections.WriteResult(np.Full(), size, revision, a.Text, appendMode)
		return nil
	})
	if err != nil {
		return ToolResult{}, readAt, err
	}
	// The stored result becomes the tool's. The two types have the same
	// fields but are kept apart, so that the stored form can change without
	// changing the API.
	d := tools.NoteWriteDetails(res)
	out := textResult(compactJSON(d), d)
	out.Terminate = terminate
	return out, readAt, nil
}

// checkCapacity refuses a write that would make the note exceed limit, its
// owner's cap in UTF-8 bytes. existing is the note's current size.
func checkCapacity(limit int64, np address.NotePath, existing int64, text string, appendMode bool) error {
	size := int64(len(text))
	if !appendMode {
		if size <= limit {
			return nil
		}
		e := newError(ErrTooLarge, "content is %d bytes; note files must stay at or below %d bytes. Write a smaller file, split it across several files, or prune obsolete notes first.", size, limit)
		e.Details = map[string]any{"bytes": size, "limit": limit, "remaining": limit}
		return e
	}
	if existing+size <= limit {
		return nil
	}
	remaining := max(0, limit-existing)
	e := newError(ErrTooLarge, "append would grow %q to %d bytes; note files must stay at or below %d bytes (only %d bytes left in this file). Append less, or continue in another file.", np.Full(), existing+size, limit, remaining)
	e.Details = map[string]any{"bytes": existing + size, "limit": limit, "remaining": remaining}
	return e
}

// requestKey fingerprints a note write for idempotency checks.
func requestKey(tool, fullPath, text string) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write([]byte(fullPath))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}

func requestIDOr(requestID, callID string) string {
	if callID != "" {
		return callID
	}
	return requestID
}
