package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// setupCodexRun runs memoryd setup codex with CODEX_HOME=home.
func setupCodexRun(t *testing.T, home, bin string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), append([]string{"setup", "codex", "--bin", bin, "--addr", "127.0.0.1:7411"}, args...),
		env(map[string]string{"CODEX_HOME": home}), strings.NewReader(""), &out, io.Discard)
	return out.String(), err
}

func fakeBinary(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "memoryd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// codexHooksFile is hooks.json as Codex reads it.
func codexHooksFile(t *testing.T, home string) map[string][]codexHookGroup {
	t.Helper()
	var f struct {
		Hooks map[string][]codexHookGroup `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(home, "hooks.json"))), &f); err != nil {
		t.Fatal(err)
	}
	return f.Hooks
}

func codexConfig(t *testing.T, home string) map[string]any {
	t.Helper()
	doc := map[string]any{}
	if err := toml.Unmarshal([]byte(readFile(t, filepath.Join(home, "config.toml"))), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkCodexTrust: config.toml trusts every handler of hooks.json with
// its hash (as Codex computes it), under its key, and holds no other
// entry for hooks.json.
func checkCodexTrust(t *testing.T, home string) {
	t.Helper()
	hooksPath := filepath.Join(home, "hooks.json")
	want := map[string]string{}
	for event, groups := range codexHooksFile(t, home) {
		for gi, g := range groups {
			for hi, h := range g.Hooks {
				want[codexTrustKey(hooksPath, event, gi, hi)] = codexTrustHash(event, g, h)
			}
		}
	}
	got := map[string]string{}
	hooks, _ := codexConfig(t, home)["hooks"].(map[string]any)
	state, _ := hooks["state"].(map[string]any)
	for k, v := range state {
		if strings.HasPrefix(k, hooksPath+":") {
			got[k], _ = v.(map[string]any)["trusted_hash"].(string)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trust entries of hooks.json:\n got %v\nwant %v", got, want)
	}
}

// TestSetupCodexFresh: in a CODEX_HOME that does not exist, setup codex
// creates it (0700) and writes config.toml and hooks.json (0600): the MCP
// server memoryd, memoryd's hook on each event and the trust of each;
// run again it changes no byte; --remove takes it all out.
func TestSetupCodexFresh(t *testing.T) {
	dir := t.TempDir()
	bin := fakeBinary(t, filepath.Join(dir, "bin"))
	home := filepath.Join(dir, `co"dex home`) // a key that needs quoting
	out, err := setupCodexRun(t, home, bin)
	if err != nil {
		t.Fatal(err)
	}
	configPath, hooksPath := filepath.Join(home, "config.toml"), filepath.Join(home, "hooks.json")
	for path, mode := range map[string]os.FileMode{home: 0o700, configPath: 0o600, hooksPath: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, %v; want mode %v", path, fi, err, mode)
		}
	}
	for _, s := range []string{configPath, hooksPath, "codex --remove", "next starts"} {
		if !strings.Contains(out, s) {
			t.Errorf("the output does not name %q:\n%s", s, out)
		}
	}
	server := codexConfig(t, home)["mcp_servers"].(map[string]any)["memoryd"]
	if want := map[string]any{"command": bin, "args": []any{"mcp", "--addr", "127.0.0.1:7411", "--tool-names", "codex"}, "default_tools_approval_mode": "approve",
		"env_vars": []any{"MEMORYD_TOKEN", "MEMORYD_DB", "MEMORYD_ADDR", "XDG_DATA_HOME", "MEMORYD_AUTOSTART"}}; !reflect.DeepEqual(server, want) {
		t.Errorf("[mcp_servers.memoryd] = %v", server)
	}
	hooks := codexHooksFile(t, home)
	command := bin + " hook codex --addr 127.0.0.1:7411"
	for _, h := range codexHookEvents {
		groups := hooks[h.event]
		if len(groups) != 1 || len(groups[0].Hooks) != 1 || groups[0].Hooks[0].Command != command {
			t.Fatalf("%s: %+v", h.event, groups)
		}
		g, hd := groups[0], groups[0].Hooks[0]
		if m := g.Matcher; (m == nil) != (h.matcher == "") || m != nil && *m != h.matcher {
			t.Errorf("%s: matcher %v, want %q", h.event, m, h.matcher)
		}
		timeout, limit := codexHookTimeout, (*int)(nil)
		switch h.event {
		case "SessionEnd":
			timeout = codexSessionEndTimeout
		case "SessionStart":
			limit = new(int)
		}
		if hd.Timeout != timeout || !reflect.DeepEqual(hd.AdditionalContextLimit, limit) || hd.StatusMessage != nil || hd.Async {
			t.Errorf("%s: handler %+v", h.event, hd)
		}
	}
	checkCodexTrust(t, home)

	config, hooksJSON := readFile(t, configPath), readFile(t, hooksPath)
	if _, err := setupCodexRun(t, home, bin); err != nil {
		t.Fatal(err)
	}
	if readFile(t, configPath) != config || readFile(t, hooksPath) != hooksJSON {
		t.Error("a second setup changed the files")
	}

	if _, err := setupCodexRun(t, home, bin, "--remove"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, configPath); got != "" {
		t.Errorf("config.toml after --remove: %q", got)
	}
	if got := strings.Join(strings.Fields(readFile(t, hooksPath)), ""); got != `{"hooks":{}}` {
		t.Errorf("hooks.json after --remove: %s", got)
	}
	if _, err := setupCodexRun(t, home, bin, "--remove"); err != nil {
		t.Errorf("--remove again: %v", err)
	}

	// Without CODEX_HOME it is ~/.codex.
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"setup", "codex", "--bin", bin}, env(map[string]string{"HOME": dir}), strings.NewReader(""), &buf, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".codex", "config.toml")); err != nil {
		t.Error(err)
	}
}

