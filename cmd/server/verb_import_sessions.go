package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

var importSessionsVerb = verb{
	name:     "import-sessions",
	synopsis: "import-sessions --from pi|claude-code [--db F] [--since DATE] [FOLDER]",
	summary:  "import every session an agent kept in its folder, each as its own task; again, only what is new",
	about: `
Finds the session files an agent keeps and imports each one not yet imported as its own task, as
import-session does (a file already imported adds only its new entries). Each file is imported
whole or not at all; one that fails is reported and the others go on. Prints a JSON summary: the
files imported, grown and unchanged, and those skipped or failed with the reason.

--from pi reads the Pi session files under FOLDER, by default $PI_CODING_AGENT_DIR/sessions or
~/.pi/agent/sessions. --from claude-code reads the Claude Code transcripts
<FOLDER>/<project folder>/<session id>.jsonl, by default $CLAUDE_CONFIG_DIR/projects or
~/.claude/projects, with their sub-agents' transcripts; a line that is not JSON is left out, as the
hooks leave it out, and named in the summary.

Nothing outside FOLDER is read: symbolic links are skipped. --since DATE (2026-01-31, or RFC 3339)
skips the files last written before DATE. The database is serve's by default.`,
	args: []arg{{name: "FOLDER", about: "the folder to search instead of the agent's own", optional: true}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to create or add to (default: serve's, env MEMORYD_DB)")
		from := fs.String("from", "", "the agent whose sessions these are: `AGENT` pi or claude-code")
		since := fs.String("since", "", "skip the files last written before `DATE`")
		return func(ctx context.Context, in *invocation) error {
			kind, ok := sessionKinds[*from]
			if !ok {
				return &usageError{fmt.Sprintf("--from %q: give --from pi or --from claude-code", *from)}
			}
			var after time.Time
			if *since != "" {
				var err error
				if after, err = parseSince(*since); err != nil {
					return &usageError{err.Error()}
				}
			}
			folder := ""
			if len(in.args) > 0 {
				folder = in.args[0]
			} else {
				var err error
				if folder, err = kind.folder(in.getenv); err != nil {
					return err
				}
			}
			path := *db
			if path == "" {
				var err error
				if path, err = defaultDBPath(in.getenv); err != nil {
					return err
				}
			}
			return runImportSessions(ctx, path, kind, folder, after, in)
		}
	},
}

// parseSince reads --since: a date, or a time in RFC 3339.
func parseSince(s string) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: give a date (2026-01-31) or a time in RFC 3339 (2026-01-31T12:00:00Z)", s)
}

// sessionKind is one agent's session files: where they are and how one is
// imported.
type sessionKind struct {
	name string
	// folder returns the agent's own folder of session files.
	folder func(getenv func(string) string) (string, error)
	// pick says whether the file at rel (relative to the folder) is a
	// session to import, or why not; a file that belongs to another one
	// (a sub-agent's transcript) is neither, with why "".
	pick func(rel string) (ok bool, why string)
	// load imports one session file.
	load func(ctx context.Context, svc *memory.Service, path string) (sessionImport, error)
}

// sessionImport is what importing one session file did.
type sessionImport struct {
	TaskID    string               `json:"task_id"`
	Entries   int                  `json:"entries"`
	Stored    int                  `json:"stored"`
	Resumed   bool                 `json:"-"`
	SkippedAt []forensics.FileLine `json:"skipped_lines,omitempty"`
}

var sessionKinds = map[string]sessionKind{
	"pi": {
		name: "pi",
		folder: func(getenv func(string) string) (string, error) {
			if d := getenv("PI_CODING_AGENT_DIR"); d != "" {
				return filepath.Join(d, "sessions"), nil
			}
			return homeFolder(getenv, ".pi", "agent", "sessions")
		},
		pick: func(rel string) (bool, string) {
			if filepath.Ext(rel) != ".jsonl" {
				return false, "not a .jsonl file"
			}
			return true, ""
		},
		load: func(ctx context.Context, svc *memory.Service, path string) (sessionImport, error) {
			f, err := os.Open(path)
			if err != nil {
				return sessionImport{}, err
			}
			sess, err := forensics.ReadSession(f)
			f.Close()
			if err != nil {
				return sessionImport{}, err
			}
			res, err := forensics.ImportSession(ctx, svc, path, sess, nil)
			return sessionImport{TaskID: res.TaskID, Entries: res.Entries, Stored: res.Stored, Resumed: res.Resumed}, err
		},
	},
	"claude-code": {
		name: "claude-code",
		folder: func(getenv func(string) string) (string, error) {
			if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
				return filepath.Join(d, "projects"), nil
			}
			return homeFolder(getenv, ".claude", "projects")
		},
		pick: func(rel string) (bool, string) {
			parts := strings.Split(filepath.ToSlash(rel), "/")
			switch {
			case len(parts) == 4 && parts[2] == "subagents" && strings.HasPrefix(parts[3], "agent-"):
				return false, "" // imported with its session
			case filepath.Ext(rel) != ".jsonl":
				return false, "not a .jsonl file"
			case len(parts) != 2:
				return false, "not a transcript: Claude Code keeps them as <project folder>/<session id>.jsonl"
			}
			return true, ""
		},
		load: func(ctx context.Context, svc *memory.Service, path string) (sessionImport, error) {
			res, err := forensics.ImportClaudeCodeSession(ctx, svc, path, nil)
			out := sessionImport{TaskID: res.TaskID, Entries: res.Entries, Stored: res.Stored, Resumed: res.Resumed, SkippedAt: res.SkippedAt}
			for _, s := range res.SubAgents {
				out.Entries += s.Entries
				out.Stored += s.Stored
			}
			return out, err
		},
	},
}

