package projections

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// RenderedEntry is a history entry rendered as its projection rows hold it.
type RenderedEntry struct {
	raw           []byte
	r             history.Rendered
	calls, breaks string // JSON
}

// RenderEntry renders a raw entry for its projection rows. A sync renders
// its new entries before it takes the writer and hands them over with
// WillRecordEntry, so that the writer does not render them.
func RenderEntry(raw []byte) (RenderedEntry, error) {
	r := history.Render(raw)
	calls, err := json.Marshal(r.Calls)
	if err != nil {
		return RenderedEntry{}, err
	}
	if r.Breaks == nil {
		r.Breaks = []int{}
	}
	breaks, err := json.Marshal(r.Breaks)
	if err != nil {
		return RenderedEntry{}, err
	}
	return RenderedEntry{raw: raw, r: r, calls: string(calls), breaks: string(breaks)}, nil
}

// IdentifierWithNUL names the first of e's identifiers that holds U+0000,
// or "" when none does. They are text columns, which PostgreSQL cannot fill
// with it.
func (e RenderedEntry) IdentifierWithNUL() string {
	r := e.r
	for _, f := range []struct{ name, v string }{{"role", r.Role}, {"raw role", r.RawRole}, {"toolCallId", r.ToolCallID},
		{"toolName", r.ToolName}, {"window id", r.WindowID}} {
		if strings.ContainsRune(f.v, 0) {
			return f.name
		}
	}
	for _, c := range r.Calls {
		if strings.ContainsRune(c.ID, 0) || strings.ContainsRune(c.Name, 0) {
			return "tool call"
		}
	}
	return ""
}

// renderedKey names an entry rendered ahead in txState.rendered.
type renderedKey struct{ taskID, agent, entryID string }

// WillRecordEntry tells the write transaction tx that it will record the
// entry named by taskID, agent and entryID with e's raw bytes. Its
// projection then takes e rather than rendering it again.
func WillRecordEntry(tx *eventlog.Tx, taskID, agent, entryID string, e RenderedEntry) {
	st := stateOf(tx)
	if st == nil { // tx's store applies through another projector
		return
	}
	if st.rendered == nil {
		st.rendered = map[renderedKey]RenderedEntry{}
	}
	st.rendered[renderedKey{taskID, agent, entryID}] = e
}

func applyEntryRecorded(ctx context.Context, q projectionsdb.Querier, st *txState, ev events.Event, p *events.HistoryEntryRecorded) error {
	key := renderedKey{p.TaskID, p.Agent, p.EntryID}
	e, ok := st.rendered[key]
	if ok {
		delete(st.rendered, key)
	}
	if !ok || !bytes.Equal(e.raw, p.Entry) { // recorded with other bytes, so rendered as usual
		var err error
		if e, err = RenderEntry(p.Entry); err != nil {
			return err
		}
	}
	r, calls, breaks := e.r, e.calls, e.breaks
	text := r.Text
	if !r.Item {
		text = "" // only items are read or searched
	}
	place, err := placeText(ctx, q, p.TaskID, p.Agent, p.EntryID, text, breaks)
	if err != nil {
		return err
	}
	return q.InsertHistoryEntry(ctx, projectionsdb.InsertHistoryEntryParams{
		TaskID: p.TaskID, Agent: p.Agent, EntryID: p.EntryID,
		Item: b2i(r.Item), Role: r.Role, RawRole: r.RawRole, NChars: int64(history.Chars(r.Text)),
		Images: int64(r.Images), CallsOnly: b2i(r.CallsOnly), ToolCallID: r.ToolCallID,
		ToolName: r.ToolName, Compaction: b2i(r.Compaction), Control: b2i(r.Control), MarkedWindow: r.WindowID,
		Position: ev.Position, TextChunk: place.chunk, TextOffset: place.offset, TextBytes: place.bytes,
		Calls: calls, Breaks: breaks,
	})
}

// BranchPrefixHash is the prefix hash of a branch entry, a hash of the
// previous entry's prefix hash and this entry's id. Two branches have equal
// prefixes up to an index when their prefix hashes there are equal, barring
// a 128-bit collision.
func BranchPrefixHash(prev []byte, entryID string) []byte {
	h := fnv.New128a()
	h.Write(prev)
	h.Write([]byte{0})
	h.Write([]byte(entryID))
	return h.Sum(nil)
}

