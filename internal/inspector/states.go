package inspector

import (
	"context"
	"errors"
	"sync"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

// states gives the memory as of a log position: the live service for the
// end of the log, and for an earlier position P a scratch copy of the log
// up to P, built as `memoryd call --until P` builds it
// (forensics.Scratch, forensics.CopyLog), so that a page at P shows what
// the tools answered at P. The last few copies are kept (least recently
// used first out) so that paging at one P replays once; an evicted copy
// is closed when the last page using it is done.
//
// A new P is built from the kept copy at the largest Q < P that no page
// is using, when there is one: that copy is taken out of the cache and
// brought forward by the events in (Q, P] (forensics.ForwardLog), which
// gives what a fresh copy at P gives at the cost of P-Q events instead of
// P. A copy in use is never moved: its pages read it at its Q.
type states struct {
	live *memory.Service
	max  int

	mu       sync.Mutex
	closed   bool
	order    []*state // most recently used last
	builds   int      // copies built, for tests
	forwards int      // of which brought forward from a kept copy, for tests
}

// state is one scratch copy; ready is closed once it is built (svc or err
// set). base, until it is built, is the kept copy it is brought forward
// from (nil: a fresh copy).
type state struct {
	at      int64
	ready   chan struct{}
	svc     *memory.Service
	cleanup func()
	err     error
	refs    int
	evicted bool
	base    *state
}

var errClosed = errors.New("the inspector is closed")

func newStates(live *memory.Service, max int) *states {
	return &states{live: live, max: max}
}

// at returns the memory as of position at (0 or at least the log's end:
// the live one) and a release to call when the page is done with it.
func (ss *states) at(ctx context.Context, at int64) (*memory.Service, func(), error) {
	if at <= 0 {
		return ss.live, func() {}, nil
	}
	last, err := ss.live.LastPosition(ctx)
	if err != nil {
		return nil, nil, err
	}
	if at >= last {
		return ss.live, func() {}, nil
	}
	st, build, err := ss.acquire(at)
	if err != nil {
		return nil, nil, err
	}
	if build {
		ss.build(st)
	}
	select {
	case <-st.ready:
	case <-ctx.Done():
		ss.release(st)
		return nil, nil, ctx.Err()
	}
	if st.err != nil {
		ss.release(st)
		return nil, nil, st.err
	}
	return st.svc, func() { ss.release(st) }, nil
}

// acquire finds or adds the state at position at, holding a reference;
// build says the caller must build it.
func (ss *states) acquire(at int64) (st *state, build bool, err error) {
	var done []func()
	defer func() {
		for _, f := range done {
			f()
		}
	}()
	ss.mu.Lock()
	defer ss.mu.Unlock() // before the cleanups above
	if ss.closed {
		return nil, false, errClosed
	}
	for i, s := range ss.order {
		if s.at == at {
			ss.order = append(append(ss.order[:i:i], ss.order[i+1:]...), s)
			s.refs++
			return s, false, nil
		}
	}
	st = &state{at: at, ready: make(chan struct{}), refs: 1, base: ss.baseLocked(at)}
	if st.base != nil {
		ss.removeLocked(st.base) // it becomes st: nothing else can find it
	}
	ss.order = append(ss.order, st)
	for len(ss.order) > ss.max {
		if f := ss.evictLocked(ss.order[0]); f != nil {
			done = append(done, f)
		}
	}
	return st, true, nil
}

// baseLocked returns the built copy at the largest position below at that
// no page is using, or nil.
func (ss *states) baseLocked(at int64) *state {
	var base *state
	for _, s := range ss.order {
		if s.at < at && s.refs == 0 && s.svc != nil && (base == nil || s.at > base.at) {
			base = s
		}
	}
	return base
}

// build copies the log up to st.at into a new scratch database, or brings
// st.base's copy forward to st.at. It does not depend on the request that
// asked first: a canceled page does not spoil the copy for the next.
func (ss *states) build(st *state) {
	ctx := context.Background()
	var svc *memory.Service
	var cleanup func()
	var err error
	if base := st.base; base != nil {
		svc, cleanup = base.svc, base.cleanup
		_, err = forensics.ForwardLog(ctx, svc, ss.live, st.at, nil)
	} else if svc, cleanup, err = forensics.Scratch(ctx); err == nil {
		_, err = forensics.CopyLog(ctx, svc, ss.live, st.at, nil)
	}
	if err != nil && cleanup != nil {
		cleanup()
	}
	ss.mu.Lock()
	ss.builds++
	if st.base != nil {
		ss.forwards++
		st.base = nil
	}
	if err != nil {
		st.err = err
		ss.evictLocked(st) // not kept: the next page tries again; nothing to close
	} else {
		st.svc, st.cleanup = svc, cleanup // the builder holds a reference: its release closes an evicted copy
	}
	ss.mu.Unlock()
	close(st.ready)
}

func (ss *states) release(st *state) {
	ss.mu.Lock()
	st.refs--
	done := st.evicted && st.refs == 0 && st.cleanup != nil
	ss.mu.Unlock()
	if done {
		st.cleanup()
	}
}

// evictLocked drops st from the cache and returns its cleanup when it is
// built and unused (the caller runs it unlocked); otherwise its last
// release closes it.
func (ss *states) evictLocked(st *state) func() {
	ss.removeLocked(st)
	st.evicted = true
	if st.refs == 0 && st.cleanup != nil {
		return st.cleanup
	}
	return nil
}

// removeLocked takes st out of the cache's order.
func (ss *states) removeLocked(st *state) {
	for i, s := range ss.order {
		if s == st {
			ss.order = append(ss.order[:i:i], ss.order[i+1:]...)
			return
		}
	}
}

// close closes every kept copy that no page uses; those in use close when
// their pages end.
func (ss *states) close() error {
	ss.mu.Lock()
	ss.closed = true
	var done []func()
	for _, st := range ss.order {
		st.evicted = true
		if st.refs == 0 && st.cleanup != nil {
			done = append(done, st.cleanup)
		}
	}
	ss.order = nil
	ss.mu.Unlock()
	for _, f := range done {
		f()
	}
	return nil
}