// homeFolder returns a folder under the user's home.
func homeFolder(getenv func(string) string, elem ...string) (string, error) {
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("no home folder to find the sessions in (%v): name the folder", err)
		}
	}
	return filepath.Join(append([]string{home}, elem...)...), nil
}

// importedFile is a file imported, or grown since it was.
type importedFile struct {
	File string `json:"file"`
	sessionImport
}

// fileReason is a file skipped or failed, and why.
type fileReason struct {
	File string `json:"file"`
	Why  string `json:"why"`
}

// importSessionsSummary is what import-sessions prints.
type importSessionsSummary struct {
	From      string         `json:"from"`
	Folder    string         `json:"folder"`
	Files     int            `json:"files"`    // the session files found
	Imported  []importedFile `json:"imported"` // new tasks
	Grown     []importedFile `json:"grown"`    // imported before, with new entries
	Unchanged int            `json:"unchanged"`
	Skipped   []fileReason   `json:"skipped"`
	Failed    []fileReason   `json:"failed"`
}

// runImportSessions imports the session files of kind under folder, each
// in a transaction of its own.
func runImportSessions(ctx context.Context, db string, kind sessionKind, folder string, since time.Time, in *invocation) (err error) {
	root, err := filepath.Abs(folder)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: not a folder of %s sessions (give the folder as the argument)", root, kind.name)
	}
	sum := importSessionsSummary{From: kind.name, Folder: root, Imported: []importedFile{}, Grown: []importedFile{},
		Skipped: []fileReason{}, Failed: []fileReason{}}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			sum.Skipped = append(sum.Skipped, fileReason{File: path, Why: err.Error()})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		ok, why := kind.pick(rel)
		switch {
		case !ok && why == "":
		case !ok:
			sum.Skipped = append(sum.Skipped, fileReason{File: path, Why: why})
		case d.Type()&fs.ModeSymlink != 0:
			sum.Skipped = append(sum.Skipped, fileReason{File: path, Why: "a symbolic link (nothing outside the folder is read)"})
		case !d.Type().IsRegular():
			sum.Skipped = append(sum.Skipped, fileReason{File: path, Why: "not a regular file"})
		default:
			if !since.IsZero() {
				fi, err := d.Info()
				if err != nil {
					sum.Skipped = append(sum.Skipped, fileReason{File: path, Why: err.Error()})
					return nil
				}
				if fi.ModTime().Before(since) {
					sum.Skipped = append(sum.Skipped, fileReason{File: path,
						Why: fmt.Sprintf("last written %s, before --since", fi.ModTime().Format(time.RFC3339))})
					return nil
				}
			}
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	sum.Files = len(files)

	svc, closeDB, err := openAllOrNothing(ctx, db, in.stderr)
	if err != nil {
		return err
	}
	defer func() { closeDB(err != nil && len(sum.Imported)+len(sum.Grown) == 0) }()
	report, done := progress(in.stderr, "import-sessions", "files", int64(len(files)))
	for i, path := range files {
		if err := ctx.Err(); err != nil {
			done()
			return err
		}
		res, err := kind.load(ctx, svc, path)
		switch {
		case errors.Is(err, forensics.ErrNotASession):
			sum.Files--
			sum.Skipped = append(sum.Skipped, fileReason{File: path, Why: strings.TrimPrefix(err.Error(), path+": ")})
		case err != nil:
			sum.Failed = append(sum.Failed, fileReason{File: path, Why: strings.TrimPrefix(err.Error(), path+": ")})
		case !res.Resumed:
			sum.Imported = append(sum.Imported, importedFile{File: path, sessionImport: res})
		case res.Stored > 0:
			sum.Grown = append(sum.Grown, importedFile{File: path, sessionImport: res})
		default:
			sum.Unchanged++
		}
		if report != nil {
			report(int64(i + 1))
		}
	}
	done()
	if err := svc.Close(); err != nil {
		return err
	}
	fmt.Fprintf(in.stderr, "import-sessions: %d %s session files in %s: %d imported, %d grown, %d unchanged, %d failed; %d other files skipped\n",
		sum.Files, kind.name, root, len(sum.Imported), len(sum.Grown), sum.Unchanged, len(sum.Failed), len(sum.Skipped))
	if err := writeJSON(in.stdout, sum); err != nil {
		return err
	}
	if len(sum.Failed) > 0 {
		return errors.New(plural(len(sum.Failed), "session file") + " failed to import: see \"failed\" in the summary")
	}
	return nil
}
