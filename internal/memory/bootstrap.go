package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections"
)

// These constants bound the bootstrap text, as docs/behaviour.md §F says.
const (
	bootstrapNotesFiles    = 25
	bootstrapNotesChars    = 6000
	bootstrapUserRequests  = 25
	bootstrapRequestChars  = 160
	bootstrapRequestsChars = 6000
)

// bootstrapInput is everything the bootstrap text is made of.
type bootstrapInput struct {
	// host is "" for Pi's rollover, or KindClaudeCode or KindCodex for
	// such a session after its own compaction or a resume.
	host                           string
	agent, reason                  string
	firstWindow, current, previous string
	requests                       []requestLine
	olderRequests                  int
	notes                          []projections.NoteInfo
	notesErr                       error
}

// requestLine is one user request the bootstrap lists.
type requestLine struct {
	WindowID string `json:"window_id"`
	ItemID   string `json:"item_id"`
	Preview  string `json:"preview"`
}

// notesLine is one note file the bootstrap lists.
type notesLine struct {
	Path      string `json:"path"`
	Bytes     int64  `json:"bytes"`
	UpdatedAt string `json:"updated_at"`
}

// buildBootstrap gathers the caller's notes and user requests and renders
// the bootstrap of the window after st's, whatever the reason.
func buildBootstrap(ctx context.Context, r *projections.Reader, c caller, st fence.State, reason string) string {
	in := bootstrapInput{agent: c.agent.Agent, reason: reason, firstWindow: "w1",
		current: st.NextWindowID(), previous: st.WindowID}
	in.notes, in.notesErr = r.Notes(ctx, c.taskID, c.agent.Agent, "")
	in.requests, in.olderRequests = userRequests(ctx, r, c)
	return renderBootstrap(in)
}

// userRequests returns the newest user requests of the caller's branch,
// oldest first, and how many older ones were left out.
func userRequests(ctx context.Context, r *projections.Reader, c caller) ([]requestLine, int) {
	// The bootstrapUserRequests newest, and how many there are in all.
	reqs, total, err := r.UserRequests(ctx, c.taskID, c.agent.Agent, bootstrapUserRequests)
	if err != nil {
		return nil, 0
	}
	older := int(total) - len(reqs)
	slices.Reverse(reqs)
	var out []requestLine
	for _, it := range reqs {
		text, _, err := r.ItemText(ctx, c.taskID, c.agent.Agent, it.EntryID)
		if err != nil {
			continue
		}
		p := strings.Join(strings.Fields(sliceChars(text, 0, bootstrapRequestChars+1)), " ")
		if history.Chars(p) > bootstrapRequestChars {
			p = sliceChars(p, 0, bootstrapRequestChars-1) + "…"
		}
		out = append(out, requestLine{WindowID: it.WindowID, ItemID: it.EntryID, Preview: p})
	}
	return out, older
}

// hostTools names memoryd's tools as the host shows them to the model:
// Claude Code as functions mcp__memoryd__<tool>, Codex as the functions of
// the namespace mcp__memoryd.
func hostTools(host string) string {
	if host == KindCodex {
		return "the mcp__memoryd namespace"
	}
	return "mcp__memoryd__*"
}

// renderBootstrap renders the bootstrap text. It is pure, and golden files
// in testdata/bootstrap pin its output.
func renderBootstrap(in bootstrapInput) string {
	var b strings.Builder
	if in.host != "" {
		fmt.Fprintf(&b, "memoryd keeps this session's whole transcript as read-only history and your notes, through its tools (%s). A summary loses details: recover them from there, not from memory.\n\n", hostTools(in.host))
	} else {
		b.WriteString(history.ResetMarker + "\n")
		b.WriteString("This is a context-window reset notice, NOT a conversation summary. The previous context window was closed and none of its conversation is kept here.\n\n")
	}
	fmt.Fprintf(&b, "Agent: %s\n", in.agent)
	fmt.Fprintf(&b, "First context window id: %s\n", in.firstWindow)
	fmt.Fprintf(&b, "Current context window id: %s\n", in.current)
	if in.previous != "" {
		fmt.Fprintf(&b, "Previous context window id: %s\n", in.previous)
	}
	fmt.Fprintf(&b, "Reset reason: %s\n\n", in.reason)

	b.WriteString("Recovery protocol:\n")
	b.WriteString("1. Read your notes checkpoint first (for example notes_read_file with path checkpoint.md).\n")
	previous := in.previous
	if previous == "" && in.host != "" {
		previous = in.current
	}
	fmt.Fprintf(&b, "2. For missing details use history: read a known item directly with history_read_item (window_id and item_id), or find it first: history_list_items with window_id %s and role user for the requirements, history_search_contents with a keyword for evidence, then history_read_item with the offset_chars and limit_chars it returned.\n", previous)
	b.WriteString("3. Do not ask the user again for anything you can recover from notes or history.\n")
	if in.host != "" {
		b.WriteString("4. Take incremental notes while you work (notes_append_to_file, notes_write_file), so a compaction loses nothing you need.\n\n")
	} else {
		b.WriteString("4. A reminder or fallback whose source_context_window_id is not the current window is stale: ignore it.\n")
		b.WriteString("5. Take incremental notes while you work so you do not miss important info. Call new_context after saving your checkpoint.\n\n")
	}

	b.WriteString("Recent user requests (oldest first; read one with history_read_item):\n")
	if len(in.requests) == 0 {
		b.WriteString("There are no user requests in the history of this agent.\n")
	} else {
		lines := make([]string, len(in.requests))
		for i, rq := range in.requests {
			lines[i] = compactJSON(rq)
		}
		// Keep the newest requests that fit, shown oldest first.
		first, used := len(lines), 0
		for first > 0 && used+chars(lines[first-1])+1 <= bootstrapRequestsChars {
			first--
			used += chars(lines[first]) + 1
		}
		for _, l := range lines[first:] {
			b.WriteString(l + "\n")
		}
		if older := in.olderRequests + first; older > 0 {
			fmt.Fprintf(&b, "(%d older user request(s) not shown; use history_list_items with role user to see them)\n", older)
		}
	}
	b.WriteString("\n")

	if in.host != "" {
		fmt.Fprintf(&b, "Existing notes for %s (newest first; bodies are not included):\n", in.agent)
	} else {
		fmt.Fprintf(&b, "Existing notes for %s at this context-window reset (newest first; bodies are not included):\n", in.agent)
	}
	b.WriteString(notesListing(in.agent, in.notes, in.notesErr))
	return b.String()
}

// notesListing lists agent's notes, newest first, within the bootstrap's
// bounds.
func notesListing(agent string, notes []projections.NoteInfo, notesErr error) string {
	switch {
	case notesErr != nil:
		return "The notes index is unavailable right now; use notes_list_files_by_prefix and notes_search_contents to find your notes.\n"
	case len(notes) == 0:
		return "There are no note files for this agent yet.\n"
	}
	notes = slices.Clone(notes)
	slices.SortStableFunc(notes, func(x, y projections.NoteInfo) int { return int(y.UpdatedPosition - x.UpdatedPosition) })
	notes, omitted := limitList(notes, bootstrapNotesFiles)
	lines := make([]notesLine, len(notes))
	for i, n := range notes {
		lines[i] = notesLine{Path: address.Full(agent, n.Path), Bytes: n.Bytes, UpdatedAt: n.UpdatedAt}
	}
	text, _, _ := fitList(lines, bootstrapNotesChars, omitted, "use notes_list_files_by_prefix to see every note file")
	return text + "\n"
}
