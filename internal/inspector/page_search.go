package inspector

import (
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// searchPageLimit is how many matches the search page shows.
const searchPageLimit = 100

// searchData is what the search page shows.
type searchData struct {
	Query, Kind string
	Kinds       []string
	Hits        []crossHit
	More        bool
	Tasks       int
	Agents      int
}

// crossHit is a match of the search page, with its regions cut at the
// matches.
type crossHit struct {
	memory.SearchAllMatch
	Regions [][]segment
}

// searchPage finds a literal in the history of every task and agent
// (memory.SearchAll), at the end of the log. It records nothing.
func (in *Inspector) searchPage(w http.ResponseWriter, r *http.Request) {
	at, err := atOf(r)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	if at > 0 {
		in.renderError(w, r, http.StatusBadRequest, "the search reads the end of the log: open it without at")
		return
	}
	q := r.URL.Query()
	d := searchData{Query: q.Get("q"), Kind: q.Get("kind"), Kinds: memory.AgentKinds}
	if d.Query != "" {
		res, err := in.cfg.Service.SearchAll(r.Context(), memory.SearchAllQuery{Query: d.Query, Kind: d.Kind, Limit: searchPageLimit})
		if err != nil {
			in.fail(w, r, err)
			return
		}
		d.More, d.Tasks, d.Agents = res.More, res.TasksSearched, res.AgentsSearched
		for _, m := range res.Matches {
			h := crossHit{SearchAllMatch: m}
			for _, reg := range m.Regions {
				ms := make([][2]int, len(reg.Matches))
				for i, s := range reg.Matches {
					ms[i] = [2]int{s.Start, s.End}
				}
				h.Regions = append(h.Regions, highlight(reg.Preview, reg.OffsetChars, ms))
			}
			d.Hits = append(d.Hits, h)
		}
	}
	in.renderAt(w, r, "search", "Search", 0, d)
}
