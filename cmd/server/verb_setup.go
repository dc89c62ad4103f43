package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

var setupVerb = verb{
	name:     "setup",
	synopsis: "setup HOST [--project] [--remove] [--addr HOST:PORT] [--bin PATH]",
	summary:  "make a coding agent use memoryd: its MCP tools and hooks, in the agent's settings",
	about: `
Writes memoryd into a coding agent's settings, or with --remove takes it out again; nothing else in
those files changes. HOST is the agent: claude-code or codex. For Claude Code it writes, for the
user (~/.claude.json and ~/.claude/settings.json) or with --project for the current folder
(.mcp.json and .claude/settings.json):
  - memoryd as an MCP server, named memoryd: memoryd mcp --addr A on stdio, which finds the token itself;
  - the hooks: memoryd hook claude-code --addr A on PreToolUse of memoryd's tools (which names each
    call's session), PostToolUse and UserPromptSubmit (the reminder to take notes when the context
    fills), SessionStart (memoryd's bootstrap after a compaction or a resume), PreCompact, Stop,
    SubagentStop and SessionEnd (each syncs the session's transcript as the task's history);
  - the permission to use memoryd's tools (mcp__memoryd) without asking.
For Codex it writes, in $CODEX_HOME (default ~/.codex; no --project):
  - in config.toml, [mcp_servers.memoryd]: memoryd mcp --addr A, its tools approved, and the
    variables memoryd reads (MEMORYD_TOKEN, MEMORYD_DB, ...) passed on to it;
  - in hooks.json, memoryd hook codex --addr A on the same events, and in config.toml the trust of
    each ([hooks.state."..."]), without which Codex skips them.
  config.toml is edited by table: the rest of it stays byte for byte, or nothing is written.
Running it again replaces what it wrote. The commands name this memoryd's binary by its absolute
path (--bin to choose another), so the agent needs no PATH; a memoryd must serve on --addr while the
agent runs (memoryd serve). See docs/claude-code.md and docs/codex.md.`,
	args: []arg{{name: "HOST", about: "the coding agent: claude-code or codex"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		project := fs.Bool("project", false, "write the current folder's settings, not the user's (claude-code)")
		remove := fs.Bool("remove", false, "take memoryd out of the settings instead")
		addr := fs.String("addr", envOr(getenv, "MEMORYD_ADDR", "127.0.0.1:7411"), "the address of the memoryd the agent uses, `HOST:PORT` (env MEMORYD_ADDR)")
		bin := fs.String("bin", "", "the memoryd binary the agent runs, `PATH` (default: this one)")
		return func(ctx context.Context, in *invocation) error {
			host := in.args[0]
			if host != "claude-code" && host != "codex" {
				return &usageError{fmt.Sprintf("setup: unknown host %q; memoryd knows claude-code and codex", host)}
			}
			if host == "codex" && *project {
				return &usageError{"setup: --project is for claude-code; setup codex writes the user's settings, in $CODEX_HOME"}
			}
			a, err := listenAddress(*addr)
			if err != nil {
				return err
			}
			if host == "codex" {
				home, err := codexHome(in.getenv)
				if err != nil {
					return err
				}
				exe := ""
				if !*remove {
					if exe, err = memorydBinary(*bin); err != nil {
						return err
					}
				}
				return setupCodex(in, home, exe, dialable(a))
			}
			files, err := claudeCodeFiles(in.getenv, *project)
			if err != nil {
				return err
			}
			if *remove {
				return removeClaudeCode(in, files)
			}
			exe, err := memorydBinary(*bin)
			if err != nil {
				return err
			}
			return setupClaudeCode(in, files, exe, dialable(a))
		}
	},
}

// claudeCodeSettings are the two files memoryd's setup edits.
type claudeCodeSettings struct {
	mcp      string // the file with mcpServers: ~/.claude.json, or the project's .mcp.json
	settings string // hooks and permissions: ~/.claude/settings.json, or the project's .claude/settings.json
}

func claudeCodeFiles(getenv func(string) string, project bool) (claudeCodeSettings, error) {
	if project {
		wd, err := os.Getwd()
		if err != nil {
			return claudeCodeSettings{}, err
		}
		return claudeCodeSettings{mcp: filepath.Join(wd, ".mcp.json"), settings: filepath.Join(wd, ".claude", "settings.json")}, nil
	}
	home := getenv("HOME")
	if home == "" {
		return claudeCodeSettings{}, errors.New("HOME is not set: it holds Claude Code's user settings")
	}
	settings := filepath.Join(home, ".claude", "settings.json")
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		settings = filepath.Join(d, "settings.json")
	}
	return claudeCodeSettings{mcp: filepath.Join(home, ".claude.json"), settings: settings}, nil
}

// memorydBinary is the absolute path of the binary the agent will run.
func memorydBinary(bin string) (string, error) {
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find this memoryd's binary (give it with --bin): %w", err)
		}
		if strings.Contains(exe, string(filepath.Separator)+"go-build") {
			return "", errors.New("this memoryd runs from go run's temporary build, which is gone when it exits: " +
				"install it (go install ./cmd/server, or the npm package) and run its setup, or give the binary with --bin")
		}
		bin = exe
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
		return "", fmt.Errorf("--bin %s is not a file", bin)
	}
	return abs, nil
}

// claudeCodeHookEvents are the events memoryd's hook runs on, with the
// matcher of each ("" for every occurrence).
var claudeCodeHookEvents = []struct{ event, matcher string }{
	{"PreToolUse", "mcp__memoryd__.*"},
	{"PostToolUse", ""},
	{"UserPromptSubmit", ""},
	{"SessionStart", ""},
	{"PreCompact", ""},
	{"Stop", ""},
	{"SubagentStop", ""},
	{"SessionEnd", ""},
}

