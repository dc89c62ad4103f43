package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/memory"
)

var importSessionsVerb = verb{
	name:     "import-sessions",
	synopsis: "import-sessions --from pi|claude-code|codex[,...]|all [--db F] [--since DATE] [FOLDER]",
	summary:  "import every session an agent kept in its folder, each as its own task; again, only what is new",
	about: `
Finds the session files an agent keeps and imports each one not yet imported as its own task, as
import-session does (a file already imported adds only its new entries). Each file is imported
whole or not at all; one that fails is reported and the others go on. Prints a JSON summary: the
files imported, grown and unchanged, each with its kind, and those skipped or failed with why.

--from pi reads the Pi session files under FOLDER, by default $PI_CODING_AGENT_DIR/sessions or
~/.pi/agent/sessions. --from claude-code reads the Claude Code transcripts
<FOLDER>/<project folder>/<session id>.jsonl, by default $CLAUDE_CONFIG_DIR/projects or
~/.claude/projects, with their sub-agents' transcripts; a line that is not JSON is left out, as the
hooks leave it out, and named in the summary. --from codex reads the Codex rollouts
rollout-<time>-<thread id>.jsonl under FOLDER, by default $CODEX_HOME/sessions or ~/.codex/sessions
(archived sessions are read when their folder, archived_sessions, is given), under the session key
its hooks use; a sub-agent's rollout becomes a child agent of its session's task, whose rollout is
imported first when it was not.

--from takes a comma list of kinds (pi,claude-code,codex), or all. Without FOLDER each kind reads
its own folder, and a missing one is skipped. With FOLDER each .jsonl file is recognised by its
first line that is a JSON object: a Pi session header ({"type":"session",...}) is Pi's, a Codex
session_meta record Codex's, and a line with sessionId, uuid or leafUuid a Claude Code transcript
(whose sub-agents' transcripts, <session id>/subagents/agent-<id>.jsonl, are imported with it).

Nothing outside FOLDER is read: symbolic links are skipped. --since DATE (2026-01-31, or RFC 3339)
skips the files last written before DATE. The database is serve's by default.`,
	args: []arg{{name: "FOLDER", about: "the folder to search instead of the agents' own", optional: true}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to create or add to (default: serve's, env MEMORYD_DB)")
		from := fs.String("from", "", "the agents whose sessions these are: `KINDS` pi, claude-code or codex, a comma list of them, or all")
		since := fs.String("since", "", "skip the files last written before `DATE`")
		return func(ctx context.Context, in *invocation) error {
			kinds, err := parseKinds(*from)
			if err != nil {
				return err
			}
			var after time.Time
			if *since != "" {
				if after, err = parseSince(*since); err != nil {
					return &usageError{err.Error()}
				}
			}
			folder := ""
			if len(in.args) > 0 {
				folder = in.args[0]
			}
			path := *db
			if path == "" {
				if path, err = defaultDBPath(in.getenv); err != nil {
					return err
				}
			}
			return runImportSessions(ctx, path, kinds, folder, after, in)
		}
	},
}

// kindOrder is the order of every kind of session file, for --from all.
var kindOrder = []string{"pi", "claude-code", "codex"}

// parseKinds reads --from: one kind, a comma list of them, or all.
func parseKinds(from string) ([]sessionKind, error) {
	var kinds []sessionKind
	for _, name := range strings.Split(from, ",") {
		name = strings.TrimSpace(name)
		names := []string{name}
		if name == "all" {
			names = kindOrder
		}
		for _, n := range names {
			kind, ok := sessionKinds[n]
			if !ok {
				return nil, &usageError{fmt.Sprintf("--from %q: give --from pi, claude-code or codex, a comma list of them, or all", from)}
			}
			if !slices.ContainsFunc(kinds, func(k sessionKind) bool { return k.name == n }) {
				kinds = append(kinds, kind)
			}
		}
	}
	return kinds, nil
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
	// load imports one session file. find finds a Codex session's rollout
	// by its thread id.
	load func(ctx context.Context, svc *memory.Service, path string, find func(threadID string) string) (sessionImport, error)
}

// sessionImport is what importing one session file did.
type sessionImport struct {
	TaskID     string               `json:"task_id"`
	SessionKey string               `json:"session_key,omitempty"`
	Entries    int                  `json:"entries"`
	Stored     int                  `json:"stored"`
	Resumed    bool                 `json:"-"`
	SkippedAt  []forensics.FileLine `json:"skipped_lines,omitempty"`
	// session is a Codex session's rollout that a sub-agent's import
	// imported first.
	session *importedFile
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
		load: func(ctx context.Context, svc *memory.Service, path string, _ func(string) string) (sessionImport, error) {
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
		load: func(ctx context.Context, svc *memory.Service, path string, _ func(string) string) (sessionImport, error) {
			res, err := forensics.ImportClaudeCodeSession(ctx, svc, path, nil)
			out := sessionImport{TaskID: res.TaskID, SessionKey: res.SessionKey, Entries: res.Entries, Stored: res.Stored,
				Resumed: res.Resumed, SkippedAt: res.SkippedAt}
			for _, s := range res.SubAgents {
				out.Entries += s.Entries
				out.Stored += s.Stored
			}
			return out, err
		},
	},
	"codex": {
		name: "codex",
		folder: func(getenv func(string) string) (string, error) {
			if d := getenv("CODEX_HOME"); d != "" {
				return filepath.Join(d, "sessions"), nil
			}
			return homeFolder(getenv, ".codex", "sessions")
		},
		pick: func(rel string) (bool, string) {
			switch {
			case filepath.Ext(rel) != ".jsonl":
				return false, "not a .jsonl file"
			case !strings.HasPrefix(filepath.Base(rel), "rollout-"):
				return false, "not a rollout: Codex names them rollout-<time>-<thread id>.jsonl"
			}
			return true, ""
		},
		load: func(ctx context.Context, svc *memory.Service, path string, find func(string) string) (sessionImport, error) {
			res, err := forensics.ImportCodexSession(ctx, svc, path, find, nil)
			out := codexImport(res)
			if s := res.Session; s != nil {
				out.session = &importedFile{File: s.SessionFile, Kind: "codex", sessionImport: codexImport(*s)}
			}
			return out, err
		},
	},
}

// codexImport is a rollout's import as the summary gives it.
func codexImport(res forensics.ImportedCodexSession) sessionImport {
	out := sessionImport{TaskID: res.TaskID, SessionKey: res.SessionKey, Entries: res.Entries, Stored: res.Stored, Resumed: res.Resumed}
	if len(res.SkippedAt) > 0 {
		out.SkippedAt = res.SkippedAt
	}
	return out
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
	Kind string `json:"kind"`
	sessionImport
}

// fileReason is a file skipped or failed, and why.
type fileReason struct {
	File string `json:"file"`
	Kind string `json:"kind,omitempty"`
	Why  string `json:"why"`
}

// importSessionsSummary is what import-sessions prints.
type importSessionsSummary struct {
	From   string `json:"from"`
	Folder string `json:"folder"`
	// Folders are the folders read, by kind: FOLDER, or each kind's own.
	Folders   map[string]string `json:"folders"`
	Files     int               `json:"files"`    // the session files found
	Imported  []importedFile    `json:"imported"` // new tasks
	Grown     []importedFile    `json:"grown"`    // imported before, with new entries
	Unchanged int               `json:"unchanged"`
	Skipped   []fileReason      `json:"skipped"`
	Failed    []fileReason      `json:"failed"`
}

// sessionFile is a session file found, and its kind.
type sessionFile struct {
	path string
	kind sessionKind
	// subAgent is a Codex sub-agent's rollout, imported after the
	// sessions' own.
	subAgent bool
}

// runImportSessions imports the session files of kinds under folder, or
// under each kind's own folder when folder is "", each in a transaction
// of its own.
func runImportSessions(ctx context.Context, db string, kinds []sessionKind, folder string, since time.Time, in *invocation) (err error) {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	sum := importSessionsSummary{From: strings.Join(names, ","), Folders: map[string]string{}, Imported: []importedFile{},
		Grown: []importedFile{}, Skipped: []fileReason{}, Failed: []fileReason{}}
	w := &sessionWalk{sum: &sum, since: since, rollouts: map[string]string{}}
	switch {
	case folder != "" || len(kinds) == 1:
		root := folder
		if root == "" {
			if root, err = kinds[0].folder(in.getenv); err != nil {
				return err
			}
		}
		if root, err = filepath.Abs(root); err != nil {
			return err
		}
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			what := "sessions"
			if len(kinds) == 1 {
				what = kinds[0].name + " sessions"
			}
			return fmt.Errorf("%s: not a folder of %s (give the folder as the argument)", root, what)
		}
		sum.Folder = root
		for _, k := range kinds {
			sum.Folders[k.name] = root
		}
		if len(kinds) == 1 {
			err = w.walk(root, kinds[0].pick, func(string) (sessionKind, string) { return kinds[0], "" })
		} else {
			err = w.walk(root, recognisablePick(kinds), recognise(kinds))
		}
		if err != nil {
			return err
		}
	default:
		for _, k := range kinds {
			root, err := k.folder(in.getenv)
			if err == nil {
				root, err = filepath.Abs(root)
			}
			if err != nil {
				return err
			}
			sum.Folders[k.name] = root
			if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
				sum.Skipped = append(sum.Skipped, fileReason{File: root, Kind: k.name, Why: "no " + k.name + " sessions: not a folder"})
				continue
			}
			if err := w.walk(root, k.pick, func(string) (sessionKind, string) { return k, "" }); err != nil {
				return err
			}
		}
	}
	files := w.files
	// A Codex sub-agent joins its session's task, so the sessions' own
	// rollouts come first.
	slices.SortStableFunc(files, func(a, b sessionFile) int {
		if a.subAgent != b.subAgent {
			if a.subAgent {
				return 1
			}
			return -1
		}
		return strings.Compare(a.path, b.path)
	})
	sum.Files = len(files)

	svc, closeDB, err := openSessionImport(ctx, in.getenv, db, in.stderr)
	if err != nil {
		return err
	}
	defer func() { closeDB(err != nil && len(sum.Imported)+len(sum.Grown) == 0) }()
	done := map[string]bool{} // the files imported or tried
	asked := ""               // the session a sub-agent's import looked for last
	find := func(threadID string) string {
		asked = threadID
		if p := w.rollouts[threadID]; p != "" && !done[p] {
			return p
		}
		return ""
	}
	report, finish := progress(in.stderr, "import-sessions", "files", int64(len(files)))
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			finish()
			return err
		}
		done[f.path], asked = true, ""
		res, err := f.kind.load(ctx, svc, f.path, find)
		if s := res.session; s != nil {
			done[s.File] = true
			sum.Files++
			if s.Resumed {
				sum.Grown = append(sum.Grown, *s)
			} else {
				sum.Imported = append(sum.Imported, *s)
			}
		}
		why := func() string { return strings.TrimPrefix(err.Error(), f.path+": ") }
		switch {
		case errors.Is(err, forensics.ErrNotASession), errors.Is(err, forensics.ErrNotARollout):
			sum.Files--
			sum.Skipped = append(sum.Skipped, fileReason{File: f.path, Why: why()})
		case errors.Is(err, forensics.ErrSessionNotImported):
			sum.Files--
			reason := why()
			if p := w.rollouts[asked]; p != "" {
				reason = "its session's rollout " + p + " did not import (see failed or skipped)"
			}
			sum.Skipped = append(sum.Skipped, fileReason{File: f.path, Kind: f.kind.name, Why: reason})
		case err != nil:
			sum.Failed = append(sum.Failed, fileReason{File: f.path, Kind: f.kind.name, Why: why()})
		case !res.Resumed:
			sum.Imported = append(sum.Imported, importedFile{File: f.path, Kind: f.kind.name, sessionImport: res})
		case res.Stored > 0:
			sum.Grown = append(sum.Grown, importedFile{File: f.path, Kind: f.kind.name, sessionImport: res})
		default:
			sum.Unchanged++
		}
		if report != nil {
			report(int64(i + 1))
		}
	}
	finish()
	if len(sum.Imported)+len(sum.Grown) > 0 {
		reclaim(ctx, svc, in.stderr, "import-sessions")
	}
	if err := svc.Close(); err != nil {
		return err
	}
	what, where := kinds[0].name+" session files", sum.Folder
	if len(kinds) > 1 {
		what = "session files (" + strings.Join(names, ", ") + ")"
		if where == "" {
			where = "their folders"
		}
	}
	fmt.Fprintf(in.stderr, "import-sessions: %d %s in %s: %d imported, %d grown, %d unchanged, %d failed; %d other files skipped\n",
		sum.Files, what, where, len(sum.Imported), len(sum.Grown), sum.Unchanged, len(sum.Failed), len(sum.Skipped))
	if err := writeJSON(in.stdout, sum); err != nil {
		return err
	}
	if len(sum.Failed) > 0 {
		return errors.New(plural(len(sum.Failed), "session file") + " failed to import: see \"failed\" in the summary")
	}
	return nil
}

