// Command server is memoryd: a local HTTP JSON service that keeps a coding
// agent's history, notes and checkpoint fence in an SQLite event log. Verbs:
// serve (default), export, import, replay, verify, call, import-session.
// See the README.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "memoryd:", err)
		os.Exit(exitCode(err))
	}
}

// usageError is a command line the program cannot run (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func exitCode(err error) int {
	if _, ok := err.(*usageError); ok {
		return 2
	}
	return 1
}

// usage is the program's usage text: each verb's line (from its file), then
// where to find a verb's flags.
const usage = "usage: " + serveUsage +
	"\n       " + exportUsage +
	"\n       " + importUsage +
	"\n       " + replayUsage +
	"\n       " + verifyUsage +
	"\n       " + callUsage +
	"\n       " + importSessionUsage +
	"\n       " + tasksUsage +
	"\nRun \"server VERB -h\" for the flags of a verb."

// run is the whole program: it parses args, reads configuration through
// getenv and writes only to stdout and stderr. Each verb is in a file of its
// own (verb_NAME.go) with its flags, its usage line and its run function.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	verb := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		verb, args = args[0], args[1:]
	}
	switch verb {
	case "serve":
		return runServe(ctx, args, getenv, stdout, stderr)
	case "export":
		return runExport(ctx, args, getenv, stdout, stderr)
	case "import":
		return runImport(ctx, args, getenv, stdin, stdout, stderr)
	case "replay":
		return runReplay(ctx, args, stdin, stdout, stderr)
	case "verify":
		return runVerify(ctx, args, getenv, stdout, stderr)
	case "call":
		return runCall(ctx, args, stdin, stdout, stderr)
	case "import-session":
		return runImportSession(ctx, args, getenv, stdout, stderr)
	case "tasks":
		return runTasks(ctx, args, getenv, stdout, stderr)
	case "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return &usageError{fmt.Sprintf("unknown verb %q\n%s", verb, usage)}
}
