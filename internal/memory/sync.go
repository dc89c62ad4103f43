package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/redact"
)

// MaxSyncEntries and MaxBranchLength bound one sync request, as
// docs/behaviour.md §G says.
const (
	MaxSyncEntries  = 10_000
	MaxBranchLength = 1_000_000
)

// SyncRequest is the body of POST /v1/history/sync. The branch comes
// whole in Branch, as a delta from a revision in Delta, or not at all.
type SyncRequest struct {
	Context          CallContext       `json:"context"`
	Entries          []json.RawMessage `json:"entries"`
	Branch           *[]string         `json:"branch"`
	ExpectedRevision *int64            `json:"expected_revision"`
	Delta            *SyncDelta        `json:"delta"`
}

// SyncDelta is the delta form of a sync's branch. It keeps the first Keep
// ids of the branch at BaseRevision and appends Append after them.
type SyncDelta struct {
	BaseRevision *int64   `json:"base_revision"`
	Keep         *int64   `json:"keep"`
	Append       []string `json:"append"`
}

// SyncReasonStaleBase is details.reason of the conflict a delta sync gets
// when its base is not the branch memoryd has. The client then sends the
// whole branch.
const SyncReasonStaleBase = "stale_base"

// SyncResult is the response of a sync.
type SyncResult struct {
	Revision  int64  `json:"revision"`
	Stored    int    `json:"stored"`
	Unchanged int    `json:"unchanged"`
	WindowID  string `json:"window_id"`
}

// syncEntry is one entry of a sync, parsed.
type syncEntry struct {
	id    string
	raw   json.RawMessage // compact
	index int             // in the entries it was parsed from
}

// EntryError is a refusal of one of the entries of a sync or a session
// import. Index is its place among them.
type EntryError struct {
	Index int
	Err   error
}

// Error returns the refusal's message.
func (e *EntryError) Error() string { return e.Err.Error() }

// Unwrap returns the refusal.
func (e *EntryError) Unwrap() error { return e.Err }

// sameEntry reports whether two entries are equal after JSON
// canonicalisation, as a re-sent entry must be.
func sameEntry(a, b []byte) bool {
	ca, err := history.Canonical(a)
	if err != nil {
		return false
	}
	cb, err := history.Canonical(b)
	return err == nil && bytes.Equal(ca, cb)
}

// maxEntryIDBytes bounds an entry id.
const maxEntryIDBytes = 256

// validEntryID reports whether id can be an entry's id, short valid UTF-8.
// U+0000 is refused on both engines, as PostgreSQL's text cannot hold it.
func validEntryID(id string) bool {
	return id != "" && len(id) <= maxEntryIDBytes && utf8.ValidString(id) && !strings.ContainsRune(id, 0)
}

// parseEntries validates raw entries as JSON objects with a non-empty id,
// their secrets redacted by red (nil: none).
func parseEntries(raws []json.RawMessage, red *redact.Redactor) ([]syncEntry, error) {
	out := make([]syncEntry, 0, len(raws))
	seen := make(map[string]int, len(raws)) // id → index in out
	for i, raw := range raws {
		e, problem := parseEntry(raw)
		if problem == "" {
			problem = redactEntry(&e, red)
		}
		if problem != "" {
			return nil, invalidf("entries[%d] %s", i, problem)
		}
		e.index = i
		if j, dup := seen[e.id]; dup {
			if !sameEntry(out[j].raw, e.raw) {
				return nil, conflictf("entries has id %q twice with different content", e.id)
			}
			continue
		}
		seen[e.id] = len(out)
		out = append(out, e)
	}
	return out, nil
}

// parseEntry applies a sync's rules to one raw entry, or says what it
// breaks in words that follow the entry's name.
func parseEntry(raw json.RawMessage) (syncEntry, string) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return syncEntry{}, "must be a JSON object (a Pi session entry)"
	}
	head, err := history.ReadHead(raw) // keys matched exactly, so "ID" is not the id
	if err != nil {
		return syncEntry{}, "must be a JSON object (a Pi session entry)"
	}
	if head.ID == "" {
		return syncEntry{}, "has no id"
	}
	if head.Type == "" {
		return syncEntry{}, fmt.Sprintf("(id %q) has no type", head.ID)
	}
	if !validEntryID(head.ID) {
		return syncEntry{}, "has an id that is not short valid UTF-8"
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return syncEntry{}, fmt.Sprintf("(id %q) is not valid JSON", head.ID)
	}
	return syncEntry{id: head.ID, raw: compact.Bytes()}, ""
}

