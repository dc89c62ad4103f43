package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/memoryd/memoryd/internal/forensics"
)

// replayReport is what the replay verb prints.
type replayReport struct {
	forensics.Summary
	CheckReads *forensics.ReadCheck `json:"check_reads,omitempty"`
}

// replayUsage is the replay verb's line of the usage text.
const replayUsage = "server replay FILE [--until P] [--db OUT] [--check-reads]"

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
		return &usageError{"usage: " + replayUsage}
	}
	name := fs.Arg(0)
	var audit map[int64][]forensics.AuditedCall
	var skipped []forensics.SkippedCalls
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
	dst, closeDst, err := forensics.Target(ctx, *out, logf)
	if err != nil {
		return err
	}
	defer closeDst()
	report, done := progress(stderr, "replay", "events", -1)
	check, err := forensics.Replay(ctx, dst, forensics.Counted(forensics.Until(lr.Next, *until), report), forensics.ReplayOptions{Audit: audit})
	done()
	if err != nil {
		if lr.Line() == 0 { // refused before any line was read: a non-empty database
			return err
		}
		return lr.AtLine(err)
	}
	sum, err := forensics.Summarize(ctx, dst)
	if err != nil {
		return err
	}
	rep := replayReport{Summary: sum}
	if *checkReads {
		check.SetSkipped(skipped)
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
