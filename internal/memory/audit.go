package memory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
)

// Options configure a Service.
type Options struct {
	// AuditCalls records every tool call as an audit.tool_called event,
	// in batches after the call returns (the read audit).
	AuditCalls bool
	// Logger receives audit failures (default: discard).
	Logger *slog.Logger
}

// NewWithOptions returns a Service over store with opts. Close it to
// flush the audit.
func NewWithOptions(store *events.Store, opts Options) *Service {
	s := New(store)
	if opts.AuditCalls {
		log := opts.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		s.audit = newAuditor(store, log)
	}
	return s
}

// Close flushes and stops the read audit. The store stays open.
func (s *Service) Close() {
	if s.audit != nil {
		s.audit.close()
	}
}

// Audit batching: a batch commits when it holds auditBatch records or
// when auditDelay has passed since its first record.
const (
	auditBatch = 512
	auditDelay = 20 * time.Millisecond
	auditQueue = 8192
)

// auditor appends audit records in batches from one goroutine, so that a
// read never waits for an fsync. A full queue makes callers wait (no
// record is dropped while the database works).
type auditor struct {
	store  *events.Store
	log    *slog.Logger
	ch     chan events.ToolCalled
	mu     sync.RWMutex // guards closed against sends on a closed channel
	closed bool
	done   chan struct{}
	known  map[string]bool // streams of agents found registered (used by run only)
}

func newAuditor(store *events.Store, log *slog.Logger) *auditor {
	a := &auditor{store: store, log: log, ch: make(chan events.ToolCalled, auditQueue), done: make(chan struct{}), known: map[string]bool{}}
	go a.run()
	return a
}

// ResultDigest fingerprints what a tool call returned: its result, or its
// error kind, message and details.
//
// The digest is SHA-256 of json.Marshal's encoding (HTML-escaped, no final
// newline). A result is hashed from its response body (res.JSON, encoded
// once for both: res keeps it), escaped on the way into the hash: the two
// encodings differ only in <, > and & inside strings.
func ResultDigest(res *ToolResult, err error) (outcome, digest string) {
	h := sha256.New()
	outcome = "ok"
	if err != nil {
		outcome = ErrorKind(err)
		var me *Error
		msg, details := "", map[string]any(nil)
		if errors.As(err, &me) {
			msg, details = me.Message, me.Details
		}
		b, _ := json.Marshal(map[string]any{"error": outcome, "message": msg, "details": details})
		h.Write(b)
	} else {
		if body, err := res.JSON(); err == nil { // else the digest of nothing, as json.Marshal fails alike
			writeHTMLEscaped(h, bytes.TrimSuffix(body, []byte("\n")))
		}
	}
	return outcome, hex.EncodeToString(h.Sum(nil))
}

// indexHTML is bytes.IndexAny(b, "<>&") by three vectorised IndexByte
// scans, each bounded by the nearest hit so far.
func indexHTML(b []byte) int {
	i := -1
	for _, c := range []byte{'<', '>', '&'} {
		if j := bytes.IndexByte(b, c); j >= 0 {
			i, b = j, b[:j]
		}
	}
	return i
}

// writeHTMLEscaped writes JSON b to w as encoding/json writes it with HTML
// escaping on: <, > and & (which occur in JSON only inside strings) as
// \u003c, \u003e and \u0026.
func writeHTMLEscaped(w io.Writer, b []byte) {
	for {
		i := indexHTML(b)
		if i < 0 {
			w.Write(b)
			return
		}
		w.Write(b[:i])
		switch b[i] {
		case '<':
			io.WriteString(w, `\u003c`)
		case '>':
			io.WriteString(w, `\u003e`)
		default:
			io.WriteString(w, `\u0026`)
		}
		b = b[i+1:]
	}
}

// ErrorKind names the kind of err in the vocabulary of errors.go.
func ErrorKind(err error) string {
	for _, k := range []struct {
		kind error
		name string
	}{
		{ErrInvalidArgument, "invalid_argument"}, {ErrNotFound, "not_found"}, {ErrForbidden, "forbidden"},
		{ErrConflict, "conflict"}, {ErrTooLarge, "too_large"}, {ErrFenced, "fenced"}, {ErrUnavailable, "unavailable"},
	} {
		if errors.Is(err, k.kind) {
			return k.name
		}
	}
	return "internal"
}

func (a *auditor) record(tool string, cc CallContext, args json.RawMessage, pos int64, res *ToolResult, err error) {
	if cc.TaskID == "" || cc.Agent == "" {
		return // no agent stream to record it on
	}
	outcome, digest := ResultDigest(res, err)
	if outcome == "internal" || outcome == "unavailable" {
		return // not a result of the log's state
	}
	compact := json.RawMessage("{}")
	if len(args) > 0 && string(args) != "null" {
		compact = append(json.RawMessage(nil), args...)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return // a call that outlived Close (a shutdown timeout) is not recorded
	}
	a.ch <- events.ToolCalled{AgentRef: events.AgentRef{TaskID: cc.TaskID, Agent: cc.Agent}, CallID: cc.CallID,
		Tool: tool, Arguments: compact, ReadPosition: pos, Outcome: outcome, ResultDigest: digest}
}

func (a *auditor) run() {
	defer close(a.done)
	var batch []events.ToolCalled
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		var found []string // agents found registered, known once the batch commits
		err := a.store.Update(context.Background(), "", func(tx *events.Tx) error {
			found = found[:0]
			ctx := context.Background()
			r := projections.NewReader(tx.DB())
			// Consecutive records of one stream are appended together (one
			// version lookup), in the order they came.
			var run []events.Pending
			stream := ""
			appendRun := func() error {
				if len(run) == 0 {
					return nil
				}
				_, err := tx.Append(ctx, stream, events.AnyVersion, run...)
				run = run[:0]
				return err
			}
			for _, rec := range batch {
				// Only calls of registered agents are recorded: nobody can
				// fill the log with streams of tasks that do not exist.
				// Agents are never unregistered, so one that was found
				// stays known, once the registration this transaction saw
				// is committed (it may come from a request of this batch).
				key := events.Stream(rec.TaskID, rec.Agent)
				if !a.known[key] && !slices.Contains(found, key) {
					if _, err := r.Agent(ctx, rec.TaskID, rec.Agent); err != nil {
						if errors.Is(err, projections.ErrNotFound) {
							continue
						}
						return err
					}
					found = append(found, key)
				}
				if key != stream {
					if err := appendRun(); err != nil {
						return err
					}
					stream = key
				}
				run = append(run, events.Pending{Type: events.TypeToolCalled, Data: rec})
			}
			return appendRun()
		})
		if err != nil {
			a.log.Error("read audit: batch not recorded", "records", len(batch), "error", err.Error())
		} else {
			for _, key := range found {
				a.known[key] = true
			}
		}
		batch = batch[:0]
	}
	for {
		select {
		case rec, ok := <-a.ch:
			if !ok {
				flush()
				return
			}
			if len(batch) == 0 {
				timer.Reset(auditDelay)
			}
			if batch = append(batch, rec); len(batch) >= auditBatch {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

func (a *auditor) close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	a.mu.Unlock()
	<-a.done
}
