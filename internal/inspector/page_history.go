package inspector

import (
	"context"
	"errors"
	"html/template"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/tools"
)

// historyData is what the history page shows.
type historyData struct {
	TaskID, Agent string
	Windows       tools.HistoryListWindowsDetails
	Window        string
	Items         tools.HistoryListItemsDetails
	Item          *tools.HistoryReadItemDetails
	Images        []template.URL
	Cut           bool // the item's text is longer than shown
	Query         string
	Hits          []searchHit
	More          bool
}

// searchHit is one search result with its matches marked.
type searchHit struct {
	ItemID, WindowID, Role, ToolName string
	Regions                          [][]segment
}

// historyPage shows an agent's history with its windows, one window's
// items, one item and a search. Its reads are not audited.
func (in *Inspector) historyPage(w http.ResponseWriter, r *http.Request) {
	at, err := atOf(r)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	ctx := r.Context()
	d := historyData{TaskID: chi.URLParam(r, "task"), Agent: q.Get("agent"), Window: q.Get("window"), Query: q.Get("q")}
	if d.Agent == "" {
		d.Agent = "/root"
	}
	// Not a copy for an agent that is not there at that position.
	if err := agentAt(ctx, in.cfg.Service, d.TaskID, d.Agent, at); err != nil {
		in.fail(w, r, err)
		return
	}
	if err := in.states.readHistory(ctx, &d, q.Get("item"), at); err != nil {
		in.fail(w, r, err)
		return
	}
	in.renderAt(w, r, "history", d.Agent+" · history", at, d)
}

// readHistory fills d, which names the task, agent, window and query, and
// the item to show, as of position at. A past position whose branch is a
// prefix of the agent's current one is read from the live projections,
// and any other from a copy, as is the page whose live branch switched
// away from the past one while it was read.
func (ss *states) readHistory(ctx context.Context, d *historyData, item string, at int64) error {
	asked := *d
	err := ss.readHistoryFrom(ctx, d, item, at, false)
	if errors.Is(err, memory.ErrNeedsCopy) {
		*d = asked
		err = ss.readHistoryFrom(ctx, d, item, at, true)
	}
	return err
}

// readHistoryFrom is readHistory on the view historyView picks.
func (ss *states) readHistoryFrom(ctx context.Context, d *historyData, item string, at int64, copied bool) error {
	v, release, err := ss.historyView(ctx, d.TaskID, d.Agent, at, copied)
	if err != nil {
		return err
	}
	defer release()
	return fillHistory(ctx, v, d, item)
}

// historyView returns the view of an agent's history as of position at,
// and its release for when the page is done with it: the live projections
// bounded to the branch as of at when that is a prefix of the current one
// (and not copied), else a copy of the task's history up to at.
func (ss *states) historyView(ctx context.Context, task, agent string, at int64, copied bool) (historyView, func(), error) {
	if at > 0 && !copied {
		b, prefix, err := ss.live.PastBranchAt(ctx, task, agent, at)
		if err != nil {
			return historyView{}, nil, err
		}
		if prefix {
			return historyView{svc: ss.live, task: task, agent: agent, past: &b}, func() {}, nil
		}
	}
	svc, release, err := ss.at(ctx, task, at)
	if err != nil {
		return historyView{}, nil, err
	}
	return historyView{svc: svc, task: task, agent: agent}, release, nil
}

// fillHistory fills d from v with what the page shows: the windows, the
// items of d.Window (the current one if unset), item read whole, and the
// hits of d.Query.
func fillHistory(ctx context.Context, v historyView, d *historyData, item string) error {
	var err error
	if _, d.Windows, err = inspectTool[tools.HistoryListWindowsDetails](ctx, v, tools.HistoryListWindows, map[string]any{"limit": 200}); err != nil {
		return err
	}
	if d.Window == "" { // the current window
		for _, win := range d.Windows.Windows {
			if win.Current {
				d.Window = win.WindowID
			}
		}
	}
	if d.Window != "" {
		if _, d.Items, err = inspectTool[tools.HistoryListItemsDetails](ctx, v, tools.HistoryListItems,
			map[string]any{"window_id": d.Window, "limit": 200, "max_chars_per_item": 160}); err != nil {
			return err
		}
	}
	if item != "" {
		it, images, cut, err := readWholeItem(ctx, v, d.Window, item)
		if err != nil {
			return err
		}
		d.Item, d.Images, d.Cut = &it, images, cut
	}
	if d.Query != "" {
		_, sd, err := inspectTool[tools.HistorySearchContentsDetails](ctx, v, tools.HistorySearchContents, map[string]any{"query": d.Query, "limit": 50})
		if err != nil {
			return err
		}
		d.More = sd.More || sd.Omitted > 0
		for _, res := range sd.Results {
			h := searchHit{ItemID: res.ItemID, WindowID: res.WindowID, Role: res.Role}
			if res.ToolName != nil {
				h.ToolName = *res.ToolName
			}
			for _, reg := range res.Regions {
				var ms [][2]int
				for _, m := range reg.Matches {
					ms = append(ms, [2]int{m.Start, m.End})
				}
				h.Regions = append(h.Regions, highlight(reg.Preview, reg.OffsetChars, ms))
			}
			d.Hits = append(d.Hits, h)
		}
	}
	return nil
}
