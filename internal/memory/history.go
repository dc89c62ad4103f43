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
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections"
)

// History limits (docs/behaviour.md §G).
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

// maxEntryIDBytes bounds an entry id.
const maxEntryIDBytes = 256

// validEntryID reports whether id can be an entry's id: non-empty, valid
// UTF-8, at most maxEntryIDBytes.
func validEntryID(id string) bool {
	return id != "" && len(id) <= maxEntryIDBytes && utf8.ValidString(id)
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
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return syncEntry{}, "must be a JSON object (a Pi session entry)"
	}
	head, err := history.ReadHead(raw) // keys matched exactly: "ID" is not the id
	if err != nil {
		return syncEntry{}, "must be a JSON object (a Pi session entry)"
	}
	if head.ID == "" {
		return syncEntry{}, "has no id"
	}
	if head.Type == "" {
		return syncEntry{}, fmt.Sprintf("(id %q) has no type", head.ID)
	}
	if !validEntryID(head.ID) {
		return syncEntry{}, "has an id that is not short valid UTF-8"
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return syncEntry{}, fmt.Sprintf("(id %q) is not valid JSON", head.ID)
	}
	return syncEntry{id: head.ID, raw: compact.Bytes()}, ""
}

// syncPlan is a sync as checked against its request alone, before the
// writer: what the write transaction needs of it, computed outside.
type syncPlan struct {
	entries []syncEntry // distinct ids, in request order
	ids     []string    // the entries' ids
	sentNow map[string]bool
	branch  []string // nil: the branch is not changed
	hashes  [][]byte // hashes[i] = projections.BranchPrefixHash(hashes[i-1], branch[i])
	// stored are the entries the snapshot of checkStored had stored, with
	// the same content; rendered are the others, rendered ahead.
	stored   map[string]bool
	rendered map[string]projections.RenderedEntry
}

// planSync checks what a sync request alone can tell: its sizes, its
// entries, and that its branch lists valid ids once each.
func planSync(req SyncRequest) (*syncPlan, error) {
	if len(req.Entries) > MaxSyncEntries {
		return nil, invalidf("a sync carries at most %d entries; send %d in several syncs (the branch with the last)", MaxSyncEntries, len(req.Entries))
	}
	if req.Branch != nil && len(*req.Branch) > MaxBranchLength {
		return nil, invalidf("a branch has at most %d entries", MaxBranchLength)
	}
	entries, err := parseEntries(req.Entries)
	if err != nil {
		return nil, err
	}
	return newSyncPlan(entries, req.Branch)
}

// newSyncPlan is planSync of entries already parsed: it checks that the
// branch, if any, lists valid ids once each.
func newSyncPlan(entries []syncEntry, branchp *[]string) (*syncPlan, error) {
	p := &syncPlan{entries: entries, ids: make([]string, len(entries)), sentNow: make(map[string]bool, len(entries))}
	for i, e := range entries {
		p.ids[i] = e.id
		p.sentNow[e.id] = true
	}
	if branchp == nil {
		return p, nil
	}
	branch := *branchp
	seen := make(map[string]struct{}, len(branch))
	p.hashes = make([][]byte, len(branch))
	prev := []byte{}
	for i, id := range branch {
		if !validEntryID(id) {
			return nil, invalidf("branch[%d] is not an entry id (ids are 1 to %d bytes of valid UTF-8)", i, maxEntryIDBytes)
		}
		if _, dup := seen[id]; dup {
			return nil, invalidf("branch lists entry %q twice (branch[%d])", id, i)
		}
		seen[id] = struct{}{}
		prev = projections.BranchPrefixHash(prev, id)
		p.hashes[i] = prev
	}
	p.branch = branch
	return p, nil
}