// userCodexConfig is a config.toml of the user's, with what could fool a
// textual edit: a header inside a multi-line string, nested arrays over
// lines, comments and CRLF lines.
const userCodexConfig = `# Codex settings, by hand.
model = "gpt-5"   # trailing comment
notes = """
[mcp_servers.memoryd]
command = "not a table: inside a string"
"""
matrix = [
  [1, 2],
  ["a"],
]

# my own server
[mcp_servers.other]
command = "node"
args = ["x.js"]   # its script

[mcp_servers.other.env]
K = "v"

[hooks.state."/elsewhere/hooks.json:stop:0:0"]
trusted_hash = "sha256:aaaa"

[projects."/home/dev/proj"]` + "\r\n" + `trust_level = "trusted"
`

// TestSetupCodexKeepsTheUsersConfig: setup codex leaves every byte of the
// user's config.toml as it was and appends memoryd's tables after them;
// the file's mode stays; run again it changes nothing; --remove gives back
// the original bytes.
func TestSetupCodexKeepsTheUsersConfig(t *testing.T) {
	home := t.TempDir()
	bin := fakeBinary(t, filepath.Join(home, "bin"))
	configPath := filepath.Join(home, "config.toml")
	if err := os.WriteFile(configPath, []byte(userCodexConfig), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := setupCodexRun(t, home, bin); err != nil {
		t.Fatal(err)
	}
	config := readFile(t, configPath)
	if !strings.HasPrefix(config, userCodexConfig+"\n[mcp_servers.memoryd]\n") {
		t.Errorf("config.toml does not keep the user's bytes, then memoryd's tables:\n%s", config)
	}
	if fi, _ := os.Stat(configPath); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 as it was", fi.Mode().Perm())
	}
	checkCodexTrust(t, home)
	if _, err := setupCodexRun(t, home, bin); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, configPath); got != config {
		t.Errorf("a second setup changed config.toml:\n%s", got)
	}
	if _, err := setupCodexRun(t, home, bin, "--remove"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, configPath); got != userCodexConfig {
		t.Errorf("--remove did not give back the user's config.toml:\n%q\nwant\n%q", got, userCodexConfig)
	}
}