// redactEntry replaces the secrets red finds in a parsed entry's strings
// by their markers. The entry keeps its id: one that would itself be
// redacted is refused, as its branch names it.
func redactEntry(e *syncEntry, red *redact.Redactor) string {
	if red == nil {
		return ""
	}
	out, changed, err := red.JSON(e.raw)
	if err != nil {
		return fmt.Sprintf("(id %q) is not valid JSON", e.id)
	}
	if !changed {
		return ""
	}
	if head, err := history.ReadHead(out); err != nil || head.ID != e.id {
		return fmt.Sprintf("has an id that looks like a secret (%s): give the entry another id", redactedKinds(red, e.id))
	}
	e.raw = out
	return ""
}

// redactedKinds names the kinds of secret red finds in s.
func redactedKinds(red *redact.Redactor, s string) string {
	_, matches := red.Text(s)
	kinds := make([]string, 0, len(matches))
	for _, m := range matches {
		kinds = append(kinds, m.Kind)
	}
	return strings.Join(kinds, ", ")
}

// sameStored reports whether stored, the JSON an entry was stored with, is
// the entry e sent now: the same entry, or one stored before today's
// redaction (memoryd upgraded, redaction turned on or a rule added) that
// today's redaction makes e. A sent entry never conflicts with itself for
// what memoryd took out of it.
func (p *syncPlan) sameStored(stored []byte, e syncEntry) bool {
	if bytes.Equal(stored, e.raw) || sameEntry(stored, e.raw) {
		return true
	}
	if p.red == nil {
		return false
	}
	redacted, changed, err := p.red.JSON(stored)
	return err == nil && changed && sameEntry(redacted, e.raw)
}

// syncPlan is a sync as checked against its request alone, before the
// writer. It holds what the write transaction needs, computed outside.
type syncPlan struct {
	entries []syncEntry // distinct ids, in request order
	ids     []string    // the entries' ids
	sentNow map[string]bool
	branch  []string // nil when the branch is not changed or delta says how
	delta   *deltaPlan
	hashes  [][]byte // hashes[i] is the BranchPrefixHash of hashes[i-1] and branch[i]
	// stored are the entries the snapshot of checkStored had stored, with
	// the same content; rendered are the others, rendered ahead.
	stored   map[string]bool
	rendered map[string]projections.RenderedEntry
	// red is the redaction the entries went through, which an entry stored
	// before it (or before one of its rules) is compared under.
	red *redact.Redactor
}

// planSync checks what a sync request alone can tell, such as its sizes,
// its entries and its branch's ids.
func planSync(req SyncRequest, red *redact.Redactor) (*syncPlan, error) {
	if len(req.Entries) > MaxSyncEntries {
		return nil, invalidf("a sync carries at most %d entries; send %d in several syncs (the branch with the last)", MaxSyncEntries, len(req.Entries))
	}
	if req.Branch != nil && len(*req.Branch) > MaxBranchLength {
		return nil, invalidf("a branch has at most %d entries", MaxBranchLength)
	}
	delta, err := planDelta(req)
	if err != nil {
		return nil, err
	}
	entries, err := parseEntries(req.Entries, red)
	if err != nil {
		return nil, err
	}
	p, err := newSyncPlan(entries, req.Branch)
	if err != nil {
		return nil, err
	}
	p.delta, p.red = delta, red
	return p, nil
}

// deltaPlan is a SyncDelta checked against its request alone, then
// resolved by checkStored against the branch of revision resolvedAt.
type deltaPlan struct {
	base, keep int64
	append     []string

	resolvedAt int64         // -1 until resolved
	change     *branchChange // nil when the branch stays as it is
}