// checkStored checks the sync against a read snapshot of what is stored:
// a sync refused here never queues for the writer, so that a long branch
// checked to its last id holds up no other write. Refusing at the
// snapshot answers what the sync would have answered had it run then.
// Entries are never deleted, so what the snapshot had stored the writer
// has too: it checks again only what may have changed since (writeSync).
func (p *syncPlan) checkStored(ctx context.Context, r *projections.Reader, cc CallContext, expectedRevision *int64) error {
	c, err := identify(ctx, r, cc)
	if err != nil {
		return err
	}
	task, agent := c.taskID, c.agent.Agent
	revision, current, err := r.Branch(ctx, task, agent)
	if err != nil {
		return err
	}
	if err := checkRevision(expectedRevision, revision); err != nil {
		return err
	}
	stored, err := r.StoredEntries(ctx, task, agent, p.ids)
	if err != nil {
		return err
	}
	p.stored = make(map[string]bool, len(stored))
	for _, e := range p.entries {
		if !stored[e.id] {
			continue
		}
		raw, err := r.EntryRaw(ctx, task, agent, e.id)
		if err != nil {
			return err
		}
		if !bytes.Equal(raw, e.raw) && !sameEntry(raw, e.raw) {
			return &EntryError{Index: e.index, Err: conflictf("entry %q was already synced with different content; entries are immutable", e.id)}
		}
		p.stored[e.id] = true
	}
	if p.branch == nil {
		return nil
	}
	// Only the ids past the prefix the branch shares with the current one
	// are looked up (the prefix is stored already): a long branch re-sent
	// with a few new entries costs a few lookups.
	keep, err := r.SharedPrefix(ctx, task, agent, p.hashes, current)
	if err != nil {
		return err
	}
	var lookup []string // ids past the shared prefix not sent now
	var at []int        // their indexes in the branch
	for i := keep; i < len(p.branch); i++ {
		if id := p.branch[i]; !p.sentNow[id] {
			lookup, at = append(lookup, id), append(at, i)
		}
	}
	i, err := r.FirstUnstored(ctx, task, agent, lookup)
	if err != nil {
		return err
	}
	if i >= 0 {
		return invalidf("branch[%d] names entry %q, which was never synced; send it in entries", at[i], lookup[i])
	}
	return nil
}

// render renders, ahead of the writer, the entries checkStored did not
// find stored (those the sync will record).
func (p *syncPlan) render() error {
	if p.rendered == nil {
		p.rendered = make(map[string]projections.RenderedEntry, len(p.entries)-len(p.stored))
	}
	for _, e := range p.entries {
		if _, done := p.rendered[e.id]; done || p.stored[e.id] {
			continue
		}
		var err error
		if p.rendered[e.id], err = projections.RenderEntry(e.raw); err != nil {
			return err
		}
	}
	return nil
}

func checkRevision(expected *int64, revision int64) error {
	if expected != nil && *expected != revision {
		return conflictf("expected_revision is %d but the branch is at revision %d; sync again from the current branch", *expected, revision)
	}
	return nil
}

// errStoredMeanwhile: an entry the snapshot had not stored was stored
// before the sync's turn at the writer; the sync checks it again.
var errStoredMeanwhile = errors.New("an entry was stored since the snapshot")

// Sync stores new raw entries of the caller's session and replaces its
// current branch, all in one transaction (API §4). Everything that can
// be checked without the writer is checked before it (planSync,
// checkStored); the write transaction looks up which entries are stored
// in one query and the branch's shared prefix in O(log n) point queries.
func (s *Service) Sync(ctx context.Context, req SyncRequest, requestID string) (SyncResult, error) {
	p, err := planSync(req)
	if err != nil {
		return SyncResult{}, err
	}
	for {
		if err := s.read(ctx, func(r *projections.Reader) error {
			return p.checkStored(ctx, r, req.Context, req.ExpectedRevision)
		}); err != nil {
			return SyncResult{}, err
		}
		if err := p.render(); err != nil {
			return SyncResult{}, err
		}
		if s.syncToWriter != nil {
			s.syncToWriter()
		}
		// Each retry follows an entry of the request stored by another sync
		// meanwhile: there are at most as many as entries.
		res, err := s.writeSync(ctx, p, req, requestID)
		if !errors.Is(err, errStoredMeanwhile) {
			return res, err
		}
	}
}

// writeSync is the write transaction of a sync checked by checkStored.
func (s *Service) writeSync(ctx context.Context, p *syncPlan, req SyncRequest, requestID string) (SyncResult, error) {
	var res SyncResult
	err := s.store.Update(ctx, requestID, func(tx *eventlog.Tx) error {
		var err error
		res, err = syncTx(ctx, tx, p, req)
		return err
	})
	if err != nil {
		return SyncResult{}, err
	}
	return res, nil
}

// syncIn is a whole sync of entries parsed from req.Entries inside tx
// (a session import's): the checks of checkStored run in tx itself.
func syncIn(ctx context.Context, tx *eventlog.Tx, req SyncRequest, entries []syncEntry) (SyncResult, error) {
	p, err := newSyncPlan(entries, req.Branch)
	if err != nil {
		return SyncResult{}, err
	}
	if err := p.checkStored(ctx, projections.TxReader(tx), req.Context, req.ExpectedRevision); err != nil {
		return SyncResult{}, err
	}
	return syncTx(ctx, tx, p, req)
}

