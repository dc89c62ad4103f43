package projections

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// Branch returns an agent's current branch revision and length, or zeros
// before the first sync.
func (r *Reader) Branch(ctx context.Context, taskID, agent string) (revision, length int64, err error) {
	b, err := r.q.GetHistoryBranch(ctx, projectionsdb.GetHistoryBranchParams{TaskID: taskID, Agent: agent})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	return b.Revision, b.Length, err
}

// LastBranchChange returns the log position of the change that made an
// agent's current branch and the branch's length, or zeros before the
// first.
func (r *Reader) LastBranchChange(ctx context.Context, taskID, agent string) (position, length int64, err error) {
	b, err := r.q.GetHistoryBranch(ctx, projectionsdb.GetHistoryBranchParams{TaskID: taskID, Agent: agent})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	return b.Position, b.Length, err
}

// SharedPrefix returns how many leading ids a branch shares with the
// agent's current branch of length current, given the branch's prefix
// hashes. It binary-searches the stored hashes instead of reading the branch.
func (r *Reader) SharedPrefix(ctx context.Context, taskID, agent string, hashes [][]byte, current int64) (int, error) {
	lo, hi := 0, int(min(int64(len(hashes)), current)) // the answer is in [lo, hi]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		h, err := r.q.BranchPrefixHash(ctx, projectionsdb.BranchPrefixHashParams{TaskID: taskID, Agent: agent, BranchIndex: int64(mid - 1)})
		if err != nil {
			return 0, err
		}
		if bytes.Equal(h, hashes[mid-1]) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, nil
}

// LastWindow returns the window of the last item of an agent's current
// branch, or "w1" before the first item.
func (r *Reader) LastWindow(ctx context.Context, taskID, agent string) (string, error) {
	it, err := r.q.LastItemBefore(ctx, projectionsdb.LastItemBeforeParams{TaskID: taskID, Agent: agent, BranchIndex: math.MaxInt64})
	if errors.Is(err, sql.ErrNoRows) {
		return "w1", nil
	}
	return it.WindowID, err
}

// BranchIDs returns the entry ids of an agent's current branch, root first.
func (r *Reader) BranchIDs(ctx context.Context, taskID, agent string) ([]string, error) {
	return r.q.BranchEntryIDs(ctx, projectionsdb.BranchEntryIDsParams{TaskID: taskID, Agent: agent})
}

// BranchIDsFrom returns at most n entry ids of an agent's current branch
// in order, from branch index from on.
func (r *Reader) BranchIDsFrom(ctx context.Context, taskID, agent string, from int64, n int) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	return r.q.BranchEntryIDsFrom(ctx, projectionsdb.BranchEntryIDsFromParams{TaskID: taskID, Agent: agent, FromIndex: from, MaxCount: int64(n)})
}

// FirstOnBranchBefore returns the id among ids at the lowest index of an
// agent's current branch below before, and that index, or -1 when none of
// them is there. It costs one index lookup per id.
func (r *Reader) FirstOnBranchBefore(ctx context.Context, taskID, agent string, ids []string, before int64) (string, int64, error) {
	if len(ids) == 0 || before <= 0 {
		return "", -1, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return "", -1, err
	}
	rows, err := r.q.OnBranchBefore(ctx, projectionsdb.OnBranchBeforeParams{TaskID: taskID, Agent: agent, Ids: string(list), BeforeIndex: before})
	if err != nil {
		return "", -1, err
	}
	id, at := "", int64(-1)
	for _, row := range rows {
		if at < 0 || row.BranchIndex < at {
			id, at = row.EntryID, row.BranchIndex
		}
	}
	return id, at, nil
}

// LastBranchChangeKeep returns how many entries the last change of an
// agent's branch kept, or -1 when the branch never changed.
func (r *Reader) LastBranchChangeKeep(ctx context.Context, taskID, agent string) (int64, error) {
	keep, err := r.q.LastBranchChangeKeep(ctx, projectionsdb.LastBranchChangeKeepParams{TaskID: taskID, Agent: agent})
	if errors.Is(err, sql.ErrNoRows) {
		return -1, nil
	}
	return keep, err
}