// planDelta checks the delta of a sync request, if any. Its fields must
// be set and it must append valid ids once each.
func planDelta(req SyncRequest) (*deltaPlan, error) {
	d := req.Delta
	if d == nil {
		return nil, nil
	}
	switch {
	case req.Branch != nil:
		return nil, invalidf("a sync carries the branch whole (branch) or as a delta (delta), not both")
	case req.ExpectedRevision != nil:
		return nil, invalidf("expected_revision goes with a whole branch; a delta names its base in delta.base_revision")
	case d.BaseRevision == nil || *d.BaseRevision < 0:
		return nil, invalidf("delta.base_revision is required: the revision the last sync returned")
	case d.Keep == nil || *d.Keep < 0:
		return nil, invalidf("delta.keep is required: how many ids of the base branch stay (0 or more)")
	case *d.Keep > MaxBranchLength || *d.Keep+int64(len(d.Append)) > MaxBranchLength:
		return nil, invalidf("a branch has at most %d entries", MaxBranchLength)
	}
	seen := make(map[string]struct{}, len(d.Append))
	for i, id := range d.Append {
		if !validEntryID(id) {
			return nil, invalidf("delta.append[%d] is not an entry id (ids are 1 to %d bytes of valid UTF-8)", i, maxEntryIDBytes)
		}
		if _, dup := seen[id]; dup {
			return nil, invalidf("delta.append lists entry %q twice (delta.append[%d])", id, i)
		}
		seen[id] = struct{}{}
	}
	return &deltaPlan{base: *d.BaseRevision, keep: *d.Keep, append: d.Append, resolvedAt: -1}, nil
}

// branchChange is a change of the branch as history.branch_changed
// records it.
type branchChange struct {
	keep   int64
	append []string
	length int64
}

// resolve checks the delta against the agent's branch as r reads it, and
// returns the change it makes, or nil when the branch stays as it is.
func (d *deltaPlan) resolve(ctx context.Context, r *projections.Reader, task, agent string, revision, length int64) (*branchChange, error) {
	newLength := d.keep + int64(len(d.append))
	switch {
	case d.base == revision && d.keep <= length:
	case d.base == revision-1:
		// A retry of this delta after it succeeded answers as a retried
		// whole sync does, as the branch is already the one it asks for.
		same, err := d.madeLastChange(ctx, r, task, agent, length)
		if err != nil || same {
			return nil, err
		}
		return nil, staleBase(d, revision, length)
	default:
		return nil, staleBase(d, revision, length)
	}
	// The change is the one the whole branch would make, keeping the
	// longest shared prefix. It reads no more of the branch than the
	// delta appends.
	keep, tail := d.keep, d.append
	if keep < length && len(tail) > 0 {
		current, err := r.BranchIDsFrom(ctx, task, agent, keep, len(tail))
		if err != nil {
			return nil, err
		}
		for len(tail) > 0 && len(current) > 0 && current[0] == tail[0] {
			current, tail, keep = current[1:], tail[1:], keep+1
		}
	}
	if keep == length && newLength == length {
		return nil, nil
	}
	id, at, err := r.FirstOnBranchBefore(ctx, task, agent, tail, keep)
	if err != nil {
		return nil, err
	}
	if at >= 0 {
		return nil, invalidf("delta.append lists entry %q, which the kept branch has at index %d; a branch lists an entry once", id, at)
	}
	return &branchChange{keep: keep, append: tail, length: newLength}, nil
}

// madeLastChange reports whether the branch of length length is the delta
// applied to the branch before the last change.
func (d *deltaPlan) madeLastChange(ctx context.Context, r *projections.Reader, task, agent string, length int64) (bool, error) {
	if length != d.keep+int64(len(d.append)) {
		return false, nil
	}
	// The last change must have kept the delta's prefix, and the branch
	// must continue with the delta's ids.
	kept, err := r.LastBranchChangeKeep(ctx, task, agent)
	if err != nil || kept < d.keep {
		return false, err
	}
	ids, err := r.BranchIDsFrom(ctx, task, agent, d.keep, len(d.append))
	return err == nil && slices.Equal(ids, d.append), err
}

