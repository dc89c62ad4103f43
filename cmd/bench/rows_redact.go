package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/memoryd/memoryd/internal/sessiongen"
)

// The redact rows measure what redaction before append (issue 36,
// docs/redaction.md) costs on the paths that pass through it: the same
// requests to two memoryds that differ only in --redact, the server's
// default (on) and off, each on a database of its own. The figure is with
// redaction, the ceiling without, and the ratio their quotient: above 1×
// is what redaction costs. The traffic is generated text with no secret
// in it, as nearly all of it is: what every byte pays is the scan.
var fxRedact = &fixture{name: "memoryds with and without redaction", setup: (*bench).setupRedact}

// redactSyncBatch is how many entries one redact-sync request sends.
const redactSyncBatch = 16

// redactNoteBytes is the size of the note redact-write writes and
// redact-read1 reads.
const redactNoteBytes = 32 << 10

// redactServer is one of the two memoryds of the redact rows.
type redactServer struct {
	p    *proc
	task string
	// The history sync's cursor: the task of the session it syncs, the
	// branch's revision, and the entries sent so far.
	syncTask  string
	syncRev   int64
	syncNext  int
	syncTasks int
	appends   int
	writes    int
}

// redactFixture is the state of the redact rows.
type redactFixture struct {
	on, off    *redactServer
	note       string            // redact-write's text, after a line naming its revision
	session    string            // the Pi session file redact-import imports and redact-sync syncs
	entries    []json.RawMessage // its entries, in branch order
	ids        []string
	imports    int
	importSize int64
}

// redactImportBytes is the size of redact-import's session file: 1/64 of
// -history-bytes, between 1 MiB and 16 MiB.
func (b *bench) redactImportBytes() int64 { return min(max(b.cfg.historyBytes/64, 1<<20), 16<<20) }

// setupRedact starts the two memoryds, attaches a task on each, writes
// the note the read row reads, and generates the Pi session the sync and
// import rows send.
func (b *bench) setupRedact(ctx context.Context) error {
	rf := &redactFixture{}
	b.redact = rf
	for _, mode := range []string{"default", "off"} {
		p, err := b.startMemoryd(ctx, "memoryd(redact "+mode+")", filepath.Join(b.scratch, "redact-"+mode+".db"), "--redact", mode)
		if err != nil {
			return err
		}
		s := &redactServer{p: p}
		if mode == "default" {
			rf.on = s
		} else {
			rf.off = s
		}
		if s.task, err = b.attach(ctx, p, "redact-notes"); err != nil {
			return err
		}
	}
	g := newTextGen(0x5ec7e7)
	rf.note = g.output("source", redactNoteBytes)
	for _, s := range []*redactServer{rf.on, rf.off} {
		if err := b.redactWrite(ctx, s); err != nil {
			return err
		}
	}
	dir := filepath.Join(b.scratch, "redact-session")
	files, err := writePiSession(dir, 0x5ec7e7, g, "redact", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), b.redactImportBytes(), "")
	if err != nil {
		return err
	}
	rf.session, rf.importSize = files[0].path, files[0].size
	if rf.entries, rf.ids, err = readPiEntries(rf.session); err != nil {
		return err
	}
	// Warm both up with the rows' own requests, untimed.
	for _, s := range []*redactServer{rf.on, rf.off} {
		for range 4 {
			if err := b.redactAppend(ctx, s); err != nil {
				return err
			}
			if _, err := b.redactSync(ctx, s); err != nil {
				return err
			}
		}
	}
	b.logf("redact rows: memoryd(redact default) at %s, memoryd(redact off) at %s; a %s Pi session of %d entries", rf.on.p.url, rf.off.p.url,
		mb(rf.importSize), len(rf.entries))
	return nil
}

// readPiEntries reads a Pi session file's entries and checks that they
// are one branch in file order, as writePiSession writes them.
func readPiEntries(path string) ([]json.RawMessage, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var entries []json.RawMessage
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var head struct{ Type, ID string }
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if head.Type == "session" {
			continue
		}
		entries = append(entries, bytes.Clone(sc.Bytes()))
		ids = append(ids, head.ID)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(ids) < redactSyncBatch {
		return nil, nil, fmt.Errorf("%s: %d entries", path, len(ids))
	}
	branch, err := sessiongen.Path(entries, ids[len(ids)-1])
	if err != nil {
		return nil, nil, err
	}
	if !slices.Equal(branch, ids) {
		return nil, nil, fmt.Errorf("%s: the branch (%d ids) is not the entries in file order (%d)", path, len(branch), len(ids))
	}
	return entries, ids, nil
}

// redactAppend appends one line to a note through s, as append1 does.
func (b *bench) redactAppend(ctx context.Context, s *redactServer) error {
	n := s.appends
	s.appends++
	body := b.toolBody(s.task, fmt.Sprintf(`{"path":"bench/redact-%d.md","text":"- appended line %d of the benchmark\n"}`, n/1000, n))
	_, err := b.cl.post(ctx, s.p.url+"/v1/tools/notes_append_to_file", body, false)
	return err
}

