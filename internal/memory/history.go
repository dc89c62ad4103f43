package memory

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// History limits, as docs/behaviour.md §G sets them.
const (
	defaultHistoryListLimit   = 50
	defaultHistorySearchLimit = 20
	maxHistoryLimit           = 200
	maxSearchRegions          = 3
	maxReadLimitChars         = 100_000
	historyHint               = "narrow window_id, role or tool filters, or lower limit"
	searchMoreHint            = "more matches exist past limit: raise limit, narrow the query or filters, or flip recent_first"
)

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
	if c.branchEnd != projections.WholeBranch {
		return "", ErrNeedsCopy // the bound is the caller's branch's
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

// listWindows is history_list_windows.
func listWindows(ctx context.Context, r *projections.Reader, c caller, a listWindowsArgs) (ToolResult, error) {
	agent, err := historyTarget(ctx, r, c, "history_list_windows", a.AgentName)
	if err != nil {
		return ToolResult{}, err
	}
	ws, err := r.Windows(ctx, c.taskID, agent, c.branchEnd)
	if err != nil {
		return ToolResult{}, err
	}
	recs := make([]tools.Window, len(ws))
	for i, w := range ws {
		recs[i] = tools.Window{WindowID: w.ID, ItemCount: w.ItemCount, Current: i == len(ws)-1}
	}
	if a.RecentFirst != nil && *a.RecentFirst {
		slices.Reverse(recs)
	}
	if len(recs) == 0 {
		return textResult(compactJSON(map[string]any{"n_returned": 0, "note": "no history windows yet"}),
			tools.HistoryListWindowsDetails{Windows: recs}), nil
	}
	recs, omitted := limitList(recs, limitOr(a.Limit, defaultHistoryListLimit, maxHistoryLimit))
	text, shown, omitted := fitList(recs, listBudget(c.agent.Budget), omitted, "lower limit or use recent_first")
	return textResult(text, tools.HistoryListWindowsDetails{Windows: shown, NReturned: len(shown), Omitted: omitted}), nil
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

// listItems is history_list_items.
func listItems(ctx context.Context, r *projections.Reader, c caller, a listItemsArgs) (ToolResult, error) {
	agent, err := historyTarget(ctx, r, c, "history_list_items", a.AgentName)
	if err != nil {
		return ToolResult{}, err
	}
	// Walk the branch in output order, keeping the first limit matches and
	// counting the rest, so that memory stays bounded on a long history.
	f := newItemFilter(c, agent, a.WindowID, a.Role, a.ToolNamespace, a.ToolName)
	limit := limitOr(a.Limit, defaultHistoryListLimit, maxHistoryLimit)
	var items []projections.Item
	total := 0
	err = r.EachItem(ctx, c.taskID, agent, c.branchEnd, a.RecentFirst != nil && *a.RecentFirst, func(it projections.Item) (bool, error) {
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
			tools.HistoryListItemsDetails{Results: []tools.ItemSummary{}}), nil
	}
	preview := limitOr(a.MaxCharsPerItem, int(c.agent.Budget.HistoryItemPreviewChars), maxReadLimitChars)
	omitted := total - len(items)
	budget := listBudget(c.agent.Budget)
	// room is what a record may take, the budget less the omission line, so
	// that a long preview is cut to fit rather than its whole record dropped.
	room := budget - chars(omissionLine(omitted+len(items), historyHint)) - 1
	recs := make([]tools.ItemSummary, 0, len(items))
	lines := make([]string, 0, len(items))
	used := 0
	for _, it := range items {
		text, _, err := r.ItemText(ctx, c.taskID, agent, it.EntryID)
		if err != nil {
			return ToolResult{}, err
		}
		rec := tools.ItemSummary{ItemID: it.EntryID, WindowID: it.WindowID, Role: it.Role,
			ToolNamespace: nullable(it.ToolNamespace), ToolName: nullable(it.ToolName),
			NChars: it.NChars, Images: it.Images, TruncatedContent: sliceChars(text, 0, preview)}
		line := compactJSON(rec)
		for over := chars(line) - room; over > 0 && rec.TruncatedContent != ""; over = chars(line) - room {
			// Escaping makes a line at least as long as its preview, so cutting
			// over code points brings it within room in a pass or two.
			rec.TruncatedContent = sliceChars(rec.TruncatedContent, 0, max(0, chars(rec.TruncatedContent)-over))
			line = compactJSON(rec)
		}
		recs, lines = append(recs, rec), append(lines, line)
		if used += chars(line) + 1; used > budget {
			break // the rest cannot fit and count as omitted
		}
	}
	omitted += len(items) - len(recs)
	text, shown, omitted := fitRendered(recs, lines, budget, omitted, historyHint)
	return textResult(text, tools.HistoryListItemsDetails{Results: shown, NReturned: len(shown), Omitted: omitted}), nil
}

type readItemArgs struct {
	AgentName   *string `json:"agent_name"`
	WindowID    string  `json:"window_id"`
	ItemID      string  `json:"item_id"`
	OffsetChars *count  `json:"offset_chars"`
	LimitChars  *count  `json:"limit_chars"`
}

// readItem is history_read_item.
func readItem(ctx context.Context, r *projections.Reader, c caller, a readItemArgs) (ToolResult, error) {
	agent, err := historyTarget(ctx, r, c, "history_read_item", a.AgentName)
	if err != nil {
		return ToolResult{}, err
	}
	it, err := r.ItemByEntry(ctx, c.taskID, agent, c.branchEnd, a.ItemID)
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
	d := tools.HistoryReadItemDetails{Agent: agent, ItemID: it.EntryID, WindowID: it.WindowID, Role: it.Role,
		NChars: chars(text), Images: it.Images}
	d.OffsetChars = min(limitOr(a.OffsetChars, 0, maxOffsetChars), d.NChars)
	limit := -1
	if a.LimitChars != nil {
		limit = limitOr(a.LimitChars, 0, maxReadLimitChars)
	}
	pg, out := fitPage(text, d.OffsetChars, d.NChars, limit, int(c.agent.Budget.MaxToolOutputChars), func(p textPage) string {
		h := d
		h.Content, h.EndChars, h.NextOffsetChars = "", p.End, p.Next
		return compactJSON(struct {
			tools.HistoryReadItemDetails
			Content string `json:"content,omitempty"`
		}{HistoryReadItemDetails: h})
	})
	d.EndChars, d.NextOffsetChars = pg.End, pg.Next
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

// searchHistory is history_search_contents.
func searchHistory(ctx context.Context, r *projections.Reader, c caller, a searchArgs) (ToolResult, error) {
	agent, err := historyTarget(ctx, r, c, "history_search_contents", a.AgentName)
	if err != nil {
		return ToolResult{}, err
	}
	// Walk the matching items in output order, filtered, and stop at the
	// first past limit, which says that more exist. See docs/search.md.
	f := newItemFilter(c, agent, a.WindowID, a.Role, a.ToolNamespace, a.ToolName)
	limit := limitOr(a.Limit, defaultHistorySearchLimit, maxHistoryLimit)
	var hits []projections.Item
	more := false
	err = r.SearchItems(ctx, c.taskID, agent, c.branchEnd, a.Query, a.RecentFirst != nil && *a.RecentFirst, f.match,
		func(it projections.Item) (bool, error) {
			if len(hits) == limit {
				more = true
				return false, nil
			}
			hits = append(hits, it)
			return true, nil
		})
	if err != nil {
		return ToolResult{}, err
	}
	if len(hits) == 0 {
		note := compactJSON(map[string]any{"n_returned": 0, "note": "no matches for " + compactJSON(a.Query)})
		if chars(note) > listBudget(c.agent.Budget) { // a long query is not echoed past the budget
			note = compactJSON(map[string]any{"n_returned": 0, "note": "no matches for the query"})
		}
		return textResult(note, tools.HistorySearchContentsDetails{Results: []tools.SearchHit{}}), nil
	}
	preview := int(c.agent.Budget.HistoryItemPreviewChars)
	recs := make([]tools.SearchHit, len(hits))
	for i, it := range hits {
		text, breaks, err := r.ItemText(ctx, c.taskID, agent, it.EntryID)
		if err != nil {
			return ToolResult{}, err
		}
		recs[i] = tools.SearchHit{ItemID: it.EntryID, WindowID: it.WindowID, Role: it.Role,
			ToolNamespace: nullable(it.ToolNamespace), ToolName: nullable(it.ToolName), NChars: it.NChars,
			Regions: findRegions(text, breaks, a.Query, preview)}
	}
	lines := jsonLines(recs)
	kept, text := fitLinesTail(lines, listBudget(c.agent.Budget), more, func(omitted int) string {
		return searchOmissionLine(omitted, more)
	})
	return textResult(text, tools.HistorySearchContentsDetails{Results: recs[:kept], NReturned: kept, Omitted: len(recs) - kept, More: more}), nil
}

// searchOmissionLine is the last line of a search that left matches out.
// omitted counts those of the first limit that the budget cut, and more
// says that matches exist past the first limit.
func searchOmissionLine(omitted int, more bool) string {
	if !more {
		return omissionLine(omitted, historyHint)
	}
	hint := historyHint
	if omitted == 0 {
		hint = searchMoreHint
	}
	return compactJSON(struct {
		Omitted int    `json:"omitted"`
		More    bool   `json:"more"`
		Hint    string `json:"hint"`
	}{omitted, true, hint})
}

// findRegions returns up to three regions of text around the matches of
// query, sharing the preview budget. Their code-point coordinates are what
// history_read_item reads back exactly.
func findRegions(text string, breaks []int, query string, previewChars int) []tools.SearchRegion {
	qChars := chars(query)
	per := max(previewChars/maxSearchRegions, qChars)
	total := chars(text)
	var out []tools.SearchRegion
	cp, byteAt := 0, 0 // code-point offset of byte offset byteAt
	for len(out) <= maxSearchRegions {
		i := strings.Index(text[byteAt:], query)
		if i < 0 {
			break
		}
		cp += utf8.RuneCountInString(text[byteAt : byteAt+i])
		byteAt += i
		start, end := cp, cp+qChars
		// A match across a break, the newline joining two blocks, is no match.
		if spansBreak(breaks, start, end) {
			_, w := utf8.DecodeRuneInString(text[byteAt:])
			cp++
			byteAt += w
			continue
		}
		if n := len(out); n > 0 && end <= out[n-1].OffsetChars+out[n-1].LimitChars {
			out[n-1].Matches = append(out[n-1].Matches, tools.MatchSpan{Start: start, End: end})
		} else {
			if len(out) == maxSearchRegions {
				break
			}
			off := max(0, start-(per-qChars)/2)
			lim := min(per, total-off)
			if lim < per { // near the end, widen to the left
				off = max(0, total-per)
				lim = total - off
			}
			out = append(out, tools.SearchRegion{OffsetChars: off, LimitChars: lim, Matches: []tools.MatchSpan{{Start: start, End: end}}})
		}
		cp += qChars
		byteAt += len(query)
	}
	for i := range out {
		out[i].Preview = sliceChars(text, out[i].OffsetChars, out[i].LimitChars)
	}
	return out
}

// spansBreak reports whether a break offset is at least start and below end.
func spansBreak(breaks []int, start, end int) bool {
	i, _ := slices.BinarySearch(breaks, start)
	return i < len(breaks) && breaks[i] < end
}
