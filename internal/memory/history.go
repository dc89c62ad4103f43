package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections"
)

// History limits (seed-behaviour G).
const (
	defaultHistoryListLimit   = 50
	defaultHistorySearchLimit = 20
	maxHistoryLimit           = 200
	maxSearchRegions          = 3
	maxReadLimitChars         = 100_000
	historyHint               = "narrow window_id, role or tool filters, or lower limit"
	// MaxSyncEntries and MaxBranchLength bound one sync request.
	MaxSyncEntries  = 10_000
	MaxBranchLength = 1_000_000
)

// SyncRequest is the body of POST /v1/history/sync.
type SyncRequest struct {
	Context          CallContext       `json:"context"`
	Entries          []json.RawMessage `json:"entries"`
	Branch           *[]string         `json:"branch"`
	ExpectedRevision *int64            `json:"expected_revision"`
}

// SyncResult is the response of a sync.
type SyncResult struct {
	Revision  int64  `json:"revision"`
	Stored    int    `json:"stored"`
	Unchanged int    `json:"unchanged"`
	WindowID  string `json:"window_id"`
}

type syncEntry struct {
	id    string
	raw   json.RawMessage // compact
	index int             // in the entries it was parsed from
}

// EntryError is a refusal of one of the entries of a sync or a session
// import: Index is its place among them.
type EntryError struct {
	Index int
	Err   error
}

func (e *EntryError) Error() string { return e.Err.Error() }
func (e *EntryError) Unwrap() error { return e.Err }

// sameEntry reports whether two entries are equal after JSON
// canonicalisation (the equality of a re-sent entry).
func sameEntry(a, b []byte) bool {
	ca, err := history.Canonical(a)
	if err != nil {
		return false
	}
	cb, err := history.Canonical(b)
	return err == nil && bytes.Equal(ca, cb)
}

// parseEntries validates raw entries: JSON objects with a non-empty id.
func parseEntries(raws []json.RawMessage) ([]syncEntry, error) {
	out := make([]syncEntry, 0, len(raws))
	seen := make(map[string]int, len(raws)) // id → index in out
	for i, raw := range raws {
		e, problem := parseEntry(raw)
		if problem != "" {
			return nil, invalidf("entries[%d] %s", i, problem)
		}
		e.index = i
		if j, dup := seen[e.id]; dup {
			if !sameEntry(out[j].raw, e.raw) {
				return nil, conflictf("entries has id %q twice with different content", e.id)
			}
			continue
		}
		seen[e.id] = len(out)
		out = append(out, e)
	}
	return out, nil
}

// parseEntry applies a sync's rules to one raw entry, or says what it
// breaks, after the entry's name ("entries[3] has no id").
func parseEntry(raw json.RawMessage) (syncEntry, string) {
	var head struct {
		ID   *string `json:"id"`
		Type *string `json:"type"`
	}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' || json.Unmarshal(raw, &head) != nil {
		return syncEntry{}, "must be a JSON object (a Pi session entry)"
	}
	if head.ID == nil || *head.ID == "" {
		return syncEntry{}, "has no id"
	}
	if head.Type == nil || *head.Type == "" {
		return syncEntry{}, fmt.Sprintf("(id %q) has no type", *head.ID)
	}
	if !utf8.ValidString(*head.ID) || len(*head.ID) > 256 {
		return syncEntry{}, "has an id that is not short valid UTF-8"
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return syncEntry{}, fmt.Sprintf("(id %q) is not valid JSON", *head.ID)
	}
	return syncEntry{id: *head.ID, raw: compact.Bytes()}, ""
}

// Sync stores new raw entries of the caller's session and replaces its
// current branch, all in one transaction (API §4).
func (s *Service) Sync(ctx context.Context, req SyncRequest, requestID string) (SyncResult, error) {
	if len(req.Entries) > MaxSyncEntries {
		return SyncResult{}, invalidf("a sync carries at most %d entries; send %d in several syncs (the branch with the last)", MaxSyncEntries, len(req.Entries))
	}
	if req.Branch != nil && len(*req.Branch) > MaxBranchLength {
		return SyncResult{}, invalidf("a branch has at most %d entries", MaxBranchLength)
	}
	entries, err := parseEntries(req.Entries)
	if err != nil {
		return SyncResult{}, err
	}
	var res SyncResult
	err = s.store.Update(ctx, requestID, func(tx *events.Tx) error {
		var err error
		res, err = syncIn(ctx, tx, req, entries)
		return err
	})
	if err != nil {
		return SyncResult{}, err
	}
	return res, nil
}