// applyBranchChanged replaces an agent's current branch and recomputes the
// items from the first changed position on. An item depends only on the
// entries before it, so the kept prefix stays as it is.
func applyBranchChanged(ctx context.Context, q projectionsdb.Querier, ev events.Event, p *events.HistoryBranchChanged) error {
	if err := truncateBranch(ctx, q, p.TaskID, p.Agent, p.Keep); err != nil {
		return err
	}
	win, err := windowsAfter(ctx, q, p.TaskID, p.Agent, p.Keep)
	if err != nil {
		return err
	}
	hash := []byte{}
	if p.Keep > 0 {
		if hash, err = q.BranchPrefixHash(ctx, projectionsdb.BranchPrefixHashParams{TaskID: p.TaskID, Agent: p.Agent, BranchIndex: p.Keep - 1}); err != nil {
			return fmt.Errorf("branch prefix of %d: %w", p.Keep, err)
		}
	}
	for i, entryID := range p.Append {
		hash = BranchPrefixHash(hash, entryID)
		if err := appendBranchEntry(ctx, q, p, p.Keep+int64(i), entryID, hash, win); err != nil {
			return err
		}
	}
	return q.UpsertHistoryBranch(ctx, projectionsdb.UpsertHistoryBranchParams{
		TaskID: p.TaskID, Agent: p.Agent, Revision: p.Revision, Length: p.Length, Position: ev.Position,
	})
}

// truncateBranch deletes an agent's branch entries, items and calls from
// branch index keep on.
func truncateBranch(ctx context.Context, q projectionsdb.Querier, taskID, agent string, keep int64) error {
	if err := q.DeleteBranchEntriesFrom(ctx, projectionsdb.DeleteBranchEntriesFromParams{TaskID: taskID, Agent: agent, BranchIndex: keep}); err != nil {
		return err
	}
	if err := q.DeleteItemsFrom(ctx, projectionsdb.DeleteItemsFromParams{TaskID: taskID, Agent: agent, BranchIndex: keep}); err != nil {
		return err
	}
	return q.DeleteCallsFrom(ctx, projectionsdb.DeleteCallsFromParams{TaskID: taskID, Agent: agent, BranchIndex: keep})
}

// branchWindows is the window the next appended item falls in, which is
// the last kept item's until a compaction opens the next.
type branchWindows struct {
	q             projectionsdb.Querier
	taskID, agent string
	keep          int64
	ordinal       int64
	id            string
	// used are the window ids of the kept prefix and those opened since.
	// Only a compaction needs them, so the first one reads them.
	used map[string]bool
}

// windowsAfter is the window of the item at branch index keep, before
// any compaction after it.
func windowsAfter(ctx context.Context, q projectionsdb.Querier, taskID, agent string, keep int64) (*branchWindows, error) {
	w := &branchWindows{q: q, taskID: taskID, agent: agent, keep: keep, ordinal: 1, id: "w1"}
	last, err := q.LastItemBefore(ctx, projectionsdb.LastItemBeforeParams{TaskID: taskID, Agent: agent, BranchIndex: keep})
	switch {
	case err == nil:
		w.ordinal, w.id = last.WindowOrdinal, last.WindowID
	case !errors.Is(err, sql.ErrNoRows):
		return nil, err
	}
	return w, nil
}

// open opens the window a compaction starts. That is the one its
// bootstrap marks if no earlier window took it, else the next free ordinal.
func (w *branchWindows) open(ctx context.Context, marked string) error {
	if w.used == nil {
		ids, err := windowIDsBefore(ctx, w.q, w.taskID, w.agent, w.keep)
		if err != nil {
			return err
		}
		w.used = map[string]bool{"w1": true}
		for _, id := range ids {
			w.used[id] = true
		}
	}
	w.ordinal++
	w.id = "w" + strconv.FormatInt(w.ordinal, 10)
	if marked != "" && !w.used[marked] {
		w.id = marked
	}
	for w.used[w.id] { // an ordinal a marked window already took
		w.ordinal++
		w.id = "w" + strconv.FormatInt(w.ordinal, 10)
	}
	w.used[w.id] = true
	return nil
}