// ourHook matches the commands memoryd's setup writes, whatever binary
// and address they name.
var ourHook = regexp.MustCompile(`["']? hook claude-code( |$)`)

const claudeCodePermission = "mcp__memoryd"

// hookTimeoutSeconds is the hooks' timeout in Claude Code's settings, in
// place of its default of 60 s: the first sync of a long session sends
// megabytes (2 s for 10,000 entries here), and a hook killed midway starts
// over at the next one.
const hookTimeoutSeconds = 600

func setupClaudeCode(in *invocation, f claudeCodeSettings, exe, addr string) error {
	command := shellQuote(exe) + " hook claude-code --addr " + addr
	if err := editJSON(f.mcp, func(doc map[string]any) {
		servers, _ := doc["mcpServers"].(map[string]any)
		if servers == nil {
			servers = map[string]any{}
		}
		servers["memoryd"] = map[string]any{"type": "stdio", "command": exe, "args": []any{"mcp", "--addr", addr}}
		doc["mcpServers"] = servers
	}); err != nil {
		return err
	}
	if err := editJSON(f.settings, func(doc map[string]any) {
		hooks := withoutOurHooks(doc)
		for _, h := range claudeCodeHookEvents {
			group := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command, "timeout": hookTimeoutSeconds}}}
			if h.matcher != "" {
				group["matcher"] = h.matcher
			}
			list, _ := hooks[h.event].([]any)
			hooks[h.event] = append(list, group)
		}
		doc["hooks"] = hooks
		perms, _ := doc["permissions"].(map[string]any)
		if perms == nil {
			perms = map[string]any{}
		}
		allow, _ := perms["allow"].([]any)
		if !slices.Contains(allow, any(claudeCodePermission)) {
			allow = append(allow, claudeCodePermission)
		}
		perms["allow"] = allow
		doc["permissions"] = perms
	}); err != nil {
		return err
	}
	fmt.Fprintf(in.stdout, "Claude Code uses memoryd on %s:\n  MCP server \"memoryd\" in %s\n  hooks and the permission %s in %s\n", addr, f.mcp, claudeCodePermission, f.settings)
	if strings.HasSuffix(f.mcp, ".mcp.json") {
		fmt.Fprintln(in.stdout, "Claude Code asks once before it uses a project's MCP server: approve \"memoryd\" when it asks.")
	}
	fmt.Fprintf(in.stdout, "memoryd must serve on %s while Claude Code runs (memoryd serve). Undo with: memoryd setup claude-code --remove%s\n", addr, projectFlag(f))
	return nil
}

func projectFlag(f claudeCodeSettings) string {
	if strings.HasSuffix(f.mcp, ".mcp.json") {
		return " --project"
	}
	return ""
}

func removeClaudeCode(in *invocation, f claudeCodeSettings) error {
	for _, path := range []string{f.mcp, f.settings} {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := editJSON(path, func(doc map[string]any) {
			if servers, ok := doc["mcpServers"].(map[string]any); ok {
				delete(servers, "memoryd")
			}
			if _, ok := doc["hooks"]; ok {
				doc["hooks"] = withoutOurHooks(doc)
			}
			if perms, ok := doc["permissions"].(map[string]any); ok {
				if allow, ok := perms["allow"].([]any); ok {
					perms["allow"] = slices.DeleteFunc(allow, func(v any) bool { return v == claudeCodePermission })
				}
			}
		})
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(in.stdout, "memoryd is out of Claude Code's settings (%s, %s)\n", f.mcp, f.settings)
	return nil
}

// withoutOurHooks returns the settings' hooks with memoryd's taken out,
// dropping the groups and events left empty.
func withoutOurHooks(doc map[string]any) map[string]any {
	hooks, _ := doc["hooks"].(map[string]any)
	if hooks == nil {
		return map[string]any{}
	}
	for event, v := range hooks {
		groups, ok := v.([]any)
		if !ok {
			continue
		}
		var kept []any
		for _, g := range groups {
			gm, ok := g.(map[string]any)
			if !ok {
				kept = append(kept, g)
				continue
			}
			list, _ := gm["hooks"].([]any)
			others := slices.DeleteFunc(slices.Clone(list), func(h any) bool {
				hm, _ := h.(map[string]any)
				c, _ := hm["command"].(string)
				return ourHook.MatchString(c)
			})
			if len(others) == 0 && len(list) > 0 {
				continue
			}
			gm["hooks"] = others
			kept = append(kept, gm)
		}
		if len(kept) == 0 {
			delete(hooks, event)
		} else {
			hooks[event] = kept
		}
	}
	return hooks
}

// editJSON applies edit to the JSON object in path, or to an empty one
// when there is no file, and replaces the file at once, keeping its mode.
// A file that is not a JSON object is left as it is.
func editJSON(path string, edit func(map[string]any)) error {
	doc := map[string]any{}
	mode := fs.FileMode(0o600)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if len(bytes.TrimSpace(b)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber() // numbers stay as written
			if err := dec.Decode(&doc); err != nil || doc == nil {
				return fmt.Errorf("%s is not a JSON object, so memoryd leaves it alone: fix it and run setup again", path)
			}
		}
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
	default:
		return err
	}
	edit(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".memoryd-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// shellQuote quotes a path for the shell Claude Code runs a command hook
// in, when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
