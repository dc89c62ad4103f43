package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

// replayReport is what the replay verb prints.
type replayReport struct {
	forensics.Summary
	CheckReads *forensics.ReadCheck `json:"check_reads,omitempty"`
}

var replayVerb = verb{
	name:     "replay",
	synopsis: "replay FILE [--until P] [--db OUT] [--check-reads]",
	summary:  "rebuild every projection from a log and print a summary with digests",
	about: `
Rebuilds every projection from an exported log into a scratch database (or --db OUT) and prints a
JSON summary: counts of events, tasks, agents, windows and notes, and a digest of each projection.
Every event is checked as strictly as by import. --until P replays the events up to position P;
--until 0 the empty log; without --until, the whole log. --check-reads re-executes every audited
read at its position and exits 1 on a result that differs or a read it cannot re-execute.`,
	args: []arg{{name: "FILE", about: "an exported log (JSON lines); - reads it from stdin"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		o := &replayOptions{}
		fs.Var(&o.until, "until", "replay only events up to position `P`; 0 the empty log (default: the end)")
		fs.StringVar(&o.out, "db", "", "write the rebuilt database to `OUT` (created if missing; must hold no events); default a temporary one")
		fs.BoolVar(&o.checkReads, "check-reads", false, "re-execute every audited read at its position and report results that differ, or reads it cannot re-execute (exit 1)")
		fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) of the replay to `FILE`, for performance work")
		return o.run
	},
}

// replayOptions are the replay verb's flags.
type replayOptions struct {
	until           untilFlag
	out, cpuProfile string
	checkReads      bool
}

// run rebuilds every projection from a log file into a scratch database
// or --db OUT, and prints a summary with digests.
func (o *replayOptions) run(ctx context.Context, in *invocation) (err error) {
	stdin, stdout, stderr := in.stdin, in.stdout, in.stderr
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	name := in.args[0]
	var audit map[int64][]forensics.AuditedCall
	var skipped []forensics.SkippedCalls
	if o.checkReads {
		if name == "-" { // the log is read twice, so keep stdin in a file
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
		audit, skipped, err = forensics.CollectAudit(o.until.next(lr.Next))
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
	if o.out != "" {
		fresh := newDatabase(o.out)
		defer func() {
			if err != nil {
				fresh.remove() // after the store's Close, deferred below
			}
		}()
	}
	opts := memory.OpenOptions{Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "memoryd: "+format+"\n", args...) }}
	if o.out != "" { // a database of the user's: encrypted at rest as MEMORYD_ENCRYPT asks, or as it is
		if opts.Encrypt, err = encryptAsked(in.getenv); err != nil {
			return err
		}
		var made string
		if opts.Sealer, made, err = atRestKey(in.getenv, o.out, opts.Encrypt); err != nil {
			return err
		}
		defer func() { err = atRestError(err, in.getenv, o.out, made) }()
	}
	dst, closeDst, err := forensics.Target(ctx, o.out, opts)
	if err != nil {
		return err
	}
	defer closeDst()
	report, done := progress(stderr, "replay", "events", -1)
	check, err := forensics.Replay(ctx, dst, forensics.Counted(o.until.next(lr.Next), report), forensics.ReplayOptions{Audit: audit})
	done()
	if err != nil {
		if lr.Line() == 0 { // refused before any line was read, so a non-empty database
			return err
		}
		return lr.AtLine(err)
	}
	sum, err := forensics.Summarize(ctx, dst)
	if err != nil {
		return err
	}
	rep := replayReport{Summary: sum}
	if o.checkReads {
		check.SetSkipped(skipped)
		rep.CheckReads = &check
	}
	if err := writeJSON(stdout, rep); err != nil {
		return err
	}
	if o.checkReads && len(check.Mismatches) > 0 {
		return fmt.Errorf("%d audited read(s) returned something else on replay", len(check.Mismatches))
	}
	if o.checkReads && len(check.Unverifiable) > 0 {
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
