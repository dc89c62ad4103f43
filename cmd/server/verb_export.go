package main

import (
	"bufio"
	"context"
	"flag"

	"github.com/memoryd/memoryd/internal/forensics"
)

var exportVerb = verb{
	name:     "export",
	synopsis: "export [--db F] [--task T] [--until P]",
	summary:  "write the log (or one task's events) as JSON lines on stdout",
	about: `
Writes the events of the database --db, in position order, as JSON lines on stdout (the envelope
of docs/API.md §7), for import, replay and call --log. --task T keeps that task's events only (a
log with gaps, for reading: import and replay need a whole log). --until P stops after position P;
--until 0 is the empty log (nothing is written); without --until, the whole log.`,
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to read, which must exist (env MEMORYD_DB; default the one serve uses)")
		task := fs.String("task", "", "only the events of task `T`")
		until := &untilFlag{}
		fs.Var(until, "until", "only events up to position `P`; 0 the empty log (default: the end)")
		return func(ctx context.Context, in *invocation) error {
			path, err := databaseToRead(in.getenv, *db, in.stderr)
			if err != nil {
				return err
			}
			svc, err := openExistingService(ctx, in.getenv, path, in.stderr)
			if err != nil {
				return err
			}
			defer svc.Close()
			if until.empty() {
				return nil
			}
			w := bufio.NewWriterSize(in.stdout, 1<<16)
			report, done := progress(in.stderr, "export", "events", -1)
			err = forensics.Export(ctx, svc, *task, until.bound(), w, report)
			done()
			if err != nil {
				return err
			}
			return w.Flush()
		}
	},
}
