package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildServer sets b.bin to -server, or builds ./cmd/server from the module
// root into the scratch folder.
func (b *bench) buildServer(ctx context.Context) error {
	if b.cfg.server != "" {
		abs, err := filepath.Abs(b.cfg.server)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("-server: %w", err)
		}
		b.bin, b.binNote = abs, "given with -server"
		return nil
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("cannot find the memoryd module to build ./cmd/server (go env GOMOD: %q, %v): run bench inside the module or pass -server", gomod, err)
	}
	root := filepath.Dir(gomod)
	b.bin = filepath.Join(b.scratch, "memoryd")
	b.logf("building memoryd: go build -o <scratch>/memoryd ./cmd/server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", b.bin, "./cmd/server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/server: %v\n%s", err, out)
	}
	b.binNote = "built with go build ./cmd/server"
	if rev, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--always", "--dirty", "--abbrev=12").Output(); err == nil {
		b.binNote += " at commit " + strings.TrimSpace(string(rev))
	}
	return nil
}

// startMemoryd starts memoryd serve on db, with -server-flags and then
// the row's own flags, if any (the last of a flag given twice wins).
func (b *bench) startMemoryd(ctx context.Context, name, db string, flags ...string) (*proc, error) {
	args := []string{b.bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "error"}
	args = append(args, strings.Fields(b.cfg.serverFlags)...)
	args = append(args, flags...)
	return startProc(ctx, name, args, b.memorydEnv("MEMORYD_TOKEN="+b.token), b.progress)
}

// attach attaches a new session and returns its task id.
func (b *bench) attach(ctx context.Context, p *proc, name string) (string, error) {
	body := fmt.Appendf(nil, `{"session_key":"/bench/%s.jsonl","budget":{"context_window":200000}}`, name)
	var res struct {
		TaskID string `json:"task_id"`
		Agent  string `json:"agent"`
	}
	if err := b.cl.postJSON(ctx, p.url+"/v1/sessions/attach", body, &res); err != nil {
		return "", err
	}
	if res.TaskID == "" || res.Agent != "/root" {
		return "", fmt.Errorf("attach returned task %q agent %q, want a task and /root", res.TaskID, res.Agent)
	}
	return res.TaskID, nil
}

// toolBody is a tool call's request body with a new call id.
func (b *bench) toolBody(task, args string) []byte {
	return fmt.Appendf(nil, `{"context":{"task_id":%q,"agent":"/root","call_id":"toolu_bench%d"},"arguments":%s}`, task, b.calls.Add(1), args)
}
