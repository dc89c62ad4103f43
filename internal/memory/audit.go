package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/jsonenc"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// These constants bound the audit's batches. A batch commits when it holds
// auditBatch records or auditDelay after its first, and records each
// agent's calls in it as one event (more past events.MaxCallRecords). At
// most auditQueue records and auditQueueBytes of arguments and bodies
// wait, and a record larger than that waits alone.
const (
	auditBatch      = 512
	auditDelay      = 20 * time.Millisecond
	auditQueue      = 8192
	auditQueueBytes = 64 << 20
)

// auditor appends audit records in batches from one goroutine, so that a
// read never waits for an fsync. A full queue makes callers wait, so no
// record is dropped while the database works.
//
// The queue is a slice under a mutex rather than a channel, which would
// wake the goroutine for every record. It is woken once per batch, by the
// first record's timer or by the record that fills the batch.
type auditor struct {
	store *eventlog.Store
	log   *slog.Logger

	mu           sync.Mutex
	pending      []auditEntry
	pendingBytes int        // of pending's arguments and bodies
	space        *sync.Cond // signalled when pending is taken
	closed       bool
	wake         chan struct{} // of capacity 1, set when run has work or must stop

	done  chan struct{}
	known map[string]bool // streams of agents found registered, used by run only
	// knownEpoch is the log's epoch (eventlog.Tx.Epoch) known holds at: an
	// erasure, here or by another process, makes it forget them.
	knownEpoch int64
}

// newAuditor starts an auditor appending to store.
func newAuditor(store *eventlog.Store, log *slog.Logger) *auditor {
	a := &auditor{store: store, log: log, wake: make(chan struct{}, 1), done: make(chan struct{}), known: map[string]bool{}}
	a.space = sync.NewCond(&a.mu)
	go a.run()
	return a
}

// signal wakes run, unless it is already due to wake.
func (a *auditor) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// ResultDigest fingerprints what a tool call returned, its result or its
// error kind, message and details.
//
// The digest is SHA-256 of json.Marshal's encoding, HTML-escaped and
// without a final newline. A result is hashed from its response body,
// escaped on the way into the hash, as the two encodings differ only in
// <, > and & inside strings.
func ResultDigest(res *ToolResult, err error) (outcome, digest string) {
	if err != nil {
		return errorDigest(err)
	}
	body, jerr := res.JSON()
	if jerr != nil {
		body = nil // the digest of nothing, as json.Marshal fails alike
	}
	return "ok", bodyDigest(body)
}

// errorDigest returns ResultDigest of a failed call.
func errorDigest(err error) (outcome, digest string) {
	outcome = ErrorKind(err)
	var me *Error
	msg, details := "", map[string]any(nil)
	if errors.As(err, &me) {
		msg, details = me.Message, me.Details
	}
	b, _ := json.Marshal(map[string]any{"error": outcome, "message": msg, "details": details})
	sum := sha256.Sum256(b)
	return outcome, hex.EncodeToString(sum[:])
}

// bodyDigest returns ResultDigest of a result whose response body is body,
// nil for a result that could not be encoded.
func bodyDigest(body []byte) string {
	h := sha256.New()
	jsonenc.WriteHTMLEscaped(h, bytes.TrimSuffix(body, []byte("\n")))
	return hex.EncodeToString(h.Sum(nil))
}

// auditEntry is a call waiting to be recorded. Its record lacks what the
// audit's goroutine derives off the request path from args and body.
type auditEntry struct {
	ref  events.AgentRef
	rec  events.CallRecord
	args json.RawMessage // a copy of the call's arguments
	body []byte          // the successful result's response body, or nil when rec.ResultDigest is set
}

// finish sets what the audit's goroutine derives, the arguments kept and,
// for a successful call, the result digest.
func (e *auditEntry) finish() {
	e.rec.Arguments, e.rec.ElidedArguments, e.rec.ArgumentsDigest = auditArguments(e.rec.Tool, e.args)
	if e.body != nil {
		e.rec.ResultDigest = bodyDigest(e.body)
	}
}

// record queues the audit record of a call. The result is encoded here,
// as the caller sends the same body, but the audit's goroutine hashes it
// and parses the arguments, so the response waits for neither.
func (a *auditor) record(tool string, cc CallContext, args json.RawMessage, pos int64, res *ToolResult, err error) {
	if cc.TaskID == "" || cc.Agent == "" {
		return // no agent stream to record it on
	}
	e := auditEntry{ref: events.AgentRef{TaskID: cc.TaskID, Agent: cc.Agent},
		rec:  events.CallRecord{CallID: cc.CallID, Tool: tool, ReadPosition: pos},
		args: append(json.RawMessage(nil), args...)}
	if err != nil {
		e.rec.Outcome, e.rec.ResultDigest = errorDigest(err)
		if e.rec.Outcome == CodeInternal || e.rec.Outcome == CodeUnavailable {
			return // not a result of the log's state
		}
	} else if body, jerr := res.JSON(); jerr != nil {
		e.rec.Outcome, e.rec.ResultDigest = "ok", bodyDigest(nil)
	} else {
		e.rec.Outcome, e.body = "ok", body
	}
	size := len(e.args) + len(e.body)
	a.mu.Lock()
	for (len(a.pending) >= auditQueue || len(a.pending) > 0 && a.pendingBytes+size > auditQueueBytes) && !a.closed {
		a.space.Wait()
	}
	if a.closed {
		a.mu.Unlock()
		return // a call that outlived Close after a shutdown timeout is not recorded
	}
	a.pending = append(a.pending, e)
	a.pendingBytes += size
	n := len(a.pending)
	a.mu.Unlock()
	switch n {
	case 1:
		time.AfterFunc(auditDelay, a.signal)
	case auditBatch:
		a.signal()
	}
}

