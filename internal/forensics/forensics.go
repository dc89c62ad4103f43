// Package forensics reproduces offline what memoryd answered.
//
// It replays an exported log into a scratch or named database, verifies
// live projections against a rebuild, runs one tool at any past position,
// re-executes the read audit to detect recovery regressions, and imports
// the session files of Pi, Claude Code and Codex.
package forensics

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// Next yields the events of a log in order. ok is false at the end.
type Next func() (ev events.Event, ok bool, err error)

// LogReader reads an exported log of JSON lines in the event envelope and
// names the line of any error.
type LogReader struct {
	sc      *bufio.Scanner
	scanned int    // lines scanned, by the read-ahead goroutine when there is one
	line    int    // the line of the last event or error Next returned
	ahead   *ahead // set by ReadAhead
}

// logItem is an event read ahead, or the error or end that ended the log,
// and its line.
type logItem struct {
	ev   events.Event
	line int
	err  error
	end  bool
}

// ahead is the state of a LogReader reading ahead. Only ch and quit are
// shared with the goroutine.
type ahead struct {
	ch               chan []logItem
	quit             chan struct{}
	cur              []logItem
	started, stopped bool
}

// NewLogReader returns a reader of the log in r.
func NewLogReader(r io.Reader) *LogReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	return &LogReader{sc: sc}
}

// Line is the number of the line of the last event or error Next returned.
// At the end of the log, it is the number of lines in it.
func (lr *LogReader) Line() int { return lr.line }

// LineError is an error about one line of a log.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// AtLine returns err as a *LineError about the reader's current line,
// unless it is one already.
func (lr *LogReader) AtLine(err error) error {
	var le *LineError
	if err == nil || errors.As(err, &le) {
		return err
	}
	return &LineError{Line: lr.line, Err: err}
}

// Next returns the next event of the log.
func (lr *LogReader) Next() (events.Event, bool, error) {
	var it logItem
	if lr.ahead != nil {
		var ok bool
		if it, ok = lr.ahead.next(lr); !ok { // stopped
			return events.Event{}, false, nil
		}
	} else {
		it = lr.read()
	}
	lr.line = it.line
	return it.ev, !it.end, it.err
}

// read reads the next event, or the end of the log.
func (lr *LogReader) read() logItem {
	for lr.sc.Scan() {
		lr.scanned++
		b := lr.sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		ev, err := events.DecodeEnvelope(b)
		if err != nil {
			return logItem{line: lr.scanned, end: true, err: &LineError{Line: lr.scanned, Err: err}}
		}
		return logItem{ev: events.Decoded(ev), line: lr.scanned}
	}
	end := logItem{line: lr.scanned, end: true}
	if err := lr.sc.Err(); err != nil {
		end.err = err
		if errors.Is(err, bufio.ErrTooLong) {
			end.err = &LineError{Line: lr.scanned + 1, Err: errors.New("longer than 256 MiB")}
		}
	}
	return end
}

// ReadAhead makes the reader read and decode the log a few batches ahead of
// Next in a goroutine of its own, which starts at the first Next. stop ends
// it without waiting, since a read blocked on a pipe would hold it, and
// Next then reports the end of the log.
func (lr *LogReader) ReadAhead() (stop func()) {
	a := &ahead{ch: make(chan []logItem, 4), quit: make(chan struct{})}
	lr.ahead = a
	return func() {
		if !a.stopped {
			a.stopped = true
			close(a.quit)
		}
	}
}

// run is the read-ahead goroutine.
func (a *ahead) run(lr *LogReader) {
	const batchSize = 256
	for {
		select {
		case <-a.quit:
			return
		default:
		}
		batch := make([]logItem, 0, batchSize)
		for len(batch) < batchSize {
			it := lr.read()
			batch = append(batch, it)
			if it.end {
				break
			}
		}
		select {
		case a.ch <- batch:
		case <-a.quit:
			return
		}
		if batch[len(batch)-1].end {
			return
		}
	}
}

func (a *ahead) next(lr *LogReader) (logItem, bool) {
	if a.stopped {
		return logItem{}, false
	}
	if !a.started {
		a.started = true
		go a.run(lr)
	}
	for len(a.cur) == 0 {
		a.cur = <-a.ch
	}
	it := a.cur[0]
	if !it.end {
		a.cur = a.cur[1:]
	}
	return it, true
}