// sessionWalk collects the session files of the folders it walks.
type sessionWalk struct {
	sum   *importSessionsSummary
	since time.Time
	files []sessionFile
	// rollouts are the Codex rollouts seen, by the thread id their name
	// ends in, whatever --since says: a sub-agent's session is imported
	// first when it was not.
	rollouts map[string]string
}

// walk finds the files under root that pick takes and kindOf names, and
// says why it skips the others.
func (w *sessionWalk) walk(root string, pick func(rel string) (bool, string), kindOf func(path string) (sessionKind, string)) error {
	skip := func(path, why string) { w.sum.Skipped = append(w.sum.Skipped, fileReason{File: path, Why: why}) }
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			skip(path, err.Error())
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		ok, why := pick(rel)
		switch {
		case !ok && why == "":
			return nil
		case !ok:
			skip(path, why)
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			skip(path, "a symbolic link (nothing outside the folder is read)")
			return nil
		case !d.Type().IsRegular():
			skip(path, "not a regular file")
			return nil
		}
		if id := forensics.CodexThreadID(d.Name()); id != "" {
			w.rollouts[id] = path
		}
		if !w.since.IsZero() {
			fi, err := d.Info()
			if err != nil {
				skip(path, err.Error())
				return nil
			}
			if fi.ModTime().Before(w.since) {
				skip(path, fmt.Sprintf("last written %s, before --since", fi.ModTime().Format(time.RFC3339)))
				return nil
			}
		}
		kind, why := kindOf(path)
		if why != "" {
			skip(path, why)
			return nil
		}
		f := sessionFile{path: path, kind: kind}
		if kind.name == "codex" {
			if m, err := forensics.CodexMeta(path); err == nil {
				_, _, f.subAgent = forensics.CodexSessionKey(m)
			}
		}
		w.files = append(w.files, f)
		return nil
	})
}