// BranchLengthAt returns the length of an agent's branch as of log
// position at, read from its stream's branch changes: 0 before the first.
func (r *Reader) BranchLengthAt(ctx context.Context, taskID, agent string, at int64) (int64, error) {
	return r.q.BranchLengthAt(ctx, projectionsdb.BranchLengthAtParams{Stream: taskID + agent, At: at})
}

// BranchKeptAfter reports whether every change of an agent's branch after
// log position after kept at least its first n entries, so that the branch
// as of after, if n long, is a prefix of the current one. last is the
// position of the last change, or after when there is none.
func (r *Reader) BranchKeptAfter(ctx context.Context, taskID, agent string, after, n int64) (kept bool, last int64, err error) {
	c, err := r.q.BranchChangesAfter(ctx, projectionsdb.BranchChangesAfterParams{Stream: taskID + agent, After: after})
	switch {
	case err != nil:
		return false, 0, err
	case c.Changes == 0:
		return true, after, nil
	}
	return c.MinKeep >= n, c.LastPosition, nil
}

// BudgetAt returns an agent's budget as of log position at, as its
// registration or its last re-attach by then set it, or ErrNotFound when
// it was not registered by then.
func (r *Reader) BudgetAt(ctx context.Context, taskID, agent string, at int64) (events.Budget, error) {
	raw, err := r.q.BudgetAt(ctx, projectionsdb.BudgetAtParams{Stream: taskID + agent, At: at})
	if err != nil {
		return events.Budget{}, notFound(err)
	}
	return budgets.decode(raw)
}

// StoredEntries returns which of ids an agent has stored, in one query.
func (r *Reader) StoredEntries(ctx context.Context, taskID, agent string, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	stored, err := r.q.StoredEntryIDs(ctx, projectionsdb.StoredEntryIDsParams{TaskID: taskID, Agent: agent, Ids: string(list)})
	for _, id := range stored {
		out[id] = true
	}
	return out, err
}

// FirstUnstored returns the index in ids of the first id the agent has not
// stored, or -1 when it has stored them all. Its one query stops at that id.
func (r *Reader) FirstUnstored(ctx context.Context, taskID, agent string, ids []string) (int, error) {
	if len(ids) == 0 {
		return -1, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return 0, err
	}
	i, err := r.q.FirstUnstoredEntry(ctx, projectionsdb.FirstUnstoredEntryParams{TaskID: taskID, Agent: agent, Ids: string(list)})
	if errors.Is(err, sql.ErrNoRows) {
		return -1, nil
	}
	return int(i), err
}

// WholeBranch is the branch-index bound of the history reads below that
// read the whole current branch. A smaller end reads only its first end
// entries: the inspector answers as of a past position whose branch was
// that prefix of the current one.
const WholeBranch = math.MaxInt64

// Window is one window of a current branch.
type Window struct {
	Ordinal   int64
	ID        string
	ItemCount int64
}

// Windows returns the windows of an agent's current branch that hold at
// least one item below branch index end, in order, with those items'
// counts.
func (r *Reader) Windows(ctx context.Context, taskID, agent string, end int64) ([]Window, error) {
	rows, err := r.q.HistoryWindows(ctx, projectionsdb.HistoryWindowsParams{TaskID: taskID, Agent: agent, BranchEnd: end})
	if err != nil {
		return nil, err
	}
	out := make([]Window, len(rows))
	for i, w := range rows {
		out[i] = Window{Ordinal: w.WindowOrdinal, ID: w.WindowID, ItemCount: w.ItemCount}
	}
	return out, nil
}

// Item is the metadata of one history item of a current branch.
type Item struct {
	BranchIndex   int64
	EntryID       string
	WindowOrdinal int64
	WindowID      string
	Role          string
	RawRole       string
	ToolNamespace string
	ToolName      string
	ToolCallID    string
	Hidden        bool
	NChars        int64
	Images        int64
	Calls         []history.Call

	// Where the text is, when walkItems read it with placed.
	textChunk, textBytes int64
}

func itemFrom(i projectionsdb.HistoryItemByEntryRow) Item {
	return Item{BranchIndex: i.BranchIndex, EntryID: i.EntryID, WindowOrdinal: i.WindowOrdinal, WindowID: i.WindowID,
		Role: i.Role, RawRole: i.RawRole, ToolNamespace: i.ToolNamespace, ToolName: i.ToolName, ToolCallID: i.ToolCallID,
		Hidden: i.Hidden != 0, NChars: i.NChars, Images: i.Images}
}

