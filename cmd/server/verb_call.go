package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

// callUsage is the call verb's line of the usage text.
const callUsage = `server call (--db F | --log FILE) [--until P] --task T --agent A TOOL 'ARGS-JSON'`

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
		return &usageError{"usage: " + callUsage}
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
		_, err = forensics.CopyLog(ctx, scratch, src, *until, func(re *events.RuleError) {
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
		_, err = forensics.Import(ctx, scratch, forensics.Until(lr.Next, *until))
		closeLog()
		if err != nil {
			return lr.AtLine(err)
		}
	}
	res, err := scratch.CallTool(ctx, tool, memory.CallContext{TaskID: *task, Agent: *agent, CallID: *callID}, json.RawMessage(rawArgs), "")
	if err != nil {
		status, body := api.ErrorEnvelope(err)
		if werr := writeJSON(stdout, body); werr != nil {
			return werr
		}
		return fmt.Errorf("%s failed with status %d", tool, status)
	}
	return writeJSON(stdout, res)
}