// staleBase returns the conflict of a delta whose base is not the branch
// memoryd has.
func staleBase(d *deltaPlan, revision, length int64) error {
	msg := fmt.Sprintf("delta.base_revision is %d but the branch is at revision %d; send the whole branch (branch) instead of a delta", d.base, revision)
	if d.base == revision {
		msg = fmt.Sprintf("delta.keep is %d but the branch at revision %d has %d entries; send the whole branch (branch) instead of a delta", d.keep, revision, length)
	}
	return &Error{Kind: ErrConflict, Message: msg,
		Details: map[string]any{"reason": SyncReasonStaleBase, "revision": revision, "length": length}}
}

// newSyncPlan is planSync of entries already parsed. It checks that the
// branch, if any, lists valid ids once each.
func newSyncPlan(entries []syncEntry, branchp *[]string) (*syncPlan, error) {
	p := &syncPlan{entries: entries, ids: make([]string, len(entries)), sentNow: make(map[string]bool, len(entries))}
	for i, e := range entries {
		p.ids[i] = e.id
		p.sentNow[e.id] = true
	}
	if branchp == nil {
		return p, nil
	}
	branch := *branchp
	seen := make(map[string]struct{}, len(branch))
	p.hashes = make([][]byte, len(branch))
	prev := []byte{}
	for i, id := range branch {
		if !validEntryID(id) {
			return nil, invalidf("branch[%d] is not an entry id (ids are 1 to %d bytes of valid UTF-8)", i, maxEntryIDBytes)
		}
		if _, dup := seen[id]; dup {
			return nil, invalidf("branch lists entry %q twice (branch[%d])", id, i)
		}
		seen[id] = struct{}{}
		prev = projections.BranchPrefixHash(prev, id)
		p.hashes[i] = prev
	}
	p.branch = branch
	return p, nil
}

// checkStored checks the sync against a read snapshot of what is stored,
// so a refused sync never queues for the writer. Entries are never
// deleted, so the writer checks again only what may have changed since.
func (p *syncPlan) checkStored(ctx context.Context, r *projections.Reader, cc CallContext, expectedRevision *int64) error {
	c, err := identify(ctx, r, cc)
	if err != nil {
		return err
	}
	task, agent := c.taskID, c.agent.Agent
	revision, current, err := r.Branch(ctx, task, agent)
	if err != nil {
		return err
	}
	if err := checkRevision(expectedRevision, revision); err != nil {
		return err
	}
	stored, err := r.StoredEntries(ctx, task, agent, p.ids)
	if err != nil {
		return err
	}
	p.stored = make(map[string]bool, len(stored))
	for _, e := range p.entries {
		if !stored[e.id] {
			continue
		}
		raw, err := r.EntryRaw(ctx, task, agent, e.id)
		if err != nil {
			return err
		}
		if !p.sameStored(raw, e) {
			return &EntryError{Index: e.index, Err: conflictf("entry %q was already synced with different content; entries are immutable", e.id)}
		}
		p.stored[e.id] = true
	}
	if p.delta != nil {
		change, err := p.delta.resolve(ctx, r, task, agent, revision, current)
		if err != nil {
			return err
		}
		p.delta.resolvedAt, p.delta.change = revision, change
		if change == nil {
			return nil
		}
		var lookup []string // appended ids not sent now
		for _, id := range change.append {
			if !p.sentNow[id] {
				lookup = append(lookup, id)
			}
		}
		i, err := r.FirstUnstored(ctx, task, agent, lookup)
		if err != nil {
			return err
		}
		if i >= 0 {
			return invalidf("delta.append names entry %q, which was never synced; send it in entries", lookup[i])
		}
		return nil
	}
	if p.branch == nil {
		return nil
	}
	// Only the ids past the prefix the branch shares with the current one
	// are looked up, as the prefix is stored already.
	keep, err := r.SharedPrefix(ctx, task, agent, p.hashes, current)
	if err != nil {
		return err
	}
	var lookup []string // ids past the shared prefix not sent now
	var at []int        // their indexes in the branch
	for i := keep; i < len(p.branch); i++ {
		if id := p.branch[i]; !p.sentNow[id] {
			lookup, at = append(lookup, id), append(at, i)
		}
	}
	i, err := r.FirstUnstored(ctx, task, agent, lookup)
	if err != nil {
		return err
	}
	if i >= 0 {
		return invalidf("branch[%d] names entry %q, which was never synced; send it in entries", at[i], lookup[i])
	}
	return nil
}

