package projections

import (
	"encoding/json"
	"sync"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
)

// parseCacheSize bounds a parseCache, which is emptied when it gets there.
const parseCacheSize = 1024

// parseCache memoises the decoding of small JSON values stored as text
// that every call reads back, such as an agent's budget and fence state.
// Values are cloned on the way out, so that no caller shares a pointer.
type parseCache[T any] struct {
	mu    sync.Mutex
	m     map[string]T
	clone func(T) T
	parse func([]byte) (T, error) // json.Unmarshal if nil
}

func (c *parseCache[T]) decode(raw string) (T, error) {
	c.mu.Lock()
	v, ok := c.m[raw]
	c.mu.Unlock()
	if ok {
		return c.clone(v), nil
	}
	var err error
	if c.parse != nil {
		v, err = c.parse([]byte(raw))
	} else {
		err = json.Unmarshal([]byte(raw), &v)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= parseCacheSize {
		c.m = make(map[string]T)
	}
	c.m[raw] = v
	c.mu.Unlock()
	return c.clone(v), nil
}

// clonePtr returns a copy of *p in a new variable, or nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

var (
	budgets = parseCache[events.Budget]{clone: func(b events.Budget) events.Budget {
		b.ContextWindow = clonePtr(b.ContextWindow)
		return b
	}}
	states = parseCache[fence.State]{parse: decodeState, clone: func(s fence.State) fence.State {
		s.Manual = clonePtr(s.Manual)
		s.TokensUsed = clonePtr(s.TokensUsed)
		s.ContextWindow = clonePtr(s.ContextWindow)
		return s
	}}
)
