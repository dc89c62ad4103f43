package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/tools"
)

var callVerb = verb{
	name:     "call",
	synopsis: "call [--db F | --log FILE] [--until P] --task T [--agent A] [--call-id ID] TOOL ['ARGS-JSON']",
	summary:  "run one tool offline against the state at a position, printing its result JSON",
	about: `
Runs one of the tools (GET /v1/tools) as agent A of task T against the state of a log at position P, and prints
the same JSON as POST /v1/tools/TOOL would have answered (or its error envelope, exit 1). The log
is the database --db (only read) or an exported log --log; it is copied into a scratch database
that is deleted afterwards. --until P is the state after the event at position P, --until 0 the
empty log (before any event), no --until the end of the log.
A write (notes_write_file, notes_append_to_file, new_context) runs too, against that scratch copy:
its answer shows what it would have done at P, and nothing is stored; a line on stderr says so.`,
	args: []arg{
		{name: "TOOL", about: "a tool name, e.g. notes_read_file, history_search_contents"},
		{name: "'ARGS-JSON'", about: `the tool's arguments as one JSON object, e.g. '{"path":"plan.md"}'; default {}`, optional: true},
	},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		o := &callOptions{}
		fs.StringVar(&o.db, "db", "", "database `F` to read, not modified (env MEMORYD_DB; default, without --log, the one serve uses)")
		fs.StringVar(&o.log, "log", "", "exported log `FILE` to read instead of a database (- for stdin)")
		fs.Var(&o.until, "until", "the state after the event at position `P`; 0 the empty log (default: the end)")
		fs.StringVar(&o.task, "task", "", "task id `T` of the caller (required): memoryd tasks --db F lists them")
		fs.StringVar(&o.agent, "agent", "/root", "agent address `A` of the caller")
		fs.StringVar(&o.callID, "call-id", "", "the call's id `ID`, as the context's call_id of a request: history results leave out the entries of this in-flight call")
		return o.run
	},
}

// callOptions are the call verb's flags.
type callOptions struct {
	db, log, task, agent, callID string
	until                        untilFlag
}

// run runs one tool offline against the state at a position and prints
// the same JSON as the HTTP answer.
func (o *callOptions) run(ctx context.Context, in *invocation) error {
	stdout, stderr := in.stdout, in.stderr
	switch {
	case o.db != "" && o.log != "":
		return &usageError{"call takes --db F or --log FILE, not both"}
	case o.task == "":
		return &usageError{"call needs --task T: the id of the caller's task (memoryd tasks lists them)"}
	}
	if o.log == "" {
		var err error
		if o.db, err = databaseToRead(in.getenv, o.db, stderr); err != nil {
			return err
		}
	}
	tool, rawArgs := in.args[0], "{}"
	if len(in.args) == 2 {
		rawArgs = in.args[1]
	}
	if !json.Valid([]byte(rawArgs)) {
		return &usageError{fmt.Sprintf("ARGS-JSON is not valid JSON: %q", rawArgs)}
	}
	var scratch *memory.Service
	if o.db != "" {
		src, err := openExistingService(ctx, in.getenv, o.db, stderr)
		if err != nil {
			return err
		}
		// The copy is encrypted at rest as the database is.
		var cleanup func()
		if scratch, cleanup, err = forensics.ScratchFor(ctx, src); err != nil {
			src.Close()
			return err
		}
		defer cleanup()
		// A database's log is read as verify reads it. An event an import
		// would refuse is applied as the database applied it, and named.
		if !o.until.empty() {
			_, err = forensics.CopyLog(ctx, scratch, src, o.until.bound(), func(re *events.RuleError) {
				fmt.Fprintf(stderr, "memoryd: warning: %v\n", re)
			})
		}
		src.Close()
		if err != nil {
			return err
		}
	} else {
		var cleanup func()
		var err error
		if scratch, cleanup, err = forensics.Scratch(ctx); err != nil {
			return err
		}
		defer cleanup()
		lr, closeLog, err := openLog(o.log, in.stdin)
		if err != nil {
			return err
		}
		_, err = forensics.Import(ctx, scratch, o.until.next(lr.Next))
		closeLog()
		if err != nil {
			return lr.AtLine(err)
		}
	}
	if tools.Writes(tool) {
		// The answer says "created" or "appended", so say where it went.
		defer fmt.Fprintf(stderr, "memoryd: not stored: call ran %s against a scratch copy of the log, which is deleted; %s is unchanged\n", tool, o.source())
	}
	res, err := scratch.CallTool(ctx, tool, memory.CallContext{TaskID: o.task, Agent: o.agent, CallID: o.callID}, json.RawMessage(rawArgs), "")
	if err != nil {
		status, body := api.ErrorEnvelope(err)
		if werr := writeJSON(stdout, body); werr != nil {
			return werr
		}
		return fmt.Errorf("%s failed with status %d", tool, status)
	}
	return writeJSON(stdout, res)
}

// source names the log call read, for its messages.
func (o *callOptions) source() string {
	if o.db != "" {
		return o.db
	}
	if o.log == "-" {
		return "the log on stdin"
	}
	return o.log
}
