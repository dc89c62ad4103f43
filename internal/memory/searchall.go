package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/tools"
)

// Agent kinds, as a cross-task search filters them: what wrote an agent's
// history, told by its session key.
const (
	KindPi         = "pi"
	KindClaudeCode = "claude-code"
	KindCodex      = "codex"
)

// AgentKinds are the kinds SearchAll knows.
var AgentKinds = []string{KindPi, KindClaudeCode, KindCodex}

// AgentKind returns the kind of an agent attached with sessionKey:
// claude-code/… and codex/… are those agents' hooks', anything else a Pi
// session file's path.
func AgentKind(sessionKey string) string {
	switch {
	case strings.HasPrefix(sessionKey, KindClaudeCode+"/"):
		return KindClaudeCode
	case strings.HasPrefix(sessionKey, KindCodex+"/"):
		return KindCodex
	}
	return KindPi
}

// SearchAllMaxLimit bounds the matches of one SearchAll.
const SearchAllMaxLimit = 500

// SearchAllQuery is a search for a literal across tasks, for the user
// rather than the model.
type SearchAllQuery struct {
	Query string
	Kind  string    // only agents of this kind; "" for all
	Since time.Time // only tasks active since; zero for all
	Limit int       // at most this many matches, 1 to SearchAllMaxLimit
}

// SearchAllMatch is an item of some agent's history that holds the query.
type SearchAllMatch struct {
	TaskID     string `json:"task_id"`
	Agent      string `json:"agent"`
	Kind       string `json:"agent_kind"`
	SessionKey string `json:"session_key"`
	tools.SearchHit
}

// SearchAllResult is what SearchAll found: the matches, newest task first
// and, within an agent, as history_search_contents orders them; More says
// there are more than the limit.
type SearchAllResult struct {
	Query          string           `json:"query"`
	Matches        []SearchAllMatch `json:"matches"`
	More           bool             `json:"more"`
	TasksSearched  int              `json:"tasks_searched"`
	AgentsSearched int              `json:"agents_searched"`
}

// SearchAll finds a literal, exactly and case-sensitively as
// history_search_contents does, in the history of every agent of every
// task (or of the kind and activity asked), newest activity first. It
// reads as the inspector does: not audited, past any fence.
func (s *Service) SearchAll(ctx context.Context, q SearchAllQuery) (SearchAllResult, error) {
	out := SearchAllResult{Query: q.Query, Matches: []SearchAllMatch{}}
	switch {
	case q.Query == "":
		return out, invalidf("the text to find is empty")
	case q.Limit < 1 || q.Limit > SearchAllMaxLimit:
		return out, invalidf("limit must be 1 to %d, not %d", SearchAllMaxLimit, q.Limit)
	case q.Kind != "" && !slices.Contains(AgentKinds, q.Kind):
		return out, invalidf("agent kind %q: the kinds are %s", q.Kind, strings.Join(AgentKinds, ", "))
	}
	before := int64(0)
	for {
		page, err := s.Tasks(ctx, before, TasksMaxLimit)
		if err != nil {
			return out, err
		}
		for _, task := range page.Tasks {
			if !q.Since.IsZero() {
				// Tasks come newest activity first: the rest are older still.
				if at, err := time.Parse(time.RFC3339Nano, task.LastActivityAt); err == nil && at.Before(q.Since) {
					return out, nil
				}
			}
			out.TasksSearched++
			for _, a := range task.Agents {
				kind := AgentKind(a.SessionKey)
				if q.Kind != "" && kind != q.Kind {
					continue
				}
				out.AgentsSearched++
				// With the limit reached, one more hit anywhere only says
				// there is more.
				left := q.Limit - len(out.Matches)
				hits, more, err := s.searchAgent(ctx, task.TaskID, a.Agent, q.Query, max(1, min(left, maxHistoryLimit)))
				if err != nil {
					return out, fmt.Errorf("task %s, agent %s: %w", task.TaskID, a.Agent, err)
				}
				if left == 0 {
					if len(hits) > 0 {
						out.More = true
						return out, nil
					}
					continue
				}
				for _, h := range hits {
					out.Matches = append(out.Matches, SearchAllMatch{TaskID: task.TaskID, Agent: a.Agent, Kind: kind, SessionKey: a.SessionKey, SearchHit: h})
				}
				out.More = out.More || more
			}
		}
		if page.NextBefore == nil {
			return out, nil
		}
		before = *page.NextBefore
	}
}

// searchAgent runs history_search_contents for one agent, unaudited.
func (s *Service) searchAgent(ctx context.Context, taskID, agent, query string, limit int) ([]tools.SearchHit, bool, error) {
	args, err := json.Marshal(map[string]any{"query": query, "limit": limit})
	if err != nil {
		return nil, false, err
	}
	res, err := s.InspectTool(ctx, tools.HistorySearchContents, CallContext{TaskID: taskID, Agent: agent}, args)
	if err != nil {
		return nil, false, err
	}
	d, ok := res.Details.(tools.HistorySearchContentsDetails)
	if !ok {
		return nil, false, fmt.Errorf("history_search_contents answered details of type %T", res.Details)
	}
	return d.Results, d.More || d.Omitted > 0, nil
}
