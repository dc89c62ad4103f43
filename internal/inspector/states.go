package inspector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

// states gives a task's history as of a log position, for the history
// page, whose tools read projections that only a replay rebuilds when the
// live ones cannot answer (historyView). It keeps the last few scratch
// copies and builds a new one from the nearest earlier copy no page uses.
// docs/architecture.md describes the design.
type states struct {
	live  *memory.Service
	lim   limits
	slots chan struct{} // a builder's slot

	mu       sync.Mutex
	closed   bool
	order    []*state // kept and being built, most recently used last
	builds   int      // copies built, for tests
	forwards int      // of which brought forward from a kept copy, for tests
	canceled int      // builds canceled for want of a page, for tests

	// beforeCopy, set by tests, is called by a builder holding its slot
	// before it copies, with the build's context.
	beforeCopy func(ctx context.Context, at int64)
	// sizeOf returns what a copy's files take. Tests give their own sizes.
	sizeOf func(*forensics.ScratchDB) int64
}

// limits bound what past states take.
type limits struct {
	kept     int   // built copies kept for later pages
	builders int   // copies built at once
	waiting  int   // positions more that may wait for a builder
	disk     int64 // bytes the copies' files may take, kept and being built
}

// These are the default limits, for Config's zero values.
const (
	defaultKept         = 4
	defaultBuilders     = 2
	defaultWaiting      = 2
	defaultScratchBytes = 2 << 30
)

// state is one scratch copy. ready is closed once its build ends. Until
// it is built, base is the kept copy it is brought forward from, if any.
type state struct {
	task    string
	at      int64
	ready   chan struct{}
	db      *forensics.ScratchDB
	bytes   int64 // db's files when built, or as last watched while building
	err     error
	done    bool
	refs    int // pages holding it or waiting for it
	evicted bool
	base    *state
	cancel  context.CancelFunc // the build's
	ctx     context.Context
}

// errClosed refuses a page once the inspector is closed.
var errClosed = errors.New("the inspector is closed")

// errBusy refuses a new past position while the builders and the
// positions waiting for them are all taken. The page says to retry.
var errBusy = &memory.Error{Kind: memory.ErrUnavailable,
	Message: "the inspector is already building as many past states as it builds at once, and others wait: this position was not started; reload the page in a few seconds"}

// errScratchFull fails a build whose copy would take the copies' files
// past their bound.
func errScratchFull(limit int64) error {
	return &memory.Error{Kind: memory.ErrTooLarge,
		Message: fmt.Sprintf("the state at this position needs more scratch space than the inspector's bound (%d MiB for all its copies): look at a position nearer a kept one, or raise the bound", limit>>20)}
}

// newStates returns states over the live service within lim.
func newStates(live *memory.Service, lim limits) *states {
	return &states{live: live, lim: lim, slots: make(chan struct{}, lim.builders),
		sizeOf: (*forensics.ScratchDB).Bytes}
}

// at returns the memory holding task's history as of position at and a
// release to call when the page is done with it.
func (ss *states) at(ctx context.Context, task string, at int64) (*memory.Service, func(), error) {
	if at <= 0 { // the live one, as for the log's end
		return ss.live, func() {}, nil
	}
	last, err := ss.live.LastPosition(ctx)
	if err != nil {
		return nil, nil, err
	}
	if at >= last {
		return ss.live, func() {}, nil
	}
	st, build, err := ss.acquire(task, at)
	if err != nil {
		return nil, nil, err
	}
	if build {
		go ss.build(st)
	}
	select {
	case <-st.ready:
	case <-ctx.Done():
		// The page went away. The build is canceled once no page waits.
		ss.release(st)
		return nil, nil, ctx.Err()
	}
	if st.err != nil {
		ss.release(st)
		return nil, nil, st.err
	}
	return st.db.Service, func() { ss.release(st) }, nil
}

// acquire finds or adds the state of task at position at, holding a
// reference. build says the caller must start its build.
func (ss *states) acquire(task string, at int64) (st *state, build bool, err error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, false, errClosed
	}
	pending := 0
	for i, s := range ss.order {
		if s.task == task && s.at == at {
			ss.order = append(append(ss.order[:i:i], ss.order[i+1:]...), s)
			s.refs++
			return s, false, nil
		}
		if !s.done {
			pending++
		}
	}
	if pending >= ss.lim.builders+ss.lim.waiting {
		return nil, false, errBusy
	}
	st = &state{task: task, at: at, ready: make(chan struct{}), refs: 1, base: ss.baseLocked(task, at)}
	st.ctx, st.cancel = context.WithCancel(context.Background())
	if st.base != nil {
		ss.removeLocked(st.base) // it becomes st, so nothing else may find it
		st.bytes = st.base.bytes
	}
	ss.order = append(ss.order, st)
	return st, true, nil
}

// baseLocked returns task's built copy at the largest position below at
// that no page is using, or nil.
func (ss *states) baseLocked(task string, at int64) *state {
	var base *state
	for _, s := range ss.order {
		if s.task == task && s.at < at && s.refs == 0 && s.db != nil && (base == nil || s.at > base.at) {
			base = s
		}
	}
	return base
}