// Until stops next after position until, unless until is 0.
func Until(next Next, until int64) Next {
	if until <= 0 {
		return next
	}
	done := false
	return func() (events.Event, bool, error) {
		if done {
			return events.Event{}, false, nil
		}
		ev, ok, err := next()
		if err != nil || !ok {
			return ev, ok, err
		}
		if ev.Position > until {
			done = true
			return events.Event{}, false, nil
		}
		return ev, true, nil
	}
}

// Counted calls progress with the number of events next has yielded.
func Counted(next Next, progress func(int64)) Next {
	if progress == nil {
		return next
	}
	var n int64
	return func() (events.Event, bool, error) {
		ev, ok, err := next()
		if ok {
			n++
			if n%1024 == 0 {
				progress(n)
			}
		}
		return ev, ok, err
	}
}

// StoreEvents yields every event of svc's log up to until, or all for 0.
func StoreEvents(ctx context.Context, svc *memory.Service, until int64) Next {
	return StoreEventsAfter(ctx, svc, 0, until)
}

// StoreEventsAfter yields the events of svc's log after position after,
// up to until, or all for 0.
func StoreEventsAfter(ctx context.Context, svc *memory.Service, after, until int64) Next {
	return filteredEvents(ctx, svc, eventlog.Filter{After: after, Until: until})
}

// filteredEvents yields the events of svc's log that f selects, from
// f.After, in pages of f.Limit.
func filteredEvents(ctx context.Context, svc *memory.Service, f eventlog.Filter) Next {
	store := svc.Store()
	f.Limit = 2000
	var page []events.Event
	done := false
	return func() (events.Event, bool, error) {
		if len(page) == 0 && !done {
			var err error
			page, err = store.Read(ctx, f)
			if err != nil {
				return events.Event{}, false, err
			}
			if len(page) < f.Limit {
				done = true
			}
			if len(page) > 0 {
				f.After = page[len(page)-1].Position
			}
		}
		if len(page) == 0 {
			return events.Event{}, false, nil
		}
		ev := page[0]
		page = page[1:]
		return ev, true, nil
	}
}

// Open opens a database for a replay as the server opens its own, creating
// and migrating it, without the read audit. A replay can always be run
// again, so it skips fsync.
func Open(ctx context.Context, path string) (*memory.Service, error) {
	return OpenLogging(ctx, path, nil)
}

// OpenLogging is Open reporting through logf when it rebuilds the
// projections of a database a migration changed.
func OpenLogging(ctx context.Context, path string, logf func(format string, args ...any)) (*memory.Service, error) {
	return memory.Open(ctx, path, memory.OpenOptions{Synchronous: "off", Logf: logf})
}

// Scratch opens a fresh database in a new private folder under the scratch
// folder. cleanup closes and removes it.
func Scratch(ctx context.Context) (svc *memory.Service, cleanup func(), err error) {
	db, err := NewScratchDB(ctx)
	if err != nil {
		return nil, nil, err
	}
	return db.Service, db.Remove, nil
}

// A ScratchDB is a fresh database in a private folder of its own, as
// Scratch makes it, with what it takes on disk.
type ScratchDB struct {
	Service *memory.Service
	dir     string
}

// NewScratchDB is Scratch giving the database's folder too.
func NewScratchDB(ctx context.Context) (*ScratchDB, error) {
	return newScratchDB(ctx, memory.OpenOptions{Synchronous: "off"})
}

// ScratchFor is Scratch for a copy of what live holds: encrypted at rest
// with live's key when live is (docs/encryption.md), so that a copy made
// to verify, replay or inspect it reveals no more than live does.
func ScratchFor(ctx context.Context, live *memory.Service) (svc *memory.Service, cleanup func(), err error) {
	db, err := NewScratchDBFor(ctx, live)
	if err != nil {
		return nil, nil, err
	}
	return db.Service, db.Remove, nil
}