// UserRequest is a user request of an agent's branch: one of its history
// items of raw role user that is not hidden.
type UserRequest struct {
	BranchIndex int64
	EntryID     string
	WindowID    string
}

// UserRequests returns the newest n user requests of an agent's current
// branch, newest first, and how many it holds in all. Control messages,
// normalised to role user, are not requests: the raw role tells them
// apart. It reads the requests alone, by an index, whatever the branch's
// length.
func (r *Reader) UserRequests(ctx context.Context, taskID, agent string, n int) ([]UserRequest, int64, error) {
	rows, err := r.q.NewestUserRequests(ctx, projectionsdb.NewestUserRequestsParams{TaskID: taskID, Agent: agent, MaxItems: int64(n)})
	if err != nil {
		return nil, 0, err
	}
	out := make([]UserRequest, len(rows))
	for i, row := range rows {
		out[i] = UserRequest(row)
	}
	total := int64(len(out))
	if len(out) == n {
		if total, err = r.q.CountUserRequests(ctx, projectionsdb.CountUserRequestsParams{TaskID: taskID, Agent: agent}); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// itemsPage is how many items EachItem reads per query.
const itemsPage = 512

// EachItem calls fn with the items of an agent's current branch below
// branch index end and their tool calls in branch order until fn returns
// false or an error. With recentFirst, the newest come first. It holds one
// page of items at a time.
func (r *Reader) EachItem(ctx context.Context, taskID, agent string, end int64, recentFirst bool, fn func(Item) (bool, error)) error {
	return r.walkItems(ctx, taskID, agent, end, recentFirst, false, itemsPage, fn)
}

// walkItems is EachItem reading pages of firstPage items, then twice as
// many each page up to itemsPage. With placed, each item also says which
// chunk holds its text.
func (r *Reader) walkItems(ctx context.Context, taskID, agent string, end int64, recentFirst, placed bool, firstPage int, fn func(Item) (bool, error)) error {
	// readPage reads n items after a branch index, or before it when
	// recentFirst.
	readPage := func(from int64, n int) ([]Item, error) {
		var out []Item
		switch {
		case placed && recentFirst:
			rows, err := r.q.HistoryItemPlacesBefore(ctx, projectionsdb.HistoryItemPlacesBeforeParams{TaskID: taskID, Agent: agent, Before: from, MaxItems: int64(n)})
			for _, row := range rows {
				out = append(out, placedItem(projectionsdb.HistoryItemPlacesAfterRow(row)))
			}
			return out, err
		case placed:
			rows, err := r.q.HistoryItemPlacesAfter(ctx, projectionsdb.HistoryItemPlacesAfterParams{TaskID: taskID, Agent: agent, After: from, BranchEnd: end, MaxItems: int64(n)})
			for _, row := range rows {
				out = append(out, placedItem(row))
			}
			return out, err
		case recentFirst:
			rows, err := r.q.HistoryItemsBefore(ctx, projectionsdb.HistoryItemsBeforeParams{TaskID: taskID, Agent: agent, Before: from, MaxItems: int64(n)})
			for _, row := range rows {
				out = append(out, itemFrom(projectionsdb.HistoryItemByEntryRow(row)))
			}
			return out, err
		default:
			rows, err := r.q.HistoryItemsAfter(ctx, projectionsdb.HistoryItemsAfterParams{TaskID: taskID, Agent: agent, After: from, BranchEnd: end, MaxItems: int64(n)})
			for _, row := range rows {
				out = append(out, itemFrom(projectionsdb.HistoryItemByEntryRow(row)))
			}
			return out, err
		}
	}
	from := int64(-1)
	if recentFirst {
		from = end
	}
	for n := firstPage; ; n = min(2*n, itemsPage) {
		page, err := readPage(from, n)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		first, last := page[0].BranchIndex, page[len(page)-1].BranchIndex
		calls, err := r.q.HistoryCallsBetween(ctx, projectionsdb.HistoryCallsBetweenParams{
			TaskID: taskID, Agent: agent, Low: min(first, last), High: max(first, last),
		})
		if err != nil {
			return err
		}
		byIndex := make(map[int64][]history.Call, len(page))
		for _, c := range calls {
			byIndex[c.BranchIndex] = append(byIndex[c.BranchIndex], history.Call{ID: c.CallID, Name: c.ToolName})
		}
		for _, it := range page {
			it.Calls = byIndex[it.BranchIndex]
			more, err := fn(it)
			if err != nil || !more {
				return err
			}
		}
		if len(page) < n {
			return nil
		}
		from = last
	}
}

// placedItem is an item with where its text is.
func placedItem(row projectionsdb.HistoryItemPlacesAfterRow) Item {
	it := Item{BranchIndex: row.BranchIndex, EntryID: row.EntryID, WindowOrdinal: row.WindowOrdinal, WindowID: row.WindowID,
		Role: row.Role, RawRole: row.RawRole, ToolNamespace: row.ToolNamespace, ToolName: row.ToolName, ToolCallID: row.ToolCallID,
		Hidden: row.Hidden != 0, NChars: row.NChars, Images: row.Images}
	it.textChunk, it.textBytes = row.TextChunk, row.TextBytes
	return it
}

// ItemByEntry returns the item of an entry on the current branch below
// branch index end, or ErrNotFound.
func (r *Reader) ItemByEntry(ctx context.Context, taskID, agent string, end int64, entryID string) (Item, error) {
	row, err := r.q.HistoryItemByEntry(ctx, projectionsdb.HistoryItemByEntryParams{TaskID: taskID, Agent: agent, EntryID: entryID})
	if err != nil {
		return Item{}, notFound(err)
	}
	if row.BranchIndex >= end {
		return Item{}, ErrNotFound
	}
	return itemFrom(row), nil
}

// byEntryLimit is how many entries ItemsOf looks up one by one.
// For more it reads the whole branch once.
const byEntryLimit = 256

// ItemsOf returns the items of the current branch below branch index end
// among the entries ids, in branch order, with their tool calls. Entries
// not there are left out.
func (r *Reader) ItemsOf(ctx context.Context, taskID, agent string, end int64, ids []string) ([]Item, error) {
	if len(ids) > byEntryLimit {
		want := make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		var out []Item
		err := r.EachItem(ctx, taskID, agent, end, false, func(it Item) (bool, error) {
			if want[it.EntryID] {
				out = append(out, it)
			}
			return true, nil
		})
		return out, err
	}
	out := make([]Item, 0, len(ids))
	for _, id := range ids {
		it, err := r.ItemByEntry(ctx, taskID, agent, end, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		calls, err := r.q.HistoryCallsAt(ctx, projectionsdb.HistoryCallsAtParams{TaskID: taskID, Agent: agent, BranchIndex: it.BranchIndex})
		if err != nil {
			return nil, err
		}
		for _, c := range calls {
			it.Calls = append(it.Calls, history.Call{ID: c.CallID, Name: c.ToolName})
		}
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b Item) int { return cmp.Compare(a.BranchIndex, b.BranchIndex) })
	return out, nil
}

// EntryRaw returns an entry's raw JSON as recorded: the entry of its
// history.entry_recorded event, read through the log.
func (r *Reader) EntryRaw(ctx context.Context, taskID, agent, entryID string) ([]byte, error) {
	pos, err := r.q.HistoryEntryPosition(ctx, projectionsdb.HistoryEntryPositionParams{TaskID: taskID, Agent: agent, EntryID: entryID})
	if err != nil {
		return nil, notFound(err)
	}
	return entryAt(ctx, r.db, pos)
}

// entryAt returns the entry of the history.entry_recorded event at pos.
func entryAt(ctx context.Context, db eventlog.DBTX, pos int64) ([]byte, error) {
	ev, err := eventlog.EventAt(ctx, db, pos)
	if err != nil {
		return nil, fmt.Errorf("the event of a history entry at %d: %w", pos, err)
	}
	return recordedEntry(ev)
}

// recordedEntry returns the entry ev records, byte for byte as the
// projector took it.
func recordedEntry(ev events.Event) ([]byte, error) {
	if ev.Type != events.TypeHistoryEntryRecorded {
		return nil, fmt.Errorf("the event of a history entry at %d is a %s", ev.Position, ev.Type)
	}
	p, err := events.Decode(ev)
	if err != nil {
		return nil, err
	}
	return p.(*events.HistoryEntryRecorded).Entry, nil
}
