package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

var importSessionVerb = verb{
	name:     "import-session",
	synopsis: "import-session --db F [--format pi|claude-code|codex] SESSION.jsonl",
	summary:  "attach a Pi, Claude Code or Codex session file as a task, its entries and branch synced",
	about: `
Reads a session file and stores it in the database --db (created if missing) as a task: attaches it,
syncs every entry and the branch from its last entry to the root, in one transaction. A refused entry
stores nothing and names its line. Prints the attach and sync result as JSON.

--format pi (the default) reads a Pi session file, whose session key is the file's absolute path.
--format claude-code reads a Claude Code transcript (~/.claude/projects/<folder>/<session id>.jsonl)
as its hooks sync it (docs/claude-code.md), under their session key claude-code/<session id>, so a
session from before memoryd setup claude-code continues in the same task; its sub-agents'
transcripts (<session id>/subagents/agent-<id>.jsonl) become child agents. --format codex reads a
Codex rollout (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl) as its hooks sync it
(docs/codex.md), under the session key codex/<session id>; a sub-agent's rollout becomes a child
agent of its session's task, codex/<session id>/<thread id>, and its session's rollout, found in the
same sessions folder, is imported first when it was not. Importing again stores only what is new.`,
	args: []arg{{name: "SESSION.jsonl", about: "a Pi session file (its first line is the session header), a Claude Code transcript or a Codex rollout"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", getenv("MEMORYD_DB"), "database `F` to create or add to (env MEMORYD_DB)")
		format := fs.String("format", "pi", "the session file's `FORMAT`: pi, claude-code or codex")
		return func(ctx context.Context, in *invocation) error {
			if *db == "" {
				return &usageError{"import-session needs --db F (or MEMORYD_DB): the database to import into"}
			}
			switch *format {
			case "pi":
				return runImportSession(ctx, *db, in.args[0], in)
			case "claude-code":
				return runImportClaudeCode(ctx, *db, in.args[0], in)
			case "codex":
				return runImportCodex(ctx, *db, in.args[0], in)
			}
			return &usageError{fmt.Sprintf("--format %q: the formats are pi, claude-code and codex", *format)}
		}
	},
}

// runImportClaudeCode imports a Claude Code transcript and its
// sub-agents' as a task, all or nothing.
func runImportClaudeCode(ctx context.Context, db, file string, in *invocation) error {
	return runImportHostSession(ctx, db, file, in, func(svc *memory.Service, path string, report func(int64)) (any, error) {
		return forensics.ImportClaudeCodeSession(ctx, svc, path, report)
	})
}

// runImportCodex imports a Codex rollout as a task, or a sub-agent's as a
// child agent of its session's task, all or nothing.
func runImportCodex(ctx context.Context, db, file string, in *invocation) error {
	return runImportHostSession(ctx, db, file, in, func(svc *memory.Service, path string, report func(int64)) (any, error) {
		return forensics.ImportCodexSession(ctx, svc, path, forensics.RolloutFinder(path), report)
	})
}

// runImportHostSession imports the session file of another agent with
// load, all or nothing, and prints what load returns.
func runImportHostSession(ctx context.Context, db, file string, in *invocation,
	load func(svc *memory.Service, path string, report func(int64)) (any, error)) (err error) {
	path, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return err
	}
	svc, closeDB, err := openSessionImport(ctx, in.getenv, db, in.stderr)
	if err != nil {
		return err
	}
	defer func() { closeDB(err != nil) }()
	report, done := progress(in.stderr, "import-session", "entries", -1)
	res, err := load(svc, path, report)
	done()
	if err != nil {
		return err
	}
	reclaim(ctx, svc, in.stderr, "import-session")
	if err := svc.Close(); err != nil {
		return err
	}
	return writeJSON(in.stdout, res)
}

// runImportSession attaches a Pi session file as a task and syncs its
// entries and branch, all or nothing.
func runImportSession(ctx context.Context, db, file string, in *invocation) (err error) {
	stdout, stderr := in.stdout, in.stderr
	path, err := filepath.Abs(file)
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
	svc, closeDB, err := openSessionImport(ctx, in.getenv, db, stderr)
	if err != nil {
		return err
	}
	defer func() { closeDB(err != nil) }()
	report, done := progress(stderr, "import-session", "entries", int64(len(sess.Entries)))
	res, err := forensics.ImportSession(ctx, svc, path, sess, report)
	done()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	reclaim(ctx, svc, stderr, "import-session")
	if err := svc.Close(); err != nil {
		return err
	}
	return writeJSON(stdout, res)
}

// reclaim gives back the space the import's churn left (memory's
// Reclaim: on PostgreSQL, a rewrite of a table that only held texts
// waiting for their chunk). The import is committed by then, so a
// failure is a warning, not the verb's.
func reclaim(ctx context.Context, svc *memory.Service, stderr io.Writer, verb string) {
	if err := svc.Reclaim(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: the import is done, but the space its transaction left was not given back (%v); PostgreSQL's autovacuum reuses it for later rows\n", verb, err)
	}
}