// build copies the task's history up to st.at into a new scratch database,
// or brings st.base's copy forward, once it has a builder's slot. It runs
// on its own context, so a page that gave up spoils no other page's copy.
func (ss *states) build(st *state) {
	var db *forensics.ScratchDB
	var err error
	imported := false // the copy is at st.at
	select {
	case ss.slots <- struct{}{}:
		if ss.beforeCopy != nil {
			ss.beforeCopy(st.ctx, st.at)
		}
		if err = st.ctx.Err(); err == nil {
			if st.base != nil {
				db = st.base.db
				_, err = forensics.ForwardHistory(st.ctx, db.Service, ss.live, st.task, st.at, ss.watch(st, db))
			} else if db, err = forensics.NewScratchDBFor(st.ctx, ss.live); err == nil {
				_, err = forensics.CopyHistory(st.ctx, db.Service, ss.live, st.task, st.at, ss.watch(st, db))
			}
			if err == nil {
				imported = true
				err = ss.watch(st, db)(0) // the copy as built
			}
		}
		<-ss.slots
	case <-st.ctx.Done():
		err = st.ctx.Err()
	}
	var remove []*forensics.ScratchDB
	ss.mu.Lock()
	ss.builds++
	base := st.base
	st.base = nil
	if base != nil {
		ss.forwards++
	}
	switch {
	case err == nil:
		st.db = db
		if st.evicted && st.refs == 0 {
			remove = append(remove, db) // closed while it was built
		}
		remove = append(remove, ss.keepLocked()...)
	case base != nil && !imported && !ss.closed && !base.evicted:
		// The forward is one transaction, so the copy is still at its Q.
		base.bytes = ss.sizeOf(base.db)
		ss.order = append([]*state{base}, ss.order...)
		ss.removeLocked(st)
	default:
		if base != nil {
			remove = append(remove, base.db)
		} else if db != nil {
			remove = append(remove, db)
		}
		ss.removeLocked(st) // not kept, so the next page tries again
	}
	if err != nil {
		st.err = err
		st.evicted = true
		if st.ctx.Err() != nil {
			ss.canceled++
		}
	}
	st.done = true
	st.cancel()
	ss.mu.Unlock()
	for _, db := range remove {
		db.Remove()
	}
	close(st.ready)
}

// watch returns a build's check of the disk the copies take, run every
// few thousand events and once built. It evicts unused copies to make
// room, and fails the build past that.
func (ss *states) watch(st *state, db *forensics.ScratchDB) func(int64) error {
	return func(int64) error {
		bytes := ss.sizeOf(db)
		var remove []*forensics.ScratchDB
		defer func() {
			for _, db := range remove {
				db.Remove()
			}
		}()
		ss.mu.Lock()
		defer ss.mu.Unlock()
		st.bytes = bytes
		for ss.totalLocked() > ss.lim.disk {
			victim := ss.unusedLocked()
			if victim == nil {
				return errScratchFull(ss.lim.disk)
			}
			if f := ss.evictLocked(victim); f != nil {
				remove = append(remove, f)
			}
		}
		return nil
	}
}

// totalLocked returns what the copies take, kept and being built, with the
// bases they bring forward.
func (ss *states) totalLocked() int64 {
	var n int64
	for _, s := range ss.order {
		n += s.bytes
	}
	return n
}

// unusedLocked returns the least recently used built copy no page uses.
func (ss *states) unusedLocked() *state {
	for _, s := range ss.order {
		if s.done && s.db != nil && s.refs == 0 {
			return s
		}
	}
	return nil
}

// keepLocked evicts the least recently used built copies past the kept
// bound and returns those to remove now.
func (ss *states) keepLocked() []*forensics.ScratchDB {
	var remove []*forensics.ScratchDB
	for {
		built := 0
		for _, s := range ss.order {
			if s.db != nil {
				built++
			}
		}
		if built <= ss.lim.kept {
			return remove
		}
		for _, s := range ss.order {
			if s.db != nil {
				if f := ss.evictLocked(s); f != nil {
					remove = append(remove, f)
				}
				break
			}
		}
	}
}

// release ends a page's use of st, or its wait for it. The last page to
// stop waiting for a build cancels it.
func (ss *states) release(st *state) {
	ss.mu.Lock()
	st.refs--
	var remove *forensics.ScratchDB
	switch {
	case st.refs > 0:
	case !st.done:
		st.cancel()
		st.evicted = true
		ss.removeLocked(st)
	case st.evicted && st.db != nil: // the last page of an evicted copy removes it
		remove = st.db
	}
	ss.mu.Unlock()
	if remove != nil {
		remove.Remove()
	}
}

// evictLocked drops st from the cache. It returns st's copy for the caller
// to remove when built and unused, and otherwise st's last release does.
func (ss *states) evictLocked(st *state) *forensics.ScratchDB {
	ss.removeLocked(st)
	st.evicted = true
	if st.refs == 0 && st.db != nil {
		return st.db
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

// close removes every kept copy that no page uses and cancels the builds.
// Copies in use are removed when their pages end.
func (ss *states) close() error {
	ss.mu.Lock()
	ss.closed = true
	var remove []*forensics.ScratchDB
	for _, st := range ss.order {
		st.evicted = true
		if !st.done {
			st.cancel()
		} else if st.refs == 0 && st.db != nil {
			remove = append(remove, st.db)
		}
	}
	ss.order = nil
	ss.mu.Unlock()
	for _, db := range remove {
		db.Remove()
	}
	return nil
}

// forgetTask drops the copies of an erased task's history: kept ones no
// page uses are removed now, builds are canceled, and copies in use are
// removed when their pages end. A page built after the erasure copies
// only tombstones.
func (ss *states) forgetTask(task string) {
	ss.mu.Lock()
	var remove []*forensics.ScratchDB
	for _, st := range slices.Clone(ss.order) {
		if st.task != task {
			continue
		}
		if !st.done {
			st.cancel()
			st.evicted = true
			if st.base != nil {
				st.base.evicted = true // the build then removes it, not keeps it
			}
			ss.removeLocked(st)
			continue
		}
		if f := ss.evictLocked(st); f != nil {
			remove = append(remove, f)
		}
	}
	ss.mu.Unlock()
	for _, db := range remove {
		db.Remove()
	}
}