// redactWrite writes the whole note again through s, its first line
// naming the revision.
func (b *bench) redactWrite(ctx context.Context, s *redactServer) error {
	s.writes++
	args, _ := json.Marshal(map[string]string{"path": "bench/redact-write.md", "text": fmt.Sprintf("revision %d\n%s", s.writes, b.redact.note)})
	_, err := b.cl.post(ctx, s.p.url+"/v1/tools/notes_write_file", b.toolBody(s.task, string(args)), false)
	return err
}

// redactRead reads the note through s.
func (b *bench) redactRead(ctx context.Context, s *redactServer) error {
	_, err := b.cl.post(ctx, s.p.url+"/v1/tools/notes_read_file", b.toolBody(s.task, `{"path":"bench/redact-write.md"}`), false)
	return err
}

// redactSync syncs the next redactSyncBatch entries of the session to s,
// with the branch as a delta; at the session's end it starts again as a
// new session (a new task). It returns the entries' bytes.
func (b *bench) redactSync(ctx context.Context, s *redactServer) (int, error) {
	rf := b.redact
	if s.syncTask == "" || s.syncNext+redactSyncBatch > len(rf.ids) {
		s.syncTasks++
		task, err := b.attach(ctx, s.p, fmt.Sprintf("redact-sync-%d", s.syncTasks))
		if err != nil {
			return 0, err
		}
		s.syncTask, s.syncRev, s.syncNext = task, 0, 0
	}
	next := s.syncNext + redactSyncBatch
	var body bytes.Buffer
	fmt.Fprintf(&body, `{"context":{"task_id":%q,"agent":"/root"},"entries":[`, s.syncTask)
	size := 0
	for i, e := range rf.entries[s.syncNext:next] {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(e)
		size += len(e)
	}
	body.WriteString("],")
	var branch []byte
	if s.syncNext == 0 {
		branch, _ = json.Marshal(map[string]any{"branch": rf.ids[:next]})
	} else {
		branch, _ = json.Marshal(map[string]any{"delta": map[string]any{"base_revision": s.syncRev, "keep": s.syncNext, "append": rf.ids[s.syncNext:next]}})
	}
	body.Write(branch[1:]) // the object's fields, after the entries
	var res syncAnswer
	if err := b.cl.postJSON(ctx, s.p.url+"/v1/history/sync", body.Bytes(), &res); err != nil {
		return 0, fmt.Errorf("redact-sync: %w", err)
	}
	if res.Stored != redactSyncBatch {
		return 0, fmt.Errorf("redact-sync: stored %d entries, want %d", res.Stored, redactSyncBatch)
	}
	s.syncRev, s.syncNext = res.Revision, next
	return size, nil
}

// redactImport runs memoryd import-session of the session into a new
// database with MEMORYD_REDACT mode, and times it from exec to exit.
func (b *bench) redactImport(ctx context.Context, mode string) (time.Duration, float64, error) {
	// A folder of its own: the database, and the redaction key made beside it.
	b.redact.imports++
	dir := filepath.Join(b.scratch, fmt.Sprintf("redact-import-%d", b.redact.imports))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "memory.db")
	cmd := exec.CommandContext(ctx, b.bin, "import-session", "--db", db, b.redact.session)
	cmd.Env = append(os.Environ(), b.memorydEnv("MEMORYD_REDACT="+mode)...)
	t := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(t)
	if err != nil {
		return 0, 0, fmt.Errorf("memoryd import-session (MEMORYD_REDACT=%s): %v\n%s", mode, err, out)
	}
	return took, (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), nil
}

// measureRedactLatency pairs the p50 latency of one client's op through
// the memoryd with redaction and through the one without, for -dur each.
func (b *bench) measureRedactLatency(ctx context.Context, rep repetition, op func(context.Context, *redactServer) error) (sample, error) {
	var on, off loopResult
	var cpuOn, cpuOff float64
	half := func(s *redactServer, res *loopResult, cpu *float64) func() error {
		return func() (err error) {
			*cpu, err = cpuOf(s.p.pid(), func() (err error) {
				*res, err = loop(ctx, 1, b.cfg.dur, func(ctx context.Context, _ int) error { return op(ctx, s) })
				return err
			})
			return err
		}
	}
	if err := rep.pair(half(b.redact.on, &on, &cpuOn), half(b.redact.off, &off, &cpuOff)); err != nil {
		return sample{}, err
	}
	p50on, p50off := percentile(on.lat, 50).Seconds(), percentile(off.lat, 50).Seconds()
	s := sample{fig: p50on, ceil: p50off, ratio: p50on / p50off}
	// The server's CPU per request: less bent by the other processes on
	// the machine than the wall-clock latency.
	s.add("redaction on, memoryd CPU per request (s)", cpuOn/float64(on.calls))
	s.add("redaction off, memoryd CPU per request (s)", cpuOff/float64(off.calls))
	s.add("CPU per request, on / off (×)", (cpuOn/float64(on.calls))/(cpuOff/float64(off.calls)))
	s.add("redaction on, p99 (s)", percentile(on.lat, 99).Seconds())
	s.add("redaction off, p99 (s)", percentile(off.lat, 99).Seconds())
	s.add("redaction on, requests/s (req/s)", on.rate())
	s.add("redaction off, requests/s (req/s)", off.rate())
	b.logf("%s: p50 %s with redaction, %s without (%.2f×)", rep.row, ms(p50on), ms(p50off), p50on/p50off)
	return s, nil
}

