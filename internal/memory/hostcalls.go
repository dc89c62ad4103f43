package memory

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// hostCalls remembers the agent of each tool call a host announced. MCP
// calls from Claude Code carry no task: its PreToolUse hook names the call
// by the host's id before the call runs, and the call then finds its agent
// by that id (docs/claude-code.md §6; Codex alike, docs/codex.md). The model cannot choose the id.
type hostCalls struct {
	mu    sync.Mutex
	byID  map[string]hostCall
	order []string // ids in the order they were bound, oldest first
}

// hostCall is one announced call.
type hostCall struct {
	cc CallContext
	at time.Time
}

// The bounds of hostCalls: a call is answered within seconds of its hook,
// and a host that announces calls it never makes cannot grow the map.
const (
	maxHostCalls = 4096
	hostCallTTL  = 30 * time.Minute
)

// BindHostCall records that the host's tool call id belongs to the agent
// of cc, whose call id becomes id. Binding an id again rebinds it.
func (s *Service) BindHostCall(id string, cc CallContext) error {
	if id == "" || len(id) > maxCallIDBytes || !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
		return invalidf("the host's tool call id must be 1 to %d bytes of valid UTF-8 without U+0000", maxCallIDBytes)
	}
	cc.CallID = id
	h := &s.hostCalls
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byID == nil {
		h.byID = map[string]hostCall{}
	}
	if _, ok := h.byID[id]; !ok {
		h.order = append(h.order, id)
	}
	h.byID[id] = hostCall{cc: cc, at: time.Now()}
	for len(h.order) > maxHostCalls {
		delete(h.byID, h.order[0])
		h.order = h.order[1:]
	}
	return nil
}

// HostCall returns the call context a hook bound to the host's call id.
func (s *Service) HostCall(id string) (CallContext, error) {
	h := &s.hostCalls
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.byID[id]
	if id == "" || !ok || time.Since(c.at) > hostCallTTL {
		return CallContext{}, newError(ErrForbidden, "memoryd does not know this call: the host's PreToolUse hook announces each call "+
			"before it runs, and this one was not announced or is older than %s (docs/claude-code.md, docs/codex.md)", hostCallTTL)
	}
	return c.cc, nil
}