// syncTx writes a sync checked by checkStored in tx: errStoredMeanwhile
// if an entry the check saw unstored is stored now.
func syncTx(ctx context.Context, tx *eventlog.Tx, p *syncPlan, req SyncRequest) (SyncResult, error) {
	var res SyncResult
	r := projections.TxReader(tx)
	c, err := identify(ctx, r, req.Context)
	if err != nil {
		return SyncResult{}, err
	}
	task, agent := c.taskID, c.agent.Agent
	revision, current, err := r.Branch(ctx, task, agent)
	if err != nil {
		return SyncResult{}, err
	}
	if err := checkRevision(req.ExpectedRevision, revision); err != nil {
		return SyncResult{}, err
	}
	stored, err := r.StoredEntries(ctx, task, agent, p.ids)
	if err != nil {
		return SyncResult{}, err
	}
	var pending []events.Pending
	for _, e := range p.entries {
		switch {
		case stored[e.id] && p.stored[e.id]:
			res.Unchanged++
		case stored[e.id]:
			return SyncResult{}, errStoredMeanwhile
		default:
			if rendered, ok := p.rendered[e.id]; ok {
				projections.WillRecordEntry(tx, task, agent, e.id, rendered)
			}
			pending = append(pending, events.Pending{Type: events.TypeHistoryEntryRecorded,
				Data: events.HistoryEntryRecorded{TaskID: task, Agent: agent, EntryID: e.id, Entry: e.raw}})
			res.Stored++
		}
	}
	res.Revision = revision
	if p.branch != nil {
		// checkStored found every id of the branch stored or sent now,
		// and entries stay stored: only the shared prefix may have
		// changed since (another sync of this agent).
		keep, err := r.SharedPrefix(ctx, task, agent, p.hashes, current)
		if err != nil {
			return SyncResult{}, err
		}
		if int64(keep) != current || keep != len(p.branch) {
			res.Revision = revision + 1
			pending = append(pending, events.Pending{Type: events.TypeHistoryBranchChanged, Data: events.HistoryBranchChanged{
				TaskID: task, Agent: agent, Revision: res.Revision, Keep: int64(keep),
				Append: slices.Clone(p.branch[keep:]), Length: int64(len(p.branch))}})
		}
	}
	if len(pending) > 0 {
		stream := events.Stream(task, agent)
		version, err := tx.StreamVersion(ctx, stream)
		if err != nil {
			return SyncResult{}, err
		}
		if _, err := tx.Append(ctx, stream, version, pending...); err != nil {
			return SyncResult{}, err
		}
	}
	if res.WindowID, err = r.LastWindow(ctx, task, agent); err != nil {
		return SyncResult{}, err
	}
	return res, nil
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
	recs, omitted := limitList(recs, limitOr(a.Limit, defaultHistoryListLimit, maxHistoryLimit))
	text, shown, omitted := fitList(recs, listBudget(c.agent.Budget), omitted, "lower limit or use recent_first")
	return textResult(text, listWindowsDetails{Windows: shown, NReturned: len(shown), Omitted: omitted}), nil
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
			break // the rest cannot fit: they count as omitted
		}
	}
	omitted += len(items) - len(recs)
	text, shown, omitted := fitRendered(recs, lines, budget, omitted, historyHint)
	return textResult(text, listItemsDetails{Results: shown, NReturned: len(shown), Omitted: omitted}), nil
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
	hits, omitted := limitList(hits, limitOr(a.Limit, defaultHistorySearchLimit, maxHistoryLimit))
	recs := make([]searchRecord, len(hits))
	for i, it := range hits {
		text, breaks, err := r.ItemText(ctx, c.taskID, agent, it.EntryID)
		if err != nil {
			return ToolResult{}, err
		}
		recs[i] = searchRecord{ItemID: it.EntryID, WindowID: it.WindowID, Role: it.Role,
			ToolNamespace: nullable(it.ToolNamespace), ToolName: nullable(it.ToolName), NChars: it.NChars,
			Regions: findRegions(text, breaks, a.Query, preview)}
	}
	text, shown, omitted := fitList(recs, listBudget(c.agent.Budget), omitted, historyHint)
	return textResult(text, searchDetails{Results: shown, NReturned: len(shown), Omitted: omitted}), nil
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
