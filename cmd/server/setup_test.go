package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetupClaudeCode: setup claude-code writes memoryd's MCP server,
// hooks and permission into the user's Claude Code settings and changes
// nothing else in them; run twice it writes them once; --remove takes out
// exactly what it wrote; a settings file that is not JSON is left alone.
func TestSetupClaudeCode(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, "bin", "memoryd")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	claudeJSON := filepath.Join(home, ".claude.json")
	settings := filepath.Join(home, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	const userHook = `{"type":"command","command":"echo the user's own"}`
	write(t, claudeJSON, `{"numStartups":12,"startedAt":1796534843384,"mcpServers":{"other":{"command":"x"}},"projects":{"/p":{"hasTrustDialogAccepted":true}}}`)
	write(t, settings, `{"model":"opus","hooks":{"Stop":[{"hooks":[`+userHook+`]}]},"permissions":{"allow":["Bash(ls)"]}}`)
	getenv := env(map[string]string{"HOME": home})
	setup := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(context.Background(), append([]string{"setup", "claude-code", "--bin", bin, "--addr", "127.0.0.1:7411"}, args...), getenv, strings.NewReader(""), &out, io.Discard); err != nil {
			t.Fatalf("setup %v: %v", args, err)
		}
		return out.String()
	}
	for range 2 {
		setup()
	}
	cj, st := readJSON(t, claudeJSON), readJSON(t, settings)
	if got := cj["mcpServers"]; !jsonEqual(got, map[string]any{"other": map[string]any{"command": "x"},
		"memoryd": map[string]any{"type": "stdio", "command": bin, "args": []any{"mcp", "--addr", "127.0.0.1:7411"}}}) {
		t.Errorf("mcpServers: %v", got)
	}
	if raw, _ := os.ReadFile(claudeJSON); !bytes.Contains(raw, []byte("1796534843384")) || !bytes.Contains(raw, []byte(`"hasTrustDialogAccepted": true`)) {
		t.Errorf("~/.claude.json lost what it held:\n%s", raw)
	}
	hooks := st["hooks"].(map[string]any)
	command := bin + " hook claude-code --addr 127.0.0.1:7411"
	for _, h := range claudeCodeHookEvents {
		groups := hooks[h.event].([]any)
		n := 0
		for _, g := range groups {
			for _, hk := range g.(map[string]any)["hooks"].([]any) {
				if hk.(map[string]any)["command"] == command {
					n++
					if m, _ := g.(map[string]any)["matcher"].(string); m != h.matcher {
						t.Errorf("%s: matcher %q, want %q", h.event, m, h.matcher)
					}
				}
			}
		}
		if n != 1 {
			t.Errorf("%s has memoryd's hook %d times, want once", h.event, n)
		}
	}
	if !strings.Contains(mustJSON(hooks["Stop"]), "the user's own") || st["model"] != "opus" {
		t.Errorf("the user's own settings changed: %v", st)
	}
	if got := mustJSON(st["permissions"]); got != `{"allow":["Bash(ls)","mcp__memoryd"]}` {
		t.Errorf("permissions: %s", got)
	}

	setup("--remove")
	cj, st = readJSON(t, claudeJSON), readJSON(t, settings)
	if got := mustJSON(cj["mcpServers"]); got != `{"other":{"command":"x"}}` {
		t.Errorf("after --remove, mcpServers: %s", got)
	}
	if got := mustJSON(st); got != `{"hooks":{"Stop":[{"hooks":[{"command":"echo the user's own","type":"command"}]}]},"model":"opus","permissions":{"allow":["Bash(ls)"]}}` {
		t.Errorf("after --remove, settings: %s", got)
	}

	write(t, settings, `{"hooks": [oops`)
	var out bytes.Buffer
	err := run(context.Background(), []string{"setup", "claude-code", "--bin", bin}, getenv, strings.NewReader(""), &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is not a JSON object") {
		t.Errorf("a broken settings file: %v", err)
	}
	if raw, _ := os.ReadFile(settings); string(raw) != `{"hooks": [oops` {
		t.Errorf("the broken file was changed: %s", raw)
	}
}

// TestSetupClaudeCodeProject: --project writes the current folder's
// .mcp.json and .claude/settings.json, not the user's.
func TestSetupClaudeCodeProject(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Chdir(project)
	bin := filepath.Join(home, "memoryd")
	write(t, bin, "#!/bin/sh\n")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"setup", "claude-code", "--project", "--bin", bin}, env(map[string]string{"HOME": home}), strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, ok := readJSON(t, filepath.Join(project, ".mcp.json"))["mcpServers"].(map[string]any)["memoryd"]; !ok {
		t.Error("no memoryd in the project's .mcp.json")
	}
	if _, ok := readJSON(t, filepath.Join(project, ".claude", "settings.json"))["hooks"].(map[string]any)["PreToolUse"]; !ok {
		t.Error("no PreToolUse hook in the project's settings")
	}
	if _, err := os.Stat(filepath.Join(home, ".claude.json")); err == nil {
		t.Error("--project wrote the user's ~/.claude.json")
	}
	if !strings.Contains(out.String(), "--remove --project") {
		t.Errorf("the output does not say how to undo it: %s", out.String())
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func jsonEqual(a, b any) bool { return mustJSON(a) == mustJSON(b) }
