package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/projections"
)

// handoffBootstrap is the text the first SessionStart of a session that
// joined an existing task (a hand-off, memoryd handoff) adds to the
// context: who began the task, where its history stands, its recent
// requests and its notes, and how to read them by agent_name. The agent it
// continues is the one it was registered under.
func (s *Service) handoffBootstrap(ctx context.Context, host string, cc CallContext) (string, error) {
	var text string
	err := s.read(ctx, func(r *projections.Reader) error {
		me, err := identify(ctx, r, cc)
		if err != nil {
			return err
		}
		from := me.agent.ParentAgent
		if from == "" {
			return nil // a root agent continues nobody
		}
		prev, err := identify(ctx, r, CallContext{TaskID: cc.TaskID, Agent: from})
		if err != nil {
			return err
		}
		wins, err := r.Windows(ctx, cc.TaskID, from, projections.WholeBranch)
		if err != nil {
			return err
		}
		in := handoffInput{host: host, task: cc.TaskID, agent: cc.Agent, from: from, fromKind: AgentKind(prev.agent.SessionKey), windows: len(wins)}
		if len(wins) > 0 {
			in.lastWindow = wins[len(wins)-1].ID
		}
		in.notes, in.notesErr = r.Notes(ctx, cc.TaskID, from, "")
		in.requests, in.olderRequests = userRequests(ctx, r, prev)
		text = renderHandoff(in)
		return nil
	})
	return text, err
}

// handoffInput is everything a hand-off's bootstrap is made of.
type handoffInput struct {
	host, task, agent, from, fromKind string
	windows                           int
	lastWindow                        string
	requests                          []requestLine
	olderRequests                     int
	notes                             []projections.NoteInfo
	notesErr                          error
}

// renderHandoff renders a hand-off's bootstrap. It is pure.
func renderHandoff(in handoffInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This session continues a task another agent began (a hand-off). memoryd keeps that agent's whole history and its notes, read-only to you, through its tools (%s): read them before you start, and do not ask the user again for anything they hold.\n\n", hostTools(in.host))
	fmt.Fprintf(&b, "Task: %s\n", in.task)
	fmt.Fprintf(&b, "You are agent: %s\n", in.agent)
	kind := ""
	if in.fromKind != "" {
		kind = " (" + in.fromKind + ")"
	}
	fmt.Fprintf(&b, "Continuing agent: %s%s, with %d context window(s) of history", in.from, kind, in.windows)
	if in.lastWindow != "" {
		fmt.Fprintf(&b, ", the latest %s", in.lastWindow)
	}
	b.WriteString("\n\n")

	b.WriteString("Recovery protocol:\n")
	fmt.Fprintf(&b, "1. Read %s's checkpoint first: notes_read_file with path %s (its notes are read by their full path).\n", in.from, address.Full(in.from, "checkpoint.md"))
	window := in.lastWindow
	if window == "" {
		window = "w1"
	}
	fmt.Fprintf(&b, "2. For details use its history, always with agent_name %s: history_list_items with window_id %s and role user for the requirements, history_search_contents with a keyword for evidence, then history_read_item with the offset_chars and limit_chars it returned.\n", in.from, window)
	fmt.Fprintf(&b, "3. Take your own notes as you work (notes_append_to_file, notes_write_file): they are %s's, beside the other agent's.\n\n", in.agent)

	fmt.Fprintf(&b, "Recent user requests of %s (oldest first; read one with history_read_item and agent_name %s):\n", in.from, in.from)
	if len(in.requests) == 0 {
		b.WriteString("There are no user requests in its history.\n")
	}
	for _, rq := range in.requests {
		b.WriteString(compactJSON(rq) + "\n")
	}
	if in.olderRequests > 0 {
		fmt.Fprintf(&b, "(%d older user request(s) not shown; use history_list_items with role user to see them)\n", in.olderRequests)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Notes of %s (newest first; bodies are not included):\n", in.from)
	b.WriteString(notesListing(in.from, in.notes, in.notesErr))
	return b.String()
}
