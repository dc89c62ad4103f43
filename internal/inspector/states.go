package inspector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

// states gives a task's history as of a log position, for the history
// page, whose tools read projections that only a replay rebuilds: the
// live service for the end of the log, and for an earlier position P a
// scratch copy of the task's events up to P but its notes and audit
// records (forensics.CopyHistory: what the history tools read, applied by
// the code of every import), so that the page at P shows what the tools
// answered at P. The other pages need no copy: they read the log up to P
// (the timeline, the events) or fold its note and fence events up to P
// (notes, tasks). The last few copies are kept (least recently used
// first out) so that paging at one P replays once; an evicted copy is
// closed when the last page using it is done.
//
// A new P is built from the task's kept copy at the largest Q < P that no
// page is using, when there is one: that copy is taken out of the cache
// and brought forward by the events in (Q, P] (forensics.ForwardHistory),
// which gives what a fresh copy at P gives at the cost of P-Q events
// instead of P. A copy in use is never moved: its pages read it at its Q.
//
// What copies cost is bounded (limits): a few are built at once, a few
// more positions wait for a builder and any further one is refused as
// busy (errBusy: the page says to retry); a build no page waits for any
// more is canceled (the base it was bringing forward is kept at Q: the
// import is one transaction); and the copies' files, kept and being
// built, stay within a size: a build that would pass it evicts unused
// copies first, then fails (errScratchFull).
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

	// beforeCopy, when set (tests), is called by a builder holding its
	// slot before it copies, with the build's context.
	beforeCopy func(ctx context.Context, at int64)
	// sizeOf is what a copy's files take (tests give their own sizes).
	sizeOf func(*forensics.ScratchDB) int64
}

// limits bound what past states take.
type limits struct {
	kept     int   // built copies kept for later pages
	builders int   // copies built at once
	waiting  int   // positions more that may wait for a builder
	disk     int64 // bytes the copies' files may take, kept and being built
}

// Default limits (Config's zero values).
const (
	defaultKept         = 4
	defaultBuilders     = 2
	defaultWaiting      = 2
	defaultScratchBytes = 2 << 30
)

// state is one scratch copy; ready is closed once its build ends (db or
// err set, done true). base, until it is built, is the kept copy it is
// brought forward from (nil: a fresh copy).
type state struct {
	task    string
	at      int64
	ready   chan struct{}
	db      *forensics.ScratchDB
	bytes   int64 // db's files: when built, or as last watched while building
	err     error
	done    bool
	refs    int // pages holding it or waiting for it
	evicted bool
	base    *state
	cancel  context.CancelFunc // the build's
	ctx     context.Context
}

var errClosed = errors.New("the inspector is closed")

// errBusy refuses a new past position while the builders and the
// positions waiting for them are all taken. ErrUnavailable: a 503, with
// Retry-After (Inspector.fail).
var errBusy = &memory.Error{Kind: memory.ErrUnavailable,
	Message: "the inspector is already building as many past states as it builds at once, and others wait: this position was not started; reload the page in a few seconds"}

// errScratchFull fails a build whose copy would take the copies' files
// past their bound.
func errScratchFull(limit int64) error {
	return &memory.Error{Kind: memory.ErrTooLarge,
		Message: fmt.Sprintf("the state at this position needs more scratch space than the inspector's bound (%d MiB for all its copies): look at a position nearer a kept one, or raise the bound", limit>>20)}
}

func newStates(live *memory.Service, lim limits) *states {
	return &states{live: live, lim: lim, slots: make(chan struct{}, lim.builders),
		sizeOf: (*forensics.ScratchDB).Bytes}
}

// at returns the memory holding task's history as of position at (0 or
// at least the log's end: the live one) and a release to call when the
// page is done with it. A page that goes away while its copy is built
// stops waiting; the build is canceled when no page waits for it any
// more.
func (ss *states) at(ctx context.Context, task string, at int64) (*memory.Service, func(), error) {
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
// reference; build says the caller must start its build.
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
		ss.removeLocked(st.base) // it becomes st: nothing else can find it
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

// build copies the task's history up to st.at into a new scratch database, or brings
// st.base's copy forward to st.at, once it has a builder's slot. It runs
// on its own context, canceled when no page waits for it any more
// (release): a page that gave up does not spoil the copy for another that
// still waits.
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
			} else if db, err = forensics.NewScratchDB(st.ctx); err == nil {
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
	case base != nil && !imported && !ss.closed:
		// The forward is one transaction: the copy is still at its Q.
		base.bytes = ss.sizeOf(base.db)
		ss.order = append([]*state{base}, ss.order...)
		ss.removeLocked(st)
	default:
		if base != nil {
			remove = append(remove, base.db)
		} else if db != nil {
			remove = append(remove, db)
		}
		ss.removeLocked(st) // not kept: the next page tries again
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

// watch is a build's check, every few thousand events it copies and once
// built: with
// its copy's files, may the copies take more disk? Unused kept copies are
// evicted, least recently used first, to make room; past that the build
// fails.
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

// totalLocked is what the copies take: those kept and those being built
// (with the bases they bring forward).
func (ss *states) totalLocked() int64 {
	var n int64
	for _, s := range ss.order {
		n += s.bytes
	}
	return n
}

// unusedLocked is the least recently used built copy that no page uses.
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

// release ends a page's use of st, or its wait for it: the last page to
// stop waiting for a build cancels it; the last to release an evicted
// copy removes it.
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
	case st.evicted && st.db != nil:
		remove = st.db
	}
	ss.mu.Unlock()
	if remove != nil {
		remove.Remove()
	}
}

// evictLocked drops st from the cache and returns its copy when it is
// built and unused (the caller removes it unlocked); otherwise its last
// release removes it.
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

// close removes every kept copy that no page uses and cancels the builds;
// copies in use are removed when their pages end.
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