// syncIn is Sync in tx, of the entries parsed from req.Entries.
func syncIn(ctx context.Context, tx *events.Tx, req SyncRequest, entries []syncEntry) (SyncResult, error) {
	var res SyncResult
	r := projections.NewReader(tx.DB())
	c, err := identify(ctx, r, req.Context)
	if err != nil {
		return res, err
	}
	task, agent := c.taskID, c.agent.Agent
	revision, _, err := r.Branch(ctx, task, agent)
	if err != nil {
		return res, err
	}
	if req.ExpectedRevision != nil && *req.ExpectedRevision != revision {
		return res, conflictf("expected_revision is %d but the branch is at revision %d; sync again from the current branch", *req.ExpectedRevision, revision)
	}
	known := make(map[string]bool, len(entries))
	var pending []events.Pending
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.id
	}
	stored, err := r.StoredEntries(ctx, task, agent, ids)
	if err != nil {
		return res, err
	}
	for _, e := range entries {
		known[e.id] = true
		if !stored[e.id] {
			pending = append(pending, events.Pending{Type: events.TypeHistoryEntryRecorded,
				Data: events.HistoryEntryRecorded{TaskID: task, Agent: agent, EntryID: e.id, Entry: e.raw}})
			res.Stored++
			continue
		}
		raw, err := r.EntryRaw(ctx, task, agent, e.id)
		if err != nil {
			return res, err
		}
		if !sameEntry(raw, e.raw) {
			return res, &EntryError{Index: e.index, Err: conflictf("entry %q was already synced with different content; entries are immutable", e.id)}
		}
		res.Unchanged++
	}
	res.Revision = revision
	if req.Branch != nil {
		change, err := branchChange(ctx, r, task, agent, *req.Branch, known)
		if err != nil {
			return res, err
		}
		if change != nil {
			change.Revision = revision + 1
			res.Revision = change.Revision
			pending = append(pending, events.Pending{Type: events.TypeHistoryBranchChanged, Data: *change})
		}
	}
	if len(pending) > 0 {
		stream := events.Stream(task, agent)
		version, err := tx.StreamVersion(ctx, stream)
		if err != nil {
			return res, err
		}
		if _, err := tx.Append(ctx, stream, version, pending...); err != nil {
			return res, err
		}
	}
	res.WindowID, err = r.LastWindow(ctx, task, agent)
	return res, err
}

// branchChange validates a new branch and returns it as a delta from the
// current one, or nil when it is the same. Only the ids past the prefix
// it shares with the current branch are looked up (the prefix is stored
// already), so a long branch re-sent with a few new entries costs a few
// lookups.
func branchChange(ctx context.Context, r *projections.Reader, task, agent string, branch []string, sentNow map[string]bool) (*events.HistoryBranchChanged, error) {
	_, current, err := r.Branch(ctx, task, agent)
	if err != nil {
		return nil, err
	}
	hashes := make([][]byte, len(branch))
	prev := []byte{}
	for i, id := range branch {
		prev = projections.BranchPrefixHash(prev, id)
		hashes[i] = prev
	}
	keep, err := r.SharedPrefix(ctx, task, agent, hashes, current)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(branch))
	var lookup []string // ids past the shared prefix not sent now
	for i, id := range branch {
		if seen[id] {
			return nil, invalidf("branch lists entry %q twice (branch[%d])", id, i)
		}
		seen[id] = true
		if i >= keep && !sentNow[id] {
			lookup = append(lookup, id)
		}
	}
	stored, err := r.StoredEntries(ctx, task, agent, lookup)
	if err != nil {
		return nil, err
	}
	for i, id := range branch[keep:] {
		if !sentNow[id] && !stored[id] {
			return nil, invalidf("branch[%d] names entry %q, which was never synced; send it in entries", keep+i, id)
		}
	}
	if int64(keep) == current && keep == len(branch) {
		return nil, nil
	}
	return &events.HistoryBranchChanged{TaskID: task, Agent: agent, Keep: int64(keep),
		Append: slices.Clone(branch[keep:]), Length: int64(len(branch))}, nil
}

