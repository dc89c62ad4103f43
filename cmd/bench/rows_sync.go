package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// fxSyncTurn is a second memoryd on the history database for the sync-turn
// rows. The whole form's 2 MB requests would raise the peak the rss row
// reads off the history server, so this server takes them instead. memoryd
// serves a database other processes write to; see docs/contract-notes.md.
var fxSyncTurn = &fixture{name: "sync server on the history", needs: []*fixture{fxHistory}, setup: (*bench).setupSyncTurn}

// syncTurnsDelta and syncTurnsWhole are the turns one repetition of
// sync-turn and sync-turn-whole times. The figure is their median.
const (
	syncTurnsDelta = 20
	syncTurnsWhole = 5
)

// setupSyncTurn starts the sync server and learns the branch's revision
// with an untimed whole sync of the branch, which changes nothing.
func (b *bench) setupSyncTurn(ctx context.Context) error {
	p, err := b.startMemoryd(ctx, "memoryd(sync)", filepath.Join(b.scratch, "history.db"))
	if err != nil {
		return err
	}
	b.syncer = p
	body, err := b.syncBody(nil, nil)
	if err != nil {
		return err
	}
	var res syncAnswer
	if err := b.cl.postJSON(ctx, p.url+"/v1/history/sync", body, &res); err != nil {
		return fmt.Errorf("sync server: the whole branch: %w", err)
	}
	if res.Stored != 0 || res.Unchanged != 0 {
		return fmt.Errorf("sync server: the whole branch stored %d, unchanged %d, want nothing", res.Stored, res.Unchanged)
	}
	b.syncRevision, b.syncFrom = res.Revision, len(b.histBranch)
	b.logf("memoryd(sync) at %s: branch of %d ids at revision %d", p.url, len(b.histBranch), res.Revision)
	return nil
}

// syncAnswer is the response of a sync.
type syncAnswer struct {
	Revision  int64 `json:"revision"`
	Stored    int   `json:"stored"`
	Unchanged int   `json:"unchanged"`
}

// syncBody is a sync request of the history's agent carrying entry and the
// branch. A nil entry sends none, and a nil delta sends the branch whole.
func (b *bench) syncBody(entry []byte, delta any) ([]byte, error) {
	var body bytes.Buffer
	fmt.Fprintf(&body, `{"context":{"task_id":%q,"agent":"/root"},"entries":[%s],`, b.histTask, entry)
	if delta != nil {
		body.WriteString(`"delta":`)
		d, err := json.Marshal(delta)
		if err != nil {
			return nil, err
		}
		body.Write(d)
	} else {
		body.WriteString(`"branch":`)
		ids, err := json.Marshal(b.histBranch)
		if err != nil {
			return nil, err
		}
		body.Write(ids)
	}
	body.WriteString("}")
	return body.Bytes(), nil
}

// syncTurn times one more turn, a new user message after the leaf, sent
// with the branch whole or as a delta from the last revision. It returns
// the time and the body's size.
func (b *bench) syncTurn(ctx context.Context, whole bool) (time.Duration, int, error) {
	b.syncTurns++
	id := fmt.Sprintf("st%07d", b.syncTurns)
	leaf := b.histBranch[len(b.histBranch)-1]
	entry := fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2027-01-02T00:00:00.000Z","message":{"role":"user","content":"sync-turn %d: one more turn","timestamp":1798848000000}}`,
		id, leaf, b.syncTurns)
	keep := len(b.histBranch)
	b.histBranch = append(b.histBranch, id)
	var delta any
	if !whole {
		delta = map[string]any{"base_revision": b.syncRevision, "keep": keep, "append": []string{id}}
	}
	body, err := b.syncBody(entry, delta)
	if err != nil {
		return 0, 0, err
	}
	var res syncAnswer
	t := time.Now()
	if err := b.cl.postJSON(ctx, b.syncer.url+"/v1/history/sync", body, &res); err != nil {
		return 0, 0, fmt.Errorf("sync turn %s: %w", id, err)
	}
	took := time.Since(t)
	if res.Stored != 1 || res.Revision != b.syncRevision+1 {
		return 0, 0, fmt.Errorf("sync turn %s: stored %d at revision %d, want 1 at %d", id, res.Stored, res.Revision, b.syncRevision+1)
	}
	b.syncRevision = res.Revision
	return took, len(body), nil
}

// measureSyncTurns times n turns in one form, their median the figure.
// The slowest and the body size go in the notes.
func (b *bench) measureSyncTurns(ctx context.Context, rep repetition, whole bool, n int) (sample, error) {
	var took []float64
	var size int
	for range n {
		d, sz, err := b.syncTurn(ctx, whole)
		if err != nil {
			return sample{}, err
		}
		took, size = append(took, d.Seconds()), sz
	}
	sp := spreadOf(took)
	s := sample{fig: sp.med}
	s.add("slowest of the repetition's turns (s)", sp.hi)
	s.add("request body (bytes)", float64(size))
	b.logf("%s: %s per turn [%s–%s], %d-byte bodies", rep.row, ms(sp.med), ms(sp.lo), ms(sp.hi), size)
	return s, nil
}

func (b *bench) measureSyncTurnDelta(ctx context.Context, rep repetition) (sample, error) {
	return b.measureSyncTurns(ctx, rep, false, syncTurnsDelta)
}

func (b *bench) measureSyncTurnWhole(ctx context.Context, rep repetition) (sample, error) {
	return b.measureSyncTurns(ctx, rep, true, syncTurnsWhole)
}

func (b *bench) syncTurnNotes() string {
	return fmt.Sprintf("One more turn on the history (a branch of %s entries): a `POST /v1/history/sync` of one new user message with the branch "+
		"as a delta (`{\"base_revision\": <the last sync's revision>, \"keep\": <the branch's length>, \"append\": [<the new id>]}`), "+
		"as the Pi extension sends it. Timed by the client over loopback HTTP (the server's time and the round trip), %d turns per "+
		"repetition, one after the other; the figure is their median. A second memoryd on the same database serves the sync rows "+
		"(so that their writes do not count in the history server's rss row). Each turn must store 1 entry and move the revision by 1.",
		num(float64(b.syncFrom), 0), syncTurnsDelta)
}

func (b *bench) syncTurnWholeNotes() string {
	return fmt.Sprintf("As sync-turn with the whole branch in the request (`\"branch\": [...]`, every id of the branch, as clients sent it "+
		"before the delta form and as they still do to recover), %d turns per repetition.", syncTurnsWhole)
}
