package inspector

import (
	"html/template"
	"net/http"

	"github.com/go-chi/chi/v5"
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
	svc, release, err := in.states.at(ctx, d.TaskID, at)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	defer release()
	if _, d.Windows, err = inspectTool[tools.HistoryListWindowsDetails](ctx, svc, d.TaskID, d.Agent, tools.HistoryListWindows, map[string]any{"limit": 200}); err != nil {
		in.fail(w, r, err)
		return
	}
	if d.Window == "" { // the current window
		for _, win := range d.Windows.Windows {
			if win.Current {
				d.Window = win.WindowID
			}
		}
	}
	if d.Window != "" {
		if _, d.Items, err = inspectTool[tools.HistoryListItemsDetails](ctx, svc, d.TaskID, d.Agent, tools.HistoryListItems,
			map[string]any{"window_id": d.Window, "limit": 200, "max_chars_per_item": 160}); err != nil {
			in.fail(w, r, err)
			return
		}
	}
	if item := q.Get("item"); item != "" {
		it, images, cut, err := readWholeItem(ctx, svc, d.TaskID, d.Agent, d.Window, item)
		if err != nil {
			in.fail(w, r, err)
			return
		}
		d.Item, d.Images, d.Cut = &it, images, cut
	}
	if d.Query != "" {
		_, sd, err := inspectTool[tools.HistorySearchContentsDetails](ctx, svc, d.TaskID, d.Agent, tools.HistorySearchContents, map[string]any{"query": d.Query, "limit": 50})
		if err != nil {
			in.fail(w, r, err)
			return
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
	in.renderAt(w, r, "history", d.Agent+" · history", at, d)
}