// historyTarget resolves agent_name to an agent of the caller's task.
func historyTarget(ctx context.Context, r *projections.Reader, c caller, tool string, name *string) (string, error) {
	n := ""
	if name != nil {
		n = *name
	}
	addr, err := address.Resolve(c.agent.Agent, n)
	if err != nil {
		return "", invalidf("%s: agent_name: %s", tool, addressMessage(err))
	}
	if addr == c.agent.Agent {
		return addr, nil
	}
	if _, err := target(ctx, r, c.taskID, addr); err != nil {
		return "", err
	}
	return addr, nil
}

func optString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

type listWindowsArgs struct {
	AgentName   *string `json:"agent_name"`
	Limit       *count  `json:"limit"`
	RecentFirst *bool   `json:"recent_first"`
}

type windowRecord struct {
	WindowID  string `json:"window_id"`
	ItemCount int64  `json:"item_count"`
	Current   bool   `json:"current"`
}

type listWindowsDetails struct {
	Windows   []windowRecord `json:"windows"`
	NReturned int            `json:"n_returned"`
	Omitted   int            `json:"omitted"`
}

// listWindows is history_list_windows.
func listWindows(ctx context.Context, r *projections.Reader, c caller, a listWindowsArgs) (ToolResult, error) {
	agent, err := historyTarget(ctx, r, c, "history_list_windows", a.AgentName)
	if err != nil {
		return ToolResult{}, err
	}
	ws, err := r.Windows(ctx, c.taskID, agent)
	if err != nil {
		return ToolResult{}, err
	}
	recs := make([]windowRecord, len(ws))
	for i, w := range ws {
		recs[i] = windowRecord{WindowID: w.ID, ItemCount: w.ItemCount, Current: i == len(ws)-1}
	}
	if a.RecentFirst != nil && *a.RecentFirst {
		slices.Reverse(recs)
	}
	if len(recs) == 0 {
		return textResult(compactJSON(map[string]any{"n_returned": 0, "note": "no history windows yet"}),
			listWindowsDetails{Windows: recs}), nil
	}
	limit := limitOr(a.Limit, defaultHistoryListLimit, maxHistoryLimit)
	omitted := max(0, len(recs)-limit)
	recs = recs[:min(len(recs), limit)]
	lines := make([]string, len(recs))
	for i := range recs {
		lines[i] = compactJSON(recs[i])
	}
	kept, text := fitLines(lines, listBudget(c.agent.Budget), omitted, "lower limit or use recent_first")
	return textResult(text, listWindowsDetails{Windows: recs[:kept], NReturned: kept, Omitted: omitted + len(recs) - kept}), nil
}

// itemFilter is the common filter of history_list_items and
// history_search_contents.
type itemFilter struct {
	windowID, role, namespace, name string
	selfCallID                      string // the in-flight call, excluded
}

func (f itemFilter) match(it projections.Item) bool {
	if f.windowID != "" && it.WindowID != f.windowID {
		return false
	}
	if f.role != "" && it.Role != f.role {
		return false
	}
	if f.selfCallID != "" {
		if it.ToolCallID == f.selfCallID {
			return false
		}
		for _, call := range it.Calls {
			if call.ID == f.selfCallID {
				return false
			}
		}
	}
	if f.namespace == "" && f.name == "" {
		return !it.Hidden
	}
	matches := func(ns, name string) bool {
		return name != "" && (f.namespace == "" || f.namespace == ns) && (f.name == "" || history.NameMatches(f.name, name))
	}
	if len(it.Calls) > 0 {
		for _, call := range it.Calls {
			if matches(history.Namespace(call.Name), call.Name) {
				return true
			}
		}
		return false
	}
	return matches(it.ToolNamespace, it.ToolName)
}

func newItemFilter(c caller, agent string, window, role, ns, name *string) itemFilter {
	f := itemFilter{windowID: optString(window), role: optString(role), namespace: optString(ns), name: optString(name)}
	if agent == c.agent.Agent {
		f.selfCallID = c.callID
	}
	return f
}