// windowIDsBefore returns the window ids of an agent's items before branch
// index end, newest first. Window ordinals only grow along a branch, and
// the items of one ordinal share its id, so there is one id per ordinal:
// each is read from the last item of its window, and the window's first
// item found by a binary search of LastItemBefore, a few point lookups per
// window instead of a scan of every item (a long history's compaction
// sync spent most of its time in that scan: docs/performance.md).
func windowIDsBefore(ctx context.Context, q projectionsdb.Querier, taskID, agent string, end int64) ([]string, error) {
	var ids []string
	for end > 0 {
		last, err := q.LastItemBefore(ctx, projectionsdb.LastItemBeforeParams{TaskID: taskID, Agent: agent, BranchIndex: end})
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, last.WindowID)
		// The least lo such that the last item before lo+1 is of this
		// window: every item before lo is of an earlier one.
		lo, hi := int64(0), end-1
		for lo < hi {
			mid := lo + (hi-lo)/2
			it, err := q.LastItemBefore(ctx, projectionsdb.LastItemBeforeParams{TaskID: taskID, Agent: agent, BranchIndex: mid + 1})
			switch {
			case err == nil && it.WindowOrdinal == last.WindowOrdinal:
				hi = mid
			case err == nil || errors.Is(err, sql.ErrNoRows):
				lo = mid + 1
			default:
				return nil, err
			}
		}
		end = lo
	}
	return ids, nil
}

// appendBranchEntry puts entryID at branch index idx, and any item it
// renders, with its calls, in the window win is at.
func appendBranchEntry(ctx context.Context, q projectionsdb.Querier, p *events.HistoryBranchChanged, idx int64, entryID string, hash []byte, win *branchWindows) error {
	if err := q.InsertBranchEntry(ctx, projectionsdb.InsertBranchEntryParams{TaskID: p.TaskID, Agent: p.Agent, BranchIndex: idx, EntryID: entryID, PrefixHash: hash}); err != nil {
		return err
	}
	e, err := q.GetHistoryEntry(ctx, projectionsdb.GetHistoryEntryParams{TaskID: p.TaskID, Agent: p.Agent, EntryID: entryID})
	if err != nil {
		return fmt.Errorf("branch entry %s: %w", entryID, err)
	}
	if e.Item == 0 {
		return nil
	}
	if e.Compaction != 0 {
		if err := win.open(ctx, e.MarkedWindow); err != nil {
			return err
		}
	}
	var calls []history.Call
	if err := json.Unmarshal([]byte(e.Calls), &calls); err != nil {
		return err
	}
	ns, name, hidden, err := attributeItem(ctx, q, p, idx, e, calls)
	if err != nil {
		return err
	}
	if err := q.InsertItem(ctx, projectionsdb.InsertItemParams{
		TaskID: p.TaskID, Agent: p.Agent, BranchIndex: idx, EntryID: entryID, WindowOrdinal: win.ordinal,
		WindowID: win.id, Role: e.Role, RawRole: e.RawRole, ToolNamespace: ns, ToolName: name,
		ToolCallID: e.ToolCallID, Hidden: b2i(hidden), NChars: e.NChars, Images: e.Images,
	}); err != nil {
		return err
	}
	for _, c := range calls {
		if c.ID == "" {
			continue
		}
		if err := q.InsertCall(ctx, projectionsdb.InsertCallParams{TaskID: p.TaskID, Agent: p.Agent, BranchIndex: idx, CallID: c.ID, ToolName: c.Name}); err != nil {
			return err
		}
	}
	return nil
}

// attributeItem names the tool an item is about and reports whether it is
// hidden, as a control message or one with only memoryd's own tool calls.
func attributeItem(ctx context.Context, q projectionsdb.Querier, p *events.HistoryBranchChanged, idx int64, e projectionsdb.GetHistoryEntryRow, calls []history.Call) (ns, name string, hidden bool, err error) {
	hidden = e.Control != 0
	switch {
	case len(calls) > 0:
		ns, name = history.Namespace(calls[0].Name), calls[0].Name
		if e.CallsOnly != 0 {
			hidden = true
			for _, c := range calls {
				hidden = hidden && history.Internal(c.Name)
			}
		}
	case e.Role == "tool": // named by its call, as the branch before it made it
		name = e.ToolName
		if e.ToolCallID != "" {
			n, err := q.CallToolName(ctx, projectionsdb.CallToolNameParams{TaskID: p.TaskID, Agent: p.Agent, CallID: e.ToolCallID, BranchIndex: idx})
			switch {
			case err == nil:
				name = n
			case !errors.Is(err, sql.ErrNoRows):
				return "", "", false, err
			}
		}
		if name != "" {
			ns = history.Namespace(name)
			hidden = hidden || history.Internal(name)
		}
	}
	return ns, name, hidden, nil
}
