// Command server is memoryd, a local HTTP JSON service that keeps a coding
// agent's history, notes and checkpoint fence in an event log.
//
// The binary is built as memoryd and calls itself memoryd in every text it
// prints. Its verbs are listed in the table verbs, each in a file
// verb_NAME.go of its own. See the README.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	useScratchFolder(os.Getenv, os.Stderr)
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "memoryd:", err)
		os.Exit(exitCode(err))
	}
}

// usageError is a command line the program cannot run. It exits with 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// exitCode returns the process's exit code for err.
func exitCode(err error) int {
	if _, ok := err.(*usageError); ok {
		return 2
	}
	return 1
}

// verbs lists the verbs in the order help shows them. Each verb's help,
// flags and run function are in a file verb_NAME.go of its own. A new verb
// is one line here and a command line in cli_test.go's verbSamples.
var verbs = []*verb{
	&serveVerb,
	&exportVerb,
	&importVerb,
	&replayVerb,
	&verifyVerb,
	&callVerb,
	&importSessionVerb,
	&importSessionsVerb,
	&tasksVerb,
	&searchVerb,
	&handoffVerb,
	&backupVerb,
	&restoreVerb,
	&forgetVerb,
	&retainVerb,
	&inspectVerb,
	&stopVerb,
	&hookVerb,
	&mcpVerb,
	&setupVerb,
	&versionVerb,
}

// lookupVerb returns the verb called name, or nil.
func lookupVerb(name string) *verb {
	for _, v := range verbs {
		if v.name == name {
			return v
		}
	}
	return nil
}

// run runs the whole program, reading configuration through getenv and
// writing only to stdout and stderr. Without a verb it serves.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	name := "serve"
	if len(args) > 0 {
		switch a := args[0]; {
		case a == "help" || a == "-h" || a == "-help" || a == "--help":
			return runHelp(args[1:], getenv, stdout)
		case a == "--version" || a == "-version":
			name, args = "version", args[1:]
		case a != "" && a[0] != '-':
			name, args = a, args[1:]
		}
	}
	v := lookupVerb(name)
	if v == nil {
		return &usageError{fmt.Sprintf("unknown verb %q\nRun \"memoryd help\" for the list of verbs.", name)}
	}
	return runVerb(ctx, v, &invocation{args: args, getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr})
}

// runHelp prints the verb list, or one verb's help for "memoryd help VERB".
func runHelp(args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || (len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")) {
		_, err := io.WriteString(stdout, helpText())
		return err
	}
	v := lookupVerb(args[0])
	switch {
	case v == nil:
		return &usageError{fmt.Sprintf("unknown verb %q\nRun \"memoryd help\" for the list of verbs.", args[0])}
	case len(args) > 1:
		return &usageError{fmt.Sprintf("help takes one verb; got %s\nRun \"memoryd help\" for the list of verbs.", quoteAll(args))}
	}
	fs, _, _ := parseVerb(v, nil, getenv)
	return printVerbHelp(stdout, v, fs)
}

// helpText lists the verbs, a line each.
func helpText() string {
	var b strings.Builder
	b.WriteString(`memoryd keeps a coding agent's history, notes and checkpoint fence in an event log, in SQLite
(a file) or PostgreSQL (--db postgres://…, shared by several servers: docs/postgres.md), and
serves them over local HTTP (docs/API.md).

usage: memoryd [VERB] [flags and arguments, in any order]

Verbs:
`)
	width := len("help")
	for _, v := range verbs {
		width = max(width, len(v.name))
	}
	for _, v := range verbs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, v.name, v.summary)
	}
	fmt.Fprintf(&b, "  %-*s  %s\n", width, "help", "this list; \"memoryd help VERB\" is the same as \"memoryd VERB -h\"")
	b.WriteString(`
Without a verb memoryd serves (memoryd --db F is memoryd serve --db F).
"memoryd VERB -h" shows a verb's synopsis, what it does, its arguments and its flags.
Exit codes: 0 success, 1 failure of what was asked, 2 bad usage.
`)
	return b.String()
}