// NewScratchDBFor is ScratchFor giving the database's folder too.
func NewScratchDBFor(ctx context.Context, live *memory.Service) (*ScratchDB, error) {
	s := live.Store().Sealer()
	return newScratchDB(ctx, memory.OpenOptions{Synchronous: "off", Sealer: s, Encrypt: s != nil})
}

func newScratchDB(ctx context.Context, opts memory.OpenOptions) (*ScratchDB, error) {
	dir, err := newScratchDir()
	if err != nil {
		return nil, err
	}
	svc, err := memory.Open(ctx, filepath.Join(dir, "replay.db"), opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &ScratchDB{Service: svc, dir: dir}, nil
}

// Bytes is the size of the files in the database's folder, its WAL and
// shared-memory index included.
func (db *ScratchDB) Bytes() int64 {
	entries, err := os.ReadDir(db.dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

// Remove closes the database and removes its folder.
func (db *ScratchDB) Remove() {
	db.Service.Close()
	os.RemoveAll(db.dir)
}

// Target opens the database a replay writes at path, or a scratch one when
// path is "". opts are those of the database at path (its key and whether
// a new one is encrypted at rest, its Logf), which is written with
// synchronous off, as Open does. done closes the database and removes a
// scratch one.
func Target(ctx context.Context, path string, opts memory.OpenOptions) (svc *memory.Service, done func(), err error) {
	if path == "" {
		return Scratch(ctx)
	}
	opts.Synchronous = "off"
	if svc, err = memory.Open(ctx, path, opts); err != nil {
		return nil, nil, err
	}
	return svc, func() { svc.Close() }, nil
}

// Import appends the log that next yields into svc's store, which must
// hold no events, ids and positions kept, all or nothing. It returns the
// number of events imported.
func Import(ctx context.Context, svc *memory.Service, next Next) (int64, error) {
	return svc.Store().Import(ctx, next)
}

// Export writes to w as JSON lines the events of svc's store up to until,
// or all for 0. A non-empty taskID keeps only that task's streams, and a
// non-nil progress is called with the count of events written.
func Export(ctx context.Context, svc *memory.Service, taskID string, until int64, w io.Writer, progress func(int64)) error {
	var n int64
	return svc.Store().Each(ctx, eventlog.Filter{TaskID: taskID, Until: until, Limit: 1000}, func(ev events.Event) error {
		if n++; progress != nil && n%1024 == 0 {
			progress(n)
		}
		return events.WriteJSONLines(w, []events.Event{ev})
	})
}

// Summary describes a replayed log and fingerprints its projections.
type Summary struct {
	Events       int64                     `json:"events"`
	LastPosition int64                     `json:"last_position"`
	Tasks        int64                     `json:"tasks"`
	Agents       int64                     `json:"agents"`
	Windows      int64                     `json:"windows"`
	Notes        int64                     `json:"notes"`
	Digest       string                    `json:"digest"`
	Tables       []projections.TableDigest `json:"tables"`
}

// Summarize describes the log and projections of svc.
func Summarize(ctx context.Context, svc *memory.Service) (Summary, error) {
	store := svc.Store()
	var s Summary
	var err error
	if s.LastPosition, err = store.LastPosition(ctx); err != nil {
		return s, err
	}
	s.Events = s.LastPosition // positions are gapless from 1
	c, err := projections.Count(ctx, store.Reader())
	if err != nil {
		return s, err
	}
	s.Tasks, s.Agents, s.Windows, s.Notes = c.Tasks, c.Agents, c.Windows, c.Notes
	if s.Tables, err = projections.Digest(ctx, store); err != nil {
		return s, err
	}
	s.Digest = projections.Combined(s.Tables)
	return s, nil
}

// ReadMismatch is an audited call whose re-execution at its read position
// returned something else.
type ReadMismatch struct {
	Position     int64  `json:"position"` // of the audit event
	Call         int    `json:"call"`     // the call's index in the event's calls
	ReadPosition int64  `json:"read_position"`
	TaskID       string `json:"task_id"`
	Agent        string `json:"agent"`
	CallID       string `json:"call_id,omitempty"`
	Tool         string `json:"tool"`
	WantOutcome  string `json:"want_outcome"`
	GotOutcome   string `json:"got_outcome"`
	WantDigest   string `json:"want_digest"`
	GotDigest    string `json:"got_digest"`
}

// UnverifiableRead is an audited read that cannot be re-executed, because
// its record keeps some of its arguments as their size and digest only.
type UnverifiableRead struct {
	Position     int64  `json:"position"` // of the audit event
	Call         int    `json:"call"`     // the call's index in the event's calls
	ReadPosition int64  `json:"read_position"`
	TaskID       string `json:"task_id"`
	Agent        string `json:"agent"`
	CallID       string `json:"call_id,omitempty"`
	Tool         string `json:"tool"`
	Reason       string `json:"reason"`
}

// ReadCheck is the result of re-executing the read audit. A read is
// checked or unverifiable, and writes are skipped, counted by tool in
// SkippedCalls.
type ReadCheck struct {
	Checked      int                `json:"checked"`
	Skipped      int                `json:"skipped"`
	SkippedCalls []SkippedCalls     `json:"skipped_calls"`
	Mismatches   []ReadMismatch     `json:"mismatches"`
	Unverifiable []UnverifiableRead `json:"unverifiable"`
}

// SkippedCalls counts the audited calls of one tool that the read check
// does not re-execute, and says why.
type SkippedCalls struct {
	Tool   string `json:"tool"`
	Calls  int    `json:"calls"`
	Reason string `json:"reason"`
}

// SetSkipped records in c the calls CollectAudit skipped.
func (c *ReadCheck) SetSkipped(skipped []SkippedCalls) {
	c.Skipped, c.SkippedCalls = 0, skipped
	for _, s := range skipped {
		c.Skipped += s.Calls
	}
}

// Why the read check skips an audited call.
const (
	skipWrite   = "a write: what it did is in the log as events, which the replay applies and the digest covers; running it again would write again"
	skipUnknown = "not one of the tools: there is nothing to run again"
)

// skipReason says why the read check does not re-execute a call of tool,
// or "" for a read, which it does.
func skipReason(tool string) string {
	switch {
	case tools.Writes(tool):
		return skipWrite
	case !tools.Known(tool):
		return skipUnknown
	}
	return ""
}

// AuditedCall is one call of an audit.tool_called event to re-execute.
type AuditedCall struct {
	position int64 // of the event
	index    int   // in the event's calls
	ref      events.AgentRef
	rec      events.CallRecord
}

// CollectAudit returns the read-only audited calls of a log by the position
// they read at, and the write calls it leaves out by tool.
func CollectAudit(next Next) (map[int64][]AuditedCall, []SkippedCalls, error) {
	out := map[int64][]AuditedCall{}
	skipped := map[string]int{}
	for {
		ev, ok, err := next()
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			break
		}
		if ev.Type != events.TypeToolCalled {
			continue
		}
		p, err := events.Decode(ev)
		if err != nil {
			return nil, nil, fmt.Errorf("event %d: %w", ev.Position, err)
		}
		batch := p.(*events.ToolCalled)
		for i, rec := range batch.Calls {
			if skipReason(rec.Tool) != "" {
				skipped[rec.Tool]++
				continue
			}
			out[rec.ReadPosition] = append(out[rec.ReadPosition], AuditedCall{position: ev.Position, index: i, ref: batch.AgentRef, rec: rec})
		}
	}
	skips := make([]SkippedCalls, 0, len(skipped))
	for tool, n := range skipped {
		skips = append(skips, SkippedCalls{Tool: tool, Calls: n, Reason: skipReason(tool)})
	}
	sort.Slice(skips, func(i, j int) bool { return skips[i].Tool < skips[j].Tool })
	return out, skips, nil
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Audit, from CollectAudit over the same log, makes Replay commit at
	// every audited read position and re-execute the calls that read
	// there. If nil, no read is checked.
	Audit map[int64][]AuditedCall
	// Segment is the most events Replay commits in one transaction, or
	// DefaultReplaySegment for 0.
	Segment int64
}

// DefaultReplaySegment is the most events Replay commits in one transaction
// by default. Longer segments write less but grow a larger WAL; see
// docs/performance.md.
const DefaultReplaySegment = 200_000

// Replay imports the events of next into an empty dst opened without the
// read audit. With opts.Audit, it commits at every audited read position
// and re-executes on dst the calls that read there.
func Replay(ctx context.Context, dst *memory.Service, next Next, opts ReplayOptions) (ReadCheck, error) {
	svc, store := dst, dst.Store()
	check := ReadCheck{SkippedCalls: []SkippedCalls{}, Mismatches: []ReadMismatch{}, Unverifiable: []UnverifiableRead{}}
	audit, maxSegment := opts.Audit, opts.Segment
	if maxSegment <= 0 {
		maxSegment = DefaultReplaySegment
	}
	// The log is committed in segments of at most maxSegment events that
	// end at each audited read position, so the WAL is checkpointed as the
	// replay goes. Continue does not refuse a database that holds events,
	// so refuse it here, as Import does.
	if last, err := store.LastPosition(ctx); err != nil {
		return check, err
	} else if last != 0 {
		return check, fmt.Errorf("%w: it holds %d events", eventlog.ErrNotEmpty, last)
	}
	stops := make([]int64, 0, len(audit))
	for p := range audit {
		stops = append(stops, p)
	}
	sort.Slice(stops, func(i, j int) bool { return stops[i] < stops[j] })
	run := func(p int64) {
		for _, c := range audit[p] {
			if !c.rec.ArgumentsWhole() { // running it with the arguments that are left would check another call
				check.Unverifiable = append(check.Unverifiable, UnverifiableRead{Position: c.position, Call: c.index, ReadPosition: p,
					TaskID: c.ref.TaskID, Agent: c.ref.Agent, CallID: c.rec.CallID, Tool: c.rec.Tool,
					Reason: "the audit kept its arguments as size and digest, not whole"})
				continue
			}
			cc := memory.CallContext{TaskID: c.ref.TaskID, Agent: c.ref.Agent, CallID: c.rec.CallID}
			res, err := svc.CallTool(ctx, c.rec.Tool, cc, c.rec.Arguments, "")
			outcome, digest := memory.ResultDigest(&res, err)
			check.Checked++
			if outcome != c.rec.Outcome || digest != c.rec.ResultDigest {
				check.Mismatches = append(check.Mismatches, ReadMismatch{Position: c.position, Call: c.index, ReadPosition: p,
					TaskID: c.ref.TaskID, Agent: c.ref.Agent, CallID: c.rec.CallID, Tool: c.rec.Tool,
					WantOutcome: c.rec.Outcome, GotOutcome: outcome, WantDigest: c.rec.ResultDigest, GotDigest: digest})
			}
		}
	}
	// Calls that read an empty log run first.
	i := 0
	for i < len(stops) && stops[i] <= 0 {
		run(stops[i])
		i++
	}
	var pending *events.Event
	// segment yields the events up to stop, or all of them when stop < 0.
	segment := func(stop int64) Next {
		n := int64(0)
		return func() (events.Event, bool, error) {
			if n == maxSegment {
				return events.Event{}, false, nil
			}
			n++
			var ev events.Event
			if pending != nil {
				ev, pending = *pending, nil
			} else {
				e, ok, err := next()
				if err != nil || !ok {
					return e, false, err
				}
				ev = e
			}
			if stop >= 0 && ev.Position > stop {
				pending = &ev
				return events.Event{}, false, nil
			}
			return ev, true, nil
		}
	}
	for {
		stop := int64(-1)
		if i < len(stops) {
			stop = stops[i]
		}
		n, err := store.Continue(ctx, segment(stop))
		if err != nil {
			return check, err
		}
		if n == maxSegment {
			continue // the same stop, in the next segment
		}
		if stop < 0 {
			return check, nil
		}
		run(stop) // past the end of a cut log, at its last position
		i++
	}
}

// Violation is an event of a live log that breaks a rule an import of the
// log would refuse it for, as in a database an older memoryd wrote.
type Violation struct {
	Position int64  `json:"position"`
	Type     string `json:"type"`
	Rule     string `json:"rule"`
}

// Verify rebuilds the projections of live from its log into the empty
// scratch, and returns every table that differs and every event that
// breaks a rule of an import. The rebuild applies those as live did.
func Verify(ctx context.Context, live, scratch *memory.Service, samples int) ([]projections.TableDiff, []Violation, error) {
	return VerifyProgress(ctx, live, scratch, samples, nil, nil)
}

// VerifyProgress is Verify reporting the number of events rebuilt to
// progress, then calling comparing before it compares the tables. Either
// may be nil.
func VerifyProgress(ctx context.Context, live, scratch *memory.Service, samples int, progress func(int64), comparing func()) ([]projections.TableDiff, []Violation, error) {
	violations := []Violation{}
	report := func(re *events.RuleError) {
		violations = append(violations, Violation{Position: re.Position, Type: re.Type, Rule: re.Rule})
	}
	if _, err := scratch.Store().ImportReporting(ctx, Counted(StoreEvents(ctx, live, 0), progress), report); err != nil {
		return nil, nil, err
	}
	if comparing != nil {
		comparing()
	}
	diffs, err := projections.Diff(ctx, live.Store(), scratch.Store(), samples)
	return diffs, violations, err
}

// CopyLog imports the log of src up to until, or all for 0, into an empty
// dst, all or nothing, and returns the number of events copied. Each event
// is applied as src applied it, and one an import would refuse goes to a
// non-nil report.
func CopyLog(ctx context.Context, dst, src *memory.Service, until int64, report func(*events.RuleError)) (int64, error) {
	if report == nil {
		report = func(*events.RuleError) {}
	}
	return dst.Store().ImportReporting(ctx, StoreEvents(ctx, src, until), report)
}

// WatchEvery is how many events a watched copy reads between two calls of
// its watch.
const WatchEvery = 4096

// watched calls watch with the number of events next has yielded every
// WatchEvery events. Its error ends next.
func watched(next Next, watch func(int64) error) Next {
	if watch == nil {
		return next
	}
	var n int64
	return func() (events.Event, bool, error) {
		ev, ok, err := next()
		if ok {
			n++
			if n%WatchEvery == 0 {
				if err := watch(n); err != nil {
					return events.Event{}, false, err
				}
			}
		}
		return ev, ok, err
	}
}

// CopyHistory imports into an empty dst what the history tools read of task
// taskID in src's log up to until, which leaves out its notes and audit
// records. dst is then a part of a log, for reading only. An error from a
// non-nil watch stops the copy, which then keeps nothing.
func CopyHistory(ctx context.Context, dst, src *memory.Service, taskID string, until int64, watch func(copied int64) error) (int64, error) {
	return dst.Store().ImportPart(ctx, watched(historyEvents(ctx, src, taskID, 0, until), watch), func(*events.RuleError) {})
}

// ForwardHistory brings dst, a CopyHistory of task taskID, forward to
// until, giving what CopyHistory up to until gives.
func ForwardHistory(ctx context.Context, dst, src *memory.Service, taskID string, until int64, watch func(copied int64) error) (int64, error) {
	from, err := dst.Store().LastPosition(ctx) // the copy's end or before, since the events in between are not copied
	if err != nil {
		return 0, err
	}
	return dst.Store().ContinuePart(ctx, watched(historyEvents(ctx, src, taskID, from, until), watch), func(*events.RuleError) {})
}

func historyEvents(ctx context.Context, svc *memory.Service, taskID string, after, until int64) Next {
	return filteredEvents(ctx, svc, eventlog.Filter{After: after, Until: until, TaskID: taskID, Only: eventlog.WithoutNotes})
}

// ForwardLog brings dst, a CopyLog of src, forward to until, or to src's
// end for 0, giving what CopyLog up to until gives. It imports only the
// events after dst's end, all or nothing, and returns how many it copied.
// An until before dst's end is refused as ErrInvalidEvent.
func ForwardLog(ctx context.Context, dst, src *memory.Service, until int64, report func(*events.RuleError)) (int64, error) {
	if report == nil {
		report = func(*events.RuleError) {}
	}
	from, err := dst.Store().LastPosition(ctx)
	if err != nil {
		return 0, err
	}
	if until > 0 && until < from {
		return 0, fmt.Errorf("%w: the copy is at position %d, past %d", events.ErrInvalidEvent, from, until)
	}
	return dst.Store().ContinueReporting(ctx, StoreEventsAfter(ctx, src, from, until), report)
}