// orderedItems returns the items in output order, filtered.
func orderedItems(items []projections.Item, f itemFilter, recentFirst *bool) []projections.Item {
	out := items[:0:0]
	for _, it := range items {
		if f.match(it) {
			out = append(out, it)
		}
	}
	if recentFirst != nil && *recentFirst {
		slices.Reverse(out)
	}
	return out
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type listItemsArgs struct {
	AgentName       *string `json:"agent_name"`
	WindowID        *string `json:"window_id"`
	Role            *string `json:"role"`
	ToolNamespace   *string `json:"tool_namespace"`
	ToolName        *string `json:"tool_name"`
	Limit           *count  `json:"limit"`
	RecentFirst     *bool   `json:"recent_first"`
	MaxCharsPerItem *count  `json:"max_chars_per_item"`
}

type itemRecord struct {
	ItemID           string  `json:"item_id"`
	WindowID         string  `json:"window_id"`
	Role             string  `json:"role"`
	ToolNamespace    *string `json:"tool_namespace"`
	ToolName         *string `json:"tool_name"`
	NChars           int64   `json:"n_chars"`
	Images           int64   `json:"images"`
	TruncatedContent string  `json:"truncated_content"`
}

type listItemsDetails struct {
	Results   []itemRecord `json:"results"`
	NReturned int          `json:"n_returned"`
	Omitted   int          `json:"omitted"`
}

// listItems is history_list_items.
func listItems(ctx context.Context, r *projections.Reader, c caller, a listItemsArgs) (ToolResult, error) {
	agent, err := historyTarget(ctx, r, c, "history_list_items", a.AgentName)
	if err != nil {
		return ToolResult{}, err
	}
	// Walk the branch in output order keeping the first limit matches and
	// counting the rest: memory stays bounded on a long history.
	f := newItemFilter(c, agent, a.WindowID, a.Role, a.ToolNamespace, a.ToolName)
	limit := limitOr(a.Limit, defaultHistoryListLimit, maxHistoryLimit)
	var items []projections.Item
	total := 0
	err = r.EachItem(ctx, c.taskID, agent, a.RecentFirst != nil && *a.RecentFirst, func(it projections.Item) (bool, error) {
		if f.match(it) {
			if total++; len(items) < limit {
				items = append(items, it)
			}
		}
		return true, nil
	})
	if err != nil {
		return ToolResult{}, err
	}
	if total == 0 {
		return textResult(compactJSON(map[string]any{"n_returned": 0, "note": "no history items match"}),
			listItemsDetails{Results: []itemRecord{}}), nil
	}
	preview := limitOr(a.MaxCharsPerItem, int(c.agent.Budget.HistoryItemPreviewChars), maxReadLimitChars)
	omitted := total - len(items)
	budget := listBudget(c.agent.Budget)
	// Room a record may take: the budget less the omission line, so that a
	// long preview is cut to fit rather than its whole record dropped.
	room := budget - chars(omissionLine(omitted+len(items), historyHint)) - 1
	recs := make([]itemRecord, 0, len(items))
	lines := make([]string, 0, len(items))
	used := 0
	for _, it := range items {
		text, _, err := r.ItemText(ctx, c.taskID, agent, it.EntryID)
		if err != nil {
			return ToolResult{}, err
		}
		rec := itemRecord{ItemID: it.EntryID, WindowID: it.WindowID, Role: it.Role,
			ToolNamespace: nullable(it.ToolNamespace), ToolName: nullable(it.ToolName),
			NChars: it.NChars, Images: it.Images, TruncatedContent: sliceChars(text, 0, preview)}
		line := compactJSON(rec)
		for over := chars(line) - room; over > 0 && rec.TruncatedContent != ""; over = chars(line) - room {
			// Escaping makes a line at least as long as its preview: cutting
			// over code points brings it within room in a pass or two.
			rec.TruncatedContent = sliceChars(rec.TruncatedContent, 0, max(0, chars(rec.TruncatedContent)-over))
			line = compactJSON(rec)
		}
		recs, lines = append(recs, rec), append(lines, line)
		if used += chars(line) + 1; used > budget {
			break // the rest cannot fit: fitLines counts them as omitted
		}
	}
	omitted += len(items) - len(recs)
	kept, text := fitLines(lines, budget, omitted, historyHint)
	return textResult(text, listItemsDetails{Results: recs[:kept], NReturned: kept, Omitted: omitted + len(recs) - kept}), nil
}

type readItemArgs struct {
	AgentName   *string `json:"agent_name"`
	WindowID    string  `json:"window_id"`
	ItemID      string  `json:"item_id"`
	OffsetChars *count  `json:"offset_chars"`
	LimitChars  *count  `json:"limit_chars"`
}

type readItemDetails struct {
	Agent           string `json:"agent"`
	ItemID          string `json:"item_id"`
	WindowID        string `json:"window_id"`
	Role            string `json:"role"`
	Content         string `json:"content"`
	OffsetChars     int    `json:"offset_chars"`
	EndChars        int    `json:"end_chars"`
	NChars          int    `json:"n_chars"`
	NextOffsetChars *int   `json:"next_offset_chars"`
	Images          int64  `json:"images"`
}

// readItem is history_read_item.
func readItem(ctx context.Context, r *projections.Reader, c caller, a readItemArgs) (ToolResult, error) {
	agent, err := historyTarget(ctx, r, c, "history_read_item", a.AgentName)
	if err != nil {
		return ToolResult{}, err
	}
	it, err := r.ItemByEntry(ctx, c.taskID, agent, a.ItemID)
	if errors.Is(err, projections.ErrNotFound) {
		return ToolResult{}, notFoundf("no history item %q on the current branch of %s", a.ItemID, agent)
	}
	if err != nil {
		return ToolResult{}, err
	}
	if it.WindowID != a.WindowID {
		return ToolResult{}, notFoundf("history item %q is not in window %q of %s; list or search to find its window", a.ItemID, a.WindowID, agent)
	}
	text, _, err := r.ItemText(ctx, c.taskID, agent, it.EntryID)
	if err != nil {
		return ToolResult{}, err
	}
	d := readItemDetails{Agent: agent, ItemID: it.EntryID, WindowID: it.WindowID, Role: it.Role,
		NChars: chars(text), Images: it.Images}
	d.OffsetChars = min(limitOr(a.OffsetChars, 0, maxOffsetChars), d.NChars)
	limit := -1
	if a.LimitChars != nil {
		limit = limitOr(a.LimitChars, 0, maxReadLimitChars)
	}
	header := func() string {
		h := d
		h.Content = ""
		return compactJSON(struct {
			readItemDetails
			Content string `json:"content,omitempty"`
		}{readItemDetails: h})
	}
	out := pageText(text, &d.OffsetChars, &d.EndChars, &d.NextOffsetChars, d.NChars, limit,
		int(c.agent.Budget.MaxToolOutputChars), header)
	d.Content = sliceChars(text, d.OffsetChars, d.EndChars-d.OffsetChars)
	res := textResult(out, d)
	if it.Images > 0 {
		raw, err := r.EntryRaw(ctx, c.taskID, agent, it.EntryID)
		if err != nil {
			return ToolResult{}, err
		}
		for _, img := range history.Images(raw) {
			res.Content = append(res.Content, ContentBlock{Type: "image", Data: img.Data, MimeType: img.MimeType})
		}
	}
	return res, nil
}

type searchArgs struct {
	AgentName     *string `json:"agent_name"`
	Query         string  `json:"query"`
	WindowID      *string `json:"window_id"`
	Role          *string `json:"role"`
	ToolNamespace *string `json:"tool_namespace"`
	ToolName      *string `json:"tool_name"`
	Limit         *count  `json:"limit"`
	RecentFirst   *bool   `json:"recent_first"`
}

type matchSpan struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

type region struct {
	OffsetChars int         `json:"offset_chars"`
	LimitChars  int         `json:"limit_chars"`
	Preview     string      `json:"preview"`
	Matches     []matchSpan `json:"matches"`
}

type searchRecord struct {
	ItemID        string   `json:"item_id"`
	WindowID      string   `json:"window_id"`
	Role          string   `json:"role"`
	ToolNamespace *string  `json:"tool_namespace"`
	ToolName      *string  `json:"tool_name"`
	NChars        int64    `json:"n_chars"`
	Regions       []region `json:"regions"`
}

type searchDetails struct {
	Results   []searchRecord `json:"results"`
	NReturned int            `json:"n_returned"`
	Omitted   int            `json:"omitted"`
}

// searchHistory is history_search_contents.
func searchHistory(ctx context.Context, r *projections.Reader, c caller, a searchArgs) (ToolResult, error) {
	agent, err := historyTarget(ctx, r, c, "history_search_contents", a.AgentName)
	if err != nil {
		return ToolResult{}, err
	}
	// Scan the agent's texts for entries with a match; only their ids are
	// kept, so a needle found everywhere costs no more memory than the
	// branch's item list.
	preview := int(c.agent.Budget.HistoryItemPreviewChars)
	var found []string
	err = r.SearchTexts(ctx, c.taskID, agent, a.Query, func(id string) error {
		found = append(found, id)
		return nil
	})
	if err != nil {
		return ToolResult{}, err
	}
	items, err := r.ItemsOf(ctx, c.taskID, agent, found)
	if err != nil {
		return ToolResult{}, err
	}
	f := newItemFilter(c, agent, a.WindowID, a.Role, a.ToolNamespace, a.ToolName)
	hits := orderedItems(items, f, a.RecentFirst)
	if len(hits) == 0 {
		note := compactJSON(map[string]any{"n_returned": 0, "note": "no matches for " + compactJSON(a.Query)})
		if chars(note) > listBudget(c.agent.Budget) { // a long query is not echoed past the budget
			note = compactJSON(map[string]any{"n_returned": 0, "note": "no matches for the query"})
		}
		return textResult(note, searchDetails{Results: []searchRecord{}}), nil
	}
	limit := limitOr(a.Limit, defaultHistorySearchLimit, maxHistoryLimit)
	omitted := max(0, len(hits)-limit)
	hits = hits[:min(len(hits), limit)]
	recs := make([]searchRecord, len(hits))
	lines := make([]string, len(hits))
	for i, it := range hits {
		text, breaks, err := r.ItemText(ctx, c.taskID, agent, it.EntryID)
		if err != nil {
			return ToolResult{}, err
		}
		recs[i] = searchRecord{ItemID: it.EntryID, WindowID: it.WindowID, Role: it.Role,
			ToolNamespace: nullable(it.ToolNamespace), ToolName: nullable(it.ToolName), NChars: it.NChars,
			Regions: findRegions(text, breaks, a.Query, preview)}
		lines[i] = compactJSON(recs[i])
	}
	kept, text := fitLines(lines, listBudget(c.agent.Budget), omitted, historyHint)
	return textResult(text, searchDetails{Results: recs[:kept], NReturned: kept, Omitted: omitted + len(recs) - kept}), nil
}

// findRegions returns up to three regions of text around the matches of
// query, each with code-point coordinates that history_read_item reads
// back exactly. The preview budget is shared among the regions. A match
// that spans a break (the newline joining two separate parts) is no match.
func findRegions(text string, breaks []int, query string, previewChars int) []region {
	qChars := chars(query)
	per := max(previewChars/maxSearchRegions, qChars)
	total := chars(text)
	var out []region
	cp, byteAt := 0, 0 // code-point offset of byte offset byteAt
	for len(out) <= maxSearchRegions {
		i := strings.Index(text[byteAt:], query)
		if i < 0 {
			break
		}
		cp += utf8.RuneCountInString(text[byteAt : byteAt+i])
		byteAt += i
		start, end := cp, cp+qChars
		if spansBreak(breaks, start, end) {
			_, w := utf8.DecodeRuneInString(text[byteAt:])
			cp++
			byteAt += w
			continue
		}
		if n := len(out); n > 0 && end <= out[n-1].OffsetChars+out[n-1].LimitChars {
			out[n-1].Matches = append(out[n-1].Matches, matchSpan{start, end})
		} else {
			if len(out) == maxSearchRegions {
				break
			}
			off := max(0, start-(per-qChars)/2)
			lim := min(per, total-off)
			if lim < per { // near the end: widen to the left
				off = max(0, total-per)
				lim = total - off
			}
			out = append(out, region{OffsetChars: off, LimitChars: lim, Matches: []matchSpan{{start, end}}})
		}
		cp += qChars
		byteAt += len(query)
	}
	for i := range out {
		out[i].Preview = sliceChars(text, out[i].OffsetChars, out[i].LimitChars)
	}
	return out
}

// spansBreak reports whether [start, end) contains a break offset.
func spansBreak(breaks []int, start, end int) bool {
	i, _ := slices.BinarySearch(breaks, start)
	return i < len(breaks) && breaks[i] < end
}