func (b *bench) measureRedactAppend1(ctx context.Context, rep repetition) (sample, error) {
	return b.measureRedactLatency(ctx, rep, b.redactAppend)
}

func (b *bench) measureRedactWrite(ctx context.Context, rep repetition) (sample, error) {
	return b.measureRedactLatency(ctx, rep, b.redactWrite)
}

func (b *bench) measureRedactRead1(ctx context.Context, rep repetition) (sample, error) {
	return b.measureRedactLatency(ctx, rep, b.redactRead)
}

func (b *bench) measureRedactSync(ctx context.Context, rep repetition) (sample, error) {
	var bytesOn, bytesOff int
	s, err := b.measureRedactLatency(ctx, rep, func(ctx context.Context, s *redactServer) error {
		n, err := b.redactSync(ctx, s)
		if s == b.redact.on {
			bytesOn += n
		} else {
			bytesOff += n
		}
		return err
	})
	if err != nil {
		return s, err
	}
	s.add("entry bytes synced with redaction (MB)", float64(bytesOn)/1e6)
	s.add("entry bytes synced without (MB)", float64(bytesOff)/1e6)
	return s, nil
}

// measureRedactImport pairs one import-session of the session file with
// redaction (MEMORYD_REDACT=default) and one without.
func (b *bench) measureRedactImport(ctx context.Context, rep repetition) (sample, error) {
	var on, off time.Duration
	var cpuOn, cpuOff float64
	err := rep.pair(func() (err error) {
		on, cpuOn, err = b.redactImport(ctx, "default")
		return err
	}, func() (err error) {
		off, cpuOff, err = b.redactImport(ctx, "off")
		return err
	})
	if err != nil {
		return sample{}, err
	}
	s := sample{fig: on.Seconds(), ceil: off.Seconds(), ratio: on.Seconds() / off.Seconds()}
	s.add("redaction on, session MB/s", float64(b.redact.importSize)/1e6/on.Seconds())
	s.add("redaction off, session MB/s", float64(b.redact.importSize)/1e6/off.Seconds())
	s.add("redaction on, CPU user+system (s)", cpuOn)
	s.add("redaction off, CPU user+system (s)", cpuOff)
	s.add("CPU, on / off (×)", cpuOn/cpuOff)
	b.logf("redact-import: %s with redaction, %s without (%.2f×)", ms(on.Seconds()), ms(off.Seconds()), on.Seconds()/off.Seconds())
	return s, nil
}

// redactPair is the sentence every redact row's notes share.
func (b *bench) redactPair() string {
	return "Figure: with redaction, memoryd's default (`serve --redact default`, on a database of its own); ceiling: the same with `--redact off` " +
		"(another memoryd, another database); both run with the same flags otherwise, one after the other in each repetition (which first alternates). " +
		"Ratio = with / without: above 1× is what redaction costs. The text holds no secret (generated source, logs and prose), as nearly all traffic: " +
		"every byte is scanned, nothing is replaced."
}

func (b *bench) redactAppend1Notes() string {
	return "One client appending a line to a note (`notes_append_to_file`, as append1) back to back for " + b.cfg.dur.String() +
		" on each memoryd; figure and ceiling are the p50 of the HTTP round trip. " + b.redactPair()
}

func (b *bench) redactWriteNotes() string {
	return fmt.Sprintf("One client rewriting a note of %s bytes whole (`notes_write_file`: a line naming the revision, then generated source) back to back "+
		"for %s on each memoryd; p50 of the round trip. %s", num(float64(len(b.redact.note)), 0), b.cfg.dur, b.redactPair())
}

func (b *bench) redactSyncNotes() string {
	return fmt.Sprintf("One client syncing a generated Pi session (%d entries, %s: prompts, tool calls, tool outputs and answers) %d entries a "+
		"`POST /v1/history/sync`, the branch as a delta, back to back for %s on each memoryd (at the session's end, again as a new session); p50 of "+
		"the round trip. %s", len(b.redact.entries), mb(b.redact.importSize), redactSyncBatch, b.cfg.dur, b.redactPair())
}

func (b *bench) redactImportNotes() string {
	return fmt.Sprintf("`memoryd import-session` of the same %s Pi session file into a new database, timed from exec to exit, with "+
		"`MEMORYD_REDACT=default` (figure) and `MEMORYD_REDACT=off` (ceiling), one each per repetition. Ratio = with / without.",
		mb(b.redact.importSize))
}

func (b *bench) redactRead1Notes() string {
	return "The control: one client reading the note redact-write writes (`notes_read_file`) back to back for " + b.cfg.dur.String() +
		" on each memoryd; reads do not pass through redaction, so the ratio shows the two servers' difference with no redaction in it. " + b.redactPair()
}