// TestSetupCodexRekeysTrust: hooks.json keeps the user's groups and keys;
// when taking out memoryd's groups (or a handler of its group) moves the
// user's hooks to lower indexes, their trust entries move with them, on
// a second setup and on --remove.
func TestSetupCodexRekeysTrust(t *testing.T) {
	home := t.TempDir()
	bin := fakeBinary(t, filepath.Join(home, "the bin")) // quoted in the command
	hooksPath, configPath := filepath.Join(home, "hooks.json"), filepath.Join(home, "config.toml")
	write(t, hooksPath, `{"other":{"kept":true},"hooks":{
 "Stop":[{"hooks":[{"type":"command","command":"echo A"}]}],
 "PreToolUse":[{"matcher":"^Bash$","hooks":[{"type":"command","command":"echo P","statusMessage":"checking"}]}],
 "UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo U","timeout":5}]}]}}`)
	// The user trusted their hooks, as Codex does.
	var trust strings.Builder
	for event, groups := range codexHooksFile(t, home) {
		for gi, g := range groups {
			for hi, h := range g.Hooks {
				trust.WriteString("[hooks.state." + tomlString(codexTrustKey(hooksPath, event, gi, hi)) + "]\ntrusted_hash = " + tomlString(codexTrustHash(event, g, h)) + "\n")
			}
		}
	}
	write(t, configPath, trust.String())
	if _, err := setupCodexRun(t, home, bin); err != nil {
		t.Fatal(err)
	}
	checkCodexTrust(t, home)
	if hooks := codexHooksFile(t, home); len(hooks["Stop"]) != 2 || hooks["Stop"][0].Hooks[0].Command != "echo A" || len(hooks["UserPromptSubmit"]) != 1 {
		t.Errorf("hooks: %+v", hooks)
	}

	// The user adds a Stop group after memoryd's, and a handler to
	// memoryd's PreToolUse group, and trusts them.
	doc := readJSON(t, hooksPath)
	hooks := doc["hooks"].(map[string]any)
	hooks["Stop"] = append(hooks["Stop"].([]any), map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "echo B"}}})
	pre := hooks["PreToolUse"].([]any)[1].(map[string]any)
	pre["hooks"] = append(pre["hooks"].([]any), map[string]any{"type": "command", "command": "echo Q"})
	write(t, hooksPath, mustJSON(doc))
	b := codexHookGroup{Hooks: []codexHookHandler{{Type: "command", Command: "echo B"}}}
	matcher := "^mcp__memoryd__"
	q := codexHookGroup{Matcher: &matcher, Hooks: []codexHookHandler{{Type: "command", Command: "echo Q"}}}
	f, err := os.OpenFile(configPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[hooks.state." + tomlString(codexTrustKey(hooksPath, "Stop", 2, 0)) + "]\ntrusted_hash = " + tomlString(codexTrustHash("Stop", b, b.Hooks[0])) + "\n")
	f.WriteString("\n[hooks.state." + tomlString(codexTrustKey(hooksPath, "PreToolUse", 1, 1)) + "]\ntrusted_hash = " + tomlString(codexTrustHash("PreToolUse", q, q.Hooks[0])) + "\n")
	f.Close()
	checkCodexTrust(t, home)

	if _, err := setupCodexRun(t, home, bin); err != nil {
		t.Fatal(err)
	}
	checkCodexTrust(t, home)
	got := codexHooksFile(t, home)
	if s := got["Stop"]; len(s) != 3 || s[1].Hooks[0].Command != "echo B" || !ourCodexHook.MatchString(s[2].Hooks[0].Command) {
		t.Errorf("Stop after a second setup: %+v", s)
	}
	if p := got["PreToolUse"]; len(p) != 3 || len(p[1].Hooks) != 1 || p[1].Hooks[0].Command != "echo Q" {
		t.Errorf("PreToolUse after a second setup: %+v", p)
	}

	if _, err := setupCodexRun(t, home, bin, "--remove"); err != nil {
		t.Fatal(err)
	}
	checkCodexTrust(t, home)
	got = codexHooksFile(t, home)
	if s := got["Stop"]; len(s) != 2 || s[0].Hooks[0].Command != "echo A" || s[1].Hooks[0].Command != "echo B" {
		t.Errorf("Stop after --remove: %+v", s)
	}
	if p := got["PreToolUse"]; len(p) != 2 || p[1].Hooks[0].Command != "echo Q" {
		t.Errorf("PreToolUse after --remove: %+v", p)
	}
	for _, e := range []string{"SessionStart", "SessionEnd", "PreCompact", "SubagentStop"} {
		if _, ok := got[e]; ok {
			t.Errorf("%s is still in hooks.json", e)
		}
	}
	if doc := readJSON(t, hooksPath); mustJSON(doc["other"]) != `{"kept":true}` {
		t.Errorf("the user's other key: %v", doc["other"])
	}
	if _, ok := codexConfig(t, home)["mcp_servers"]; ok {
		t.Error("[mcp_servers.memoryd] is still in config.toml")
	}
}

