package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/memoryd/memoryd/internal/memory"
)

var searchVerb = verb{
	name:     "search",
	synopsis: "search [--db F] [--agent-kind KIND] [--since DATE] [--limit N] TEXT",
	summary:  "find a literal in the history of every task and agent, for you rather than the model",
	about: `
Finds TEXT, literally and case-sensitively as history_search_contents does, in the history of every
agent of every task of the database --db (Pi, Claude Code and Codex sessions alike), newest activity
first, and prints the matches as JSON: each with its task, agent, agent kind, session key, window,
item and the regions around the match. It reads as the inspector does: it writes nothing, not even
an audit record. --agent-kind keeps the agents of one kind (pi, claude-code, codex); --since DATE
(2026-01-31, or RFC 3339) the tasks active since then. more says there are more than --limit.`,
	args: []arg{{name: "TEXT", about: "the literal to find"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to read, which must exist (env MEMORYD_DB; default the one serve uses)")
		kind := fs.String("agent-kind", "", "only the agents of `KIND`: "+strings.Join(memory.AgentKinds, ", "))
		since := fs.String("since", "", "only the tasks active since `DATE`")
		limit := fs.Int("limit", 50, fmt.Sprintf("at most `N` matches (1 to %d)", memory.SearchAllMaxLimit))
		return func(ctx context.Context, in *invocation) error {
			q := memory.SearchAllQuery{Query: in.args[0], Kind: *kind, Limit: *limit}
			switch {
			case q.Query == "":
				return &usageError{"search needs a TEXT that is not empty"}
			case *limit < 1 || *limit > memory.SearchAllMaxLimit:
				return &usageError{fmt.Sprintf("--limit must be 1 to %d, not %d", memory.SearchAllMaxLimit, *limit)}
			case *kind != "" && !slices.Contains(memory.AgentKinds, *kind):
				return &usageError{fmt.Sprintf("--agent-kind %q: the kinds are %s", *kind, strings.Join(memory.AgentKinds, ", "))}
			}
			if *since != "" {
				var err error
				if q.Since, err = parseSince(*since); err != nil {
					return &usageError{err.Error()}
				}
			}
			path, err := databaseToRead(in.getenv, *db, in.stderr)
			if err != nil {
				return err
			}
			svc, err := openExistingService(ctx, in.getenv, path, in.stderr)
			if err != nil {
				return err
			}
			defer svc.Close()
			res, err := svc.SearchAll(ctx, q)
			if err != nil {
				return err
			}
			return writeJSON(in.stdout, res)
		}
	},
}
