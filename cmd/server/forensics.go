package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// openLog opens an exported log file ("-" for stdin).
func openLog(name string, stdin io.Reader) (*forensics.LogReader, func(), error) {
	in, closeIn := stdin, func() {}
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		in, closeIn = f, func() { f.Close() }
	}
	lr := forensics.NewLogReader(in)
	stop := lr.ReadAhead()
	return lr, func() {
		stop()
		closeIn()
	}, nil
}

// spoolStdin copies stdin into a temporary file and returns its name.
func spoolStdin(stdin io.Reader) (string, error) {
	f, err := os.CreateTemp("", "memoryd-replay-*.jsonl")
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(f, stdin); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// replayReport is what the replay verb prints.
type replayReport struct {
	forensics.Summary
	CheckReads *forensics.ReadCheck `json:"check_reads,omitempty"`
}

// runReplay is the replay verb: rebuild every projection from a log file
// into a scratch database (or --db OUT, removed when the replay created it
// and fails) and print a summary with digests.
func runReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	fs := newFlags("replay", stderr)
	until := fs.Int64("until", 0, "replay only events up to this position")
	out := fs.String("db", "", "write the rebuilt database here (must hold no events); default a temporary one")
	checkReads := fs.Bool("check-reads", false, "re-execute every audited read at its position and report results that differ, or reads it cannot re-execute (exit 1)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the replay to this file, for performance work")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if fs.NArg() != 1 {
		return &usageError{"usage: server replay FILE [--until P] [--db OUT] [--check-reads]"}
	}
	name := fs.Arg(0)
	var audit map[int64][]forensics.AuditedCall
	var skipped int
	if *checkReads {
		if name == "-" { // the log is read twice: keep stdin in a file
			tmp, err := spoolStdin(stdin)
			if err != nil {
				return err
			}
			defer os.Remove(tmp)
			name = tmp
		}
		lr, closeLog, err := openLog(name, stdin)
		if err != nil {
			return err
		}
		audit, skipped, err = forensics.CollectAudit(forensics.Until(lr.Next, *until))
		closeLog()
		if err != nil {
			return err
		}
	}
	lr, closeLog, err := openLog(name, stdin)
	if err != nil {
		return err
	}
	defer closeLog()
	if *out != "" {
		fresh := newDatabase(*out)
		defer func() {
			if err != nil {
				fresh.remove() // after the store's Close, deferred below
			}
		}()
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "memoryd: "+format+"\n", args...) }
	store, closeStore, err := forensics.Target(ctx, *out, logf)
	if err != nil {
		return err
	}
	defer closeStore()
	report, done := progress(stderr, "replay", -1)
	check, err := forensics.Replay(ctx, store, forensics.Counted(forensics.Until(lr.Next, *until), report), forensics.ReplayOptions{Audit: audit})
	done()
	if err != nil {
		if lr.Line() == 0 { // refused before any line was read: a non-empty database
			return err
		}
		return lr.AtLine(err)
	}
	sum, err := forensics.Summarize(ctx, store)
	if err != nil {
		return err
	}
	rep := replayReport{Summary: sum}
	if *checkReads {
		check.Skipped = skipped
		rep.CheckReads = &check
	}
	if err := writeJSON(stdout, rep); err != nil {
		return err
	}
	if *checkReads && len(check.Mismatches) > 0 {
		return fmt.Errorf("%d audited read(s) returned something else on replay", len(check.Mismatches))
	}
	if *checkReads && len(check.Unverifiable) > 0 {
		return fmt.Errorf("%d audited read(s) could not be re-executed: the audit kept their arguments as size and digest", len(check.Unverifiable))
	}
	return nil
}