// auditArgumentsBytes is the most JSON text of a call's arguments an audit
// record keeps whole. The longest valid note path fits, with room to spare.
const auditArgumentsBytes = 4096

// bulkTextArguments names, by tool, the argument that carries bulk text.
// The audit keeps only its size and digest, as the text is in the note
// event already and a refused write must store none.
var bulkTextArguments = map[string]string{
	tools.NotesWriteFile:    "text",
	tools.NotesAppendToFile: "text",
}

// auditArguments returns what the audit record of a call of tool keeps of
// its arguments args. docs/contract-notes.md gives the rules.
func auditArguments(tool string, args json.RawMessage) (kept json.RawMessage, elided map[string]events.Digest, whole *events.Digest) {
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage("{}"), nil, nil
	}
	kept = args
	if name, ok := bulkTextArguments[tool]; ok { // a write's text is elided
		if rest, text, ok := withoutString(args, name); ok {
			kept, elided = rest, map[string]events.Digest{name: digestOf([]byte(text))}
		}
	}
	if len(kept) > auditArgumentsBytes { // keep only the size and digest of the whole args
		d := digestOf(args)
		return json.RawMessage("null"), nil, &d
	}
	return append(json.RawMessage(nil), kept...), elided, nil
}

// withoutString returns the JSON object args without its top-level string
// member name, and that string. The other members are kept in order.
func withoutString(args json.RawMessage, name string) (rest json.RawMessage, value string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(args))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", false
	}
	out := []byte{'{'}
	found := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, "", false
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", false
		}
		if key == name && len(v) > 0 && v[0] == '"' {
			if err := json.Unmarshal(v, &value); err != nil {
				return nil, "", false
			}
			found = true // of a repeated name the last wins, as when the call decodes
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(key)
		out = append(append(append(out, k...), ':'), v...)
	}
	if _, err := dec.Token(); err != nil || !found {
		return nil, "", false
	}
	return append(out, '}'), value, true
}

// digestOf returns the size and SHA-256 of b.
func digestOf(b []byte) events.Digest {
	sum := sha256.Sum256(b)
	return events.Digest{Bytes: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
}

// commit appends the records of batch in one transaction: one event per
// agent holds its calls in the order they came, split at
// events.MaxCallRecords. A batch that fails is logged and dropped.
func (a *auditor) commit(batch []auditEntry) {
	var found []string // agents found registered, known once the batch commits
	// Each agent's calls, agents in the order of their first call.
	type agentCalls struct {
		stream string
		ref    events.AgentRef
		calls  []events.CallRecord
	}
	var agents []agentCalls
	at := map[string]int{} // index in agents, by stream
	for i := range batch {
		key := events.Stream(batch[i].ref.TaskID, batch[i].ref.Agent)
		j, ok := at[key]
		if !ok {
			j = len(agents)
			at[key] = j
			agents = append(agents, agentCalls{stream: key, ref: batch[i].ref})
		}
		agents[j].calls = append(agents[j].calls, batch[i].rec)
	}
	err := a.store.Update(context.Background(), "", func(tx *eventlog.Tx) error {
		found = found[:0]
		ctx := context.Background()
		r := projections.TxReader(tx)
		if e := tx.Epoch(); e != a.knownEpoch {
			clear(a.known) // a task may have been erased since they were found
			a.knownEpoch = e
		}
		for _, ag := range agents {
			key, ref := ag.stream, ag.ref
			// Only calls of registered agents are recorded, so nobody can
			// fill the log with streams of tasks that do not exist, nor
			// the stream of an erased task. An agent found stays known
			// once the registration this transaction saw is committed,
			// until the log's epoch changes (an erasure among others).
			if !a.known[key] {
				if _, err := r.Agent(ctx, ref.TaskID, ref.Agent); err != nil {
					if errors.Is(err, projections.ErrNotFound) {
						continue
					}
					return err
				}
				found = append(found, key)
			}
			var run []events.Pending
			for recs := ag.calls; len(recs) > 0; {
				n := min(len(recs), events.MaxCallRecords)
				run = append(run, events.NewPending(events.ToolCalled{AgentRef: ref, Calls: recs[:n]}))
				recs = recs[n:]
			}
			if _, err := tx.Append(ctx, key, eventlog.AnyVersion, run...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		a.log.Error("read audit: batch not recorded", "records", len(batch), "error", err.Error())
	} else {
		for _, key := range found {
			a.known[key] = true
		}
	}
}

// run records the queued calls until the auditor is closed.
func (a *auditor) run() {
	defer close(a.done)
	var spare []auditEntry
	for range a.wake {
		// Take what waits, leaving run's other slice for the next records.
		a.mu.Lock()
		taken := a.pending
		a.pending, a.pendingBytes = spare[:0], 0
		closed := a.closed
		a.space.Broadcast()
		a.mu.Unlock()
		for i := range taken {
			taken[i].finish() // before the transaction, so the writer does not wait for it
		}
		for batch := taken; len(batch) > 0; { // at most auditBatch per transaction
			n := min(len(batch), auditBatch)
			a.commit(batch[:n])
			batch = batch[n:]
		}
		clear(taken) // drop the records' strings before the slice is reused
		spare = taken[:0]
		if closed {
			return
		}
	}
}

// close records what waits and stops the auditor.
func (a *auditor) close() {
	a.mu.Lock()
	a.closed = true
	a.space.Broadcast()
	a.mu.Unlock()
	a.signal()
	<-a.done
}