// render renders, ahead of the writer, the entries checkStored did not
// find stored, which the sync will record.
func (p *syncPlan) render() error {
	if p.rendered == nil {
		p.rendered = make(map[string]projections.RenderedEntry, len(p.entries)-len(p.stored))
	}
	for _, e := range p.entries {
		if _, done := p.rendered[e.id]; done || p.stored[e.id] {
			continue
		}
		r, err := projections.RenderEntry(e.raw)
		if err != nil {
			return err
		}
		if field := r.IdentifierWithNUL(); field != "" {
			return invalidf("entries[%d]: its %s contains U+0000, which memoryd does not store in identifiers", e.index, field)
		}
		p.rendered[e.id] = r
	}
	return nil
}

// checkRevision refuses a branch whose revision is not the expected one.
func checkRevision(expected *int64, revision int64) error {
	if expected != nil && *expected != revision {
		return conflictf("expected_revision is %d but the branch is at revision %d; sync again from the current branch", *expected, revision)
	}
	return nil
}

// errStoredMeanwhile says an entry the snapshot had not stored was stored
// before the sync's turn at the writer. The sync then checks it again.
var errStoredMeanwhile = errors.New("an entry was stored since the snapshot")

// Sync stores new raw entries of the caller's session and replaces its
// current branch, all in one transaction. Everything that can be checked
// without the writer is checked before it.
func (s *Service) Sync(ctx context.Context, req SyncRequest, requestID string) (SyncResult, error) {
	p, err := planSync(req, s.redactor)
	if err != nil {
		return SyncResult{}, err
	}
	for {
		if err := s.read(ctx, func(r *projections.Reader) error {
			return p.checkStored(ctx, r, req.Context, req.ExpectedRevision)
		}); err != nil {
			return SyncResult{}, err
		}
		if err := p.render(); err != nil {
			return SyncResult{}, err
		}
		if s.syncToWriter != nil {
			s.syncToWriter()
		}
		// Each retry follows an entry of the request stored by another sync
		// meanwhile, so there are at most as many as entries.
		res, err := s.writeSync(ctx, p, req, requestID)
		if !errors.Is(err, errStoredMeanwhile) {
			return res, err
		}
	}
}

// writeSync is the write transaction of a sync checked by checkStored.
func (s *Service) writeSync(ctx context.Context, p *syncPlan, req SyncRequest, requestID string) (SyncResult, error) {
	var res SyncResult
	err := s.store.Update(ctx, requestID, func(tx *eventlog.Tx) error {
		var err error
		res, err = syncTx(ctx, tx, p, req)
		return err
	})
	if err != nil {
		return SyncResult{}, err
	}
	return res, nil
}

// syncIn runs a session import's sync of entries inside tx. The checks of
// checkStored run in tx itself.
func syncIn(ctx context.Context, tx *eventlog.Tx, req SyncRequest, entries []syncEntry, red *redact.Redactor) (SyncResult, error) {
	p, err := newSyncPlan(entries, req.Branch)
	if err != nil {
		return SyncResult{}, err
	}
	p.red = red
	if err := p.checkStored(ctx, projections.TxReader(tx), req.Context, req.ExpectedRevision); err != nil {
		return SyncResult{}, err
	}
	return syncTx(ctx, tx, p, req)
}

