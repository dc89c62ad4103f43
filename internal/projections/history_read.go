package projections

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// Branch returns an agent's current branch revision and length (zeros
// before the first sync).
func (r *Reader) Branch(ctx context.Context, taskID, agent string) (revision, length int64, err error) {
	b, err := r.q.GetHistoryBranch(ctx, projectionsdb.GetHistoryBranchParams{TaskID: taskID, Agent: agent})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	return b.Revision, b.Length, err
}

// BranchIDs returns the entry ids of an agent's current branch, root first.
func (r *Reader) BranchIDs(ctx context.Context, taskID, agent string) ([]string, error) {
	return r.q.BranchEntryIDs(ctx, projectionsdb.BranchEntryIDsParams{TaskID: taskID, Agent: agent})
}

// EntryDigest returns the digest of a stored entry and whether it exists.
func (r *Reader) EntryDigest(ctx context.Context, taskID, agent, entryID string) (string, bool, error) {
	d, err := r.q.HistoryEntryDigest(ctx, projectionsdb.HistoryEntryDigestParams{TaskID: taskID, Agent: agent, EntryID: entryID})
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return d, err == nil, err
}

// Window is one window of a current branch.
type Window struct {
	Ordinal   int64
	ID        string
	ItemCount int64
}

// Windows returns the windows of an agent's current branch that hold at
// least one item, in order.
func (r *Reader) Windows(ctx context.Context, taskID, agent string) ([]Window, error) {
	rows, err := r.q.HistoryWindows(ctx, projectionsdb.HistoryWindowsParams{TaskID: taskID, Agent: agent})
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
}

func itemFrom(i projectionsdb.HistoryItemsRow) Item {
	return Item{BranchIndex: i.BranchIndex, EntryID: i.EntryID, WindowOrdinal: i.WindowOrdinal, WindowID: i.WindowID,
		Role: i.Role, RawRole: i.RawRole, ToolNamespace: i.ToolNamespace, ToolName: i.ToolName, ToolCallID: i.ToolCallID,
		Hidden: i.Hidden != 0, NChars: i.NChars, Images: i.Images}
}

// Items returns the items of an agent's current branch in branch order,
// with their tool calls.
func (r *Reader) Items(ctx context.Context, taskID, agent string) ([]Item, error) {
	rows, err := r.q.HistoryItems(ctx, projectionsdb.HistoryItemsParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return nil, err
	}
	calls, err := r.q.HistoryCalls(ctx, projectionsdb.HistoryCallsParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return nil, err
	}
	byIndex := make(map[int64][]history.Call)
	for _, c := range calls {
		byIndex[c.BranchIndex] = append(byIndex[c.BranchIndex], history.Call{ID: c.CallID, Name: c.ToolName})
	}
	out := make([]Item, len(rows))
	for i, row := range rows {
		out[i] = itemFrom(row)
		out[i].Calls = byIndex[row.BranchIndex]
	}
	return out, nil
}

// ItemByEntry returns the item of an entry on the current branch, or
// ErrNotFound.
func (r *Reader) ItemByEntry(ctx context.Context, taskID, agent, entryID string) (Item, error) {
	row, err := r.q.HistoryItemByEntry(ctx, projectionsdb.HistoryItemByEntryParams{TaskID: taskID, Agent: agent, EntryID: entryID})
	if err != nil {
		return Item{}, notFound(err)
	}
	return itemFrom(projectionsdb.HistoryItemsRow(row)), nil
}

// byEntryLimit is how many entries ItemsOf looks up one by one; for more
// it reads the whole branch once.
const byEntryLimit = 256

// ItemsOf returns the items of the current branch among the entries ids,
// in branch order, with their tool calls. Entries not on the branch are
// left out.
func (r *Reader) ItemsOf(ctx context.Context, taskID, agent string, ids []string) ([]Item, error) {
	if len(ids) > byEntryLimit {
		all, err := r.Items(ctx, taskID, agent)
		if err != nil {
			return nil, err
		}
		want := make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		return slices.DeleteFunc(all, func(it Item) bool { return !want[it.EntryID] }), nil
	}
	out := make([]Item, 0, len(ids))
	for _, id := range ids {
		it, err := r.ItemByEntry(ctx, taskID, agent, id)
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

// EntryRaw returns an entry's raw JSON as stored.
func (r *Reader) EntryRaw(ctx context.Context, taskID, agent, entryID string) ([]byte, error) {
	s, err := r.q.HistoryEntryRaw(ctx, projectionsdb.HistoryEntryRawParams{TaskID: taskID, Agent: agent, EntryID: entryID})
	return []byte(s), notFound(err)
}