// recognisablePick takes the .jsonl files in a folder of several kinds of
// session files, but not a Claude Code sub-agent's transcript, imported
// with its session.
func recognisablePick(kinds []sessionKind) func(rel string) (bool, string) {
	withClaudeCode := slices.ContainsFunc(kinds, func(k sessionKind) bool { return k.name == "claude-code" })
	return func(rel string) (bool, string) {
		dir, name := filepath.Split(rel)
		switch {
		case filepath.Ext(rel) != ".jsonl":
			return false, "not a .jsonl file"
		case withClaudeCode && filepath.Base(dir) == "subagents" && strings.HasPrefix(name, "agent-"):
			return false, "" // imported with its session
		}
		return true, ""
	}
}

// recognise names the kind of a session file by its first line that is
// a JSON object, among its first lines: a Pi session header, a Codex
// session_meta record, or a Claude Code transcript's line (sessionId, uuid
// or leafUuid). A kind not among kinds is skipped.
func recognise(kinds []sessionKind) func(path string) (sessionKind, string) {
	return func(path string) (sessionKind, string) {
		name, why := sessionFormat(path)
		if why != "" {
			return sessionKind{}, why
		}
		for _, k := range kinds {
			if k.name == name {
				return k, ""
			}
		}
		return sessionKind{}, "a " + name + " session file, not among --from's kinds"
	}
}

// recogniseLines is how many lines sessionFormat reads before it gives up.
const recogniseLines = 100

// sessionFormat returns the kind of session file at path, or why it is
// none.
func sessionFormat(path string) (kind, why string) {
	f, err := os.Open(path)
	if err != nil {
		return "", err.Error()
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for line := 1; line <= recogniseLines; line++ {
		raw, err := history.ReadLine(br)
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' {
			var fields map[string]json.RawMessage
			if json.Unmarshal(t, &fields) == nil {
				var typ string
				_ = json.Unmarshal(fields["type"], &typ)
				switch {
				case typ == "session":
					return "pi", ""
				case typ == "session_meta":
					return "codex", ""
				case fields["sessionId"] != nil || fields["uuid"] != nil || fields["leafUuid"] != nil:
					return "claude-code", ""
				}
				return "", fmt.Sprintf("not a session file of Pi, Claude Code or Codex: line %d is neither a session header, a session_meta record nor a transcript's line", line)
			}
		}
		if errors.Is(err, io.EOF) {
			return "", "not a session file: it has no line that is a JSON object"
		}
		if err != nil {
			return "", err.Error()
		}
	}
	return "", fmt.Sprintf("not a session file: none of its first %d lines is a JSON object", recogniseLines)
}