// TestSetupCodexRefuses: a config.toml that does not parse, one that holds
// memoryd's server as dotted keys or an inline table, and a hooks.json that
// is not a JSON object of events are refused, and nothing is written.
func TestSetupCodexRefuses(t *testing.T) {
	for _, c := range []struct {
		name, config, hooks, err string
		removeOK                 bool // --remove has nothing to take out
	}{
		{"unparseable", "model = \n", "", "config.toml is not valid TOML", false},
		{"dotted keys", "mcp_servers.memoryd.command = \"x\"\n", "", "cannot edit it", false},
		{"inline table", "[mcp_servers]\nmemoryd = { command = \"x\" }\n", "", "cannot edit it", false},
		{"inline mcp_servers", "mcp_servers = { other = { command = \"x\" } }\n", "", "cannot edit it", true},
		{"hooks.json an array", "", "[1]", "hooks.json is not a JSON object", false},
		{"hooks.json broken", "", `{"hooks": [oops`, "hooks.json is not a JSON object", false},
		{"an event not a list", "", `{"hooks":{"Stop":{}}}`, "the hooks of Stop are not a list", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			bin := fakeBinary(t, filepath.Join(home, "bin"))
			files := map[string]string{"config.toml": c.config, "hooks.json": c.hooks}
			for name, s := range files {
				if s != "" {
					write(t, filepath.Join(home, name), s)
				}
			}
			for _, args := range [][]string{nil, {"--remove"}} {
				_, err := setupCodexRun(t, home, bin, args...)
				if c.removeOK && args != nil {
					if err != nil {
						t.Errorf("setup %v: %v", args, err)
					}
				} else if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("setup %v: %v, want %q", args, err, c.err)
				}
				for name, s := range files {
					b, err := os.ReadFile(filepath.Join(home, name))
					if s == "" && !errors.Is(err, os.ErrNotExist) || s != "" && string(b) != s {
						t.Errorf("setup %v wrote %s: %q, %v", args, name, b, err)
					}
				}
			}
		})
	}
}

// TestSetupCodexUsage: --project is not for codex; an unknown host is a
// usage error naming both.
func TestSetupCodexUsage(t *testing.T) {
	home := t.TempDir()
	bin := fakeBinary(t, home)
	var ue *usageError
	if _, err := setupCodexRun(t, home, bin, "--project"); !errors.As(err, &ue) {
		t.Errorf("--project: %v", err)
	}
	err := run(context.Background(), []string{"setup", "cursor"}, env(nil), strings.NewReader(""), io.Discard, io.Discard)
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "claude-code and codex") {
		t.Errorf("an unknown host: %v", err)
	}
}

// TestSetupCodexSymlinkedHome: with CODEX_HOME a symlink, the trust keys
// name hooks.json by the real path, as Codex does (a key through the link
// trusts nothing: docs/codex.md §11).
func TestSetupCodexSymlinkedHome(t *testing.T) {
	dir := t.TempDir()
	bin := fakeBinary(t, filepath.Join(dir, "bin"))
	real, link := filepath.Join(dir, "real"), filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := setupCodexRun(t, link, bin); err != nil {
		t.Fatal(err)
	}
	real, _ = filepath.EvalSymlinks(real) // the temporary folder may itself be under a link
	checkCodexTrust(t, real)
	if config := readFile(t, filepath.Join(real, "config.toml")); strings.Contains(config, link) {
		t.Errorf("a trust key names the link:\n%s", config)
	}
}