// runVerify is the verify verb: rebuild the projections from the log
// beside the live ones and report every difference (exit 1).
func runVerify(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	db := fs.String("db", getenv("MEMORYD_DB"), "database file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *db == "" || fs.NArg() > 0 {
		return &usageError{"usage: server verify --db F"}
	}
	live, err := openExistingService(ctx, *db, stderr)
	if err != nil {
		return err
	}
	defer live.Close()
	scratch, cleanup, err := forensics.Scratch(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	diffs, violations, err := forensics.Verify(ctx, live.Store(), scratch, 5)
	if err != nil {
		return err
	}
	last, err := live.LastPosition(ctx)
	if err != nil {
		return err
	}
	clean := len(diffs) == 0 && len(violations) == 0
	if err := writeJSON(stdout, map[string]any{"events": last, "clean": clean, "differences": diffs, "violations": violations}); err != nil {
		return err
	}
	var problems []string
	if len(diffs) > 0 {
		problems = append(problems, fmt.Sprintf("%d projection table(s) differ from a rebuild of the log", len(diffs)))
	}
	if len(violations) > 0 {
		problems = append(problems, fmt.Sprintf("%d event(s) break a rule that an import enforces (the first at position %d)", len(violations), violations[0].Position))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// runCall is the call verb: one tool, offline, against the state at a
// position, printing the same JSON as the HTTP result (or error envelope).
func runCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("call", stderr)
	db := fs.String("db", "", "database file to read (not modified)")
	logFile := fs.String("log", "", "exported log file to read instead of a database")
	until := fs.Int64("until", 0, "the state at this position (default: the end)")
	task := fs.String("task", "", "task id of the caller")
	agent := fs.String("agent", "/root", "agent address of the caller")
	callID := fs.String("call-id", "", "the call's id (excluded from history results, as for the in-flight call)")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if (*db == "") == (*logFile == "") || *task == "" || fs.NArg() < 1 || fs.NArg() > 2 {
		return &usageError{"usage: server call (--db F | --log FILE) [--until P] --task T --agent A TOOL 'ARGS-JSON'"}
	}
	tool, rawArgs := fs.Arg(0), "{}"
	if fs.NArg() == 2 {
		rawArgs = fs.Arg(1)
	}
	if !json.Valid([]byte(rawArgs)) {
		return &usageError{"ARGS-JSON is not valid JSON"}
	}
	scratch, cleanup, err := forensics.Scratch(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	if *db != "" {
		src, err := openExistingService(ctx, *db, stderr)
		if err != nil {
			return err
		}
		// A database's log is read as verify reads it: an event an import
		// would refuse is applied as the database applied it, and named.
		_, err = scratch.ImportReporting(ctx, forensics.StoreEvents(ctx, src.Store(), *until), func(re *events.RuleError) {
			fmt.Fprintf(stderr, "memoryd: warning: %v\n", re)
		})
		src.Close()
		if err != nil {
			return err
		}
	} else {
		lr, closeLog, err := openLog(*logFile, stdin)
		if err != nil {
			return err
		}
		_, err = scratch.Import(ctx, forensics.Until(lr.Next, *until))
		closeLog()
		if err != nil {
			return lr.AtLine(err)
		}
	}
	svc := memory.New(scratch)
	res, err := svc.CallTool(ctx, tool, memory.CallContext{TaskID: *task, Agent: *agent, CallID: *callID}, json.RawMessage(rawArgs), "")
	if err != nil {
		status, body := api.ErrorEnvelope(err)
		if werr := writeJSON(stdout, body); werr != nil {
			return werr
		}
		return fmt.Errorf("%s failed with status %d", tool, status)
	}
	return writeJSON(stdout, res)
}

// runImportSession is the import-session verb: a Pi session file attached
// as a task, its entries and branch synced, all or nothing: a database it
// created is removed when it fails.
func runImportSession(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("import-session", stderr)
	db := fs.String("db", getenv("MEMORYD_DB"), "database file (created if missing)")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if *db == "" || fs.NArg() != 1 {
		return &usageError{"usage: server import-session --db F SESSION.jsonl"}
	}
	path, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	sess, err := forensics.ReadSession(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fresh := newDatabase(*db)
	defer func() {
		if err != nil {
			fresh.remove() // after the store's Close, deferred below
		}
	}()
	svc, err := openService(ctx, *db, "", stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	report, done := progress(stderr, "import-session", int64(len(sess.Entries)))
	res, err := forensics.ImportSession(ctx, svc, path, sess, report)
	done()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := svc.Close(); err != nil {
		return err
	}
	return writeJSON(stdout, res)
}

// interleaved lets positional arguments come before or between flags
// ("replay FILE --until 5"): it moves them behind the flags of fs.
func interleaved(fs *flag.FlagSet, args []string) []string {
	var pos, flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // Parse reports it
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(append(flags, "--"), pos...)
}