// syncTx writes a sync checked by checkStored in tx. It returns
// errStoredMeanwhile if an entry the check saw unstored is stored now.
func syncTx(ctx context.Context, tx *eventlog.Tx, p *syncPlan, req SyncRequest) (SyncResult, error) {
	var res SyncResult
	r := projections.TxReader(tx)
	c, err := identify(ctx, r, req.Context)
	if err != nil {
		return SyncResult{}, err
	}
	task, agent := c.taskID, c.agent.Agent
	revision, current, err := r.Branch(ctx, task, agent)
	if err != nil {
		return SyncResult{}, err
	}
	if err := checkRevision(req.ExpectedRevision, revision); err != nil {
		return SyncResult{}, err
	}
	stored, err := r.StoredEntries(ctx, task, agent, p.ids)
	if err != nil {
		return SyncResult{}, err
	}
	var pending []events.Pending
	for _, e := range p.entries {
		switch {
		case stored[e.id] && p.stored[e.id]:
			res.Unchanged++
		case stored[e.id]:
			return SyncResult{}, errStoredMeanwhile
		default:
			if rendered, ok := p.rendered[e.id]; ok {
				projections.WillRecordEntry(tx, task, agent, e.id, rendered)
			}
			pending = append(pending, events.NewPending(events.HistoryEntryRecorded{TaskID: task, Agent: agent, EntryID: e.id, Entry: e.raw}))
			res.Stored++
		}
	}
	res.Revision = revision
	if p.delta != nil {
		// checkStored resolved the delta at the snapshot's revision and found
		// the ids its change appends stored or sent now. At the same revision
		// its change stands. A later revision makes the delta a retry or
		// stale, and resolving it again reads no more than the delta appends.
		change := p.delta.change
		if revision != p.delta.resolvedAt {
			if change, err = p.delta.resolve(ctx, r, task, agent, revision, current); err != nil {
				return SyncResult{}, err
			}
		}
		if change != nil {
			res.Revision = revision + 1
			pending = append(pending, events.NewPending(events.HistoryBranchChanged{
				TaskID: task, Agent: agent, Revision: res.Revision, Keep: change.keep,
				Append: append([]string{}, change.append...), Length: change.length}))
		}
	}
	if p.branch != nil {
		// checkStored found every id of the branch stored or sent now, and
		// entries stay stored. Only the shared prefix may have changed since,
		// by another sync of this agent.
		keep, err := r.SharedPrefix(ctx, task, agent, p.hashes, current)
		if err != nil {
			return SyncResult{}, err
		}
		if int64(keep) != current || keep != len(p.branch) {
			res.Revision = revision + 1
			pending = append(pending, events.NewPending(events.HistoryBranchChanged{
				TaskID: task, Agent: agent, Revision: res.Revision, Keep: int64(keep),
				Append: slices.Clone(p.branch[keep:]), Length: int64(len(p.branch))}))
		}
	}
	if len(pending) > 0 {
		stream := events.Stream(task, agent)
		version, err := tx.StreamVersion(ctx, stream)
		if err != nil {
			return SyncResult{}, err
		}
		if _, err := tx.Append(ctx, stream, version, pending...); err != nil {
			return SyncResult{}, err
		}
	}
	if res.WindowID, err = r.LastWindow(ctx, task, agent); err != nil {
		return SyncResult{}, err
	}
	if res.WindowID != c.state.WindowID && AgentKind(c.agent.SessionKey) != KindPi {
		if err := followHostWindows(ctx, tx, r, c); err != nil {
			return SyncResult{}, err
		}
	}
	return res, nil
}

// followHostWindows moves a Claude Code or Codex agent's window to its
// history's: those hosts compact on their own, and a compaction reaches
// memoryd as a window of the synced transcript, not as a rollover. Pi's
// windows move by the extension's rollover, never here.
func followHostWindows(ctx context.Context, tx *eventlog.Tx, r *projections.Reader, c caller) error {
	wins, err := r.Windows(ctx, c.taskID, c.agent.Agent, projections.WholeBranch)
	if err != nil || len(wins) == 0 {
		return err
	}
	ids := make([]string, len(wins))
	for i, w := range wins {
		ids[i] = w.ID
	}
	// The windows after the agent's, or only the last when the branch no
	// longer holds the agent's (a rewind to before a compaction keeps the
	// window it is in, as a rollover does).
	after := ids[len(ids)-1:]
	if i := slices.Index(ids, c.state.WindowID); i >= 0 {
		after = ids[i+1:]
	} else if wins[len(wins)-1].Ordinal <= int64(c.state.WindowNumber) {
		return nil
	}
	return appendOwn(ctx, tx, c, fence.Follow(ref(c), c.state, after).Events)
}
