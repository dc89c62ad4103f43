package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/memorytest"
)

// walkthroughMarker is the HTML comment that precedes the README's
// walkthrough block (a fenced block labelled bash).
const walkthroughMarker = "<!-- walkthrough"

// readmeWalkthrough returns the bash block that follows the walkthrough
// marker in README.md.
func readmeWalkthrough(readme []byte) (string, error) {
	_, rest, ok := bytes.Cut(readme, []byte(walkthroughMarker))
	if !ok {
		return "", errors.New("README.md has no " + walkthroughMarker + " marker")
	}
	_, rest, ok = bytes.Cut(rest, []byte("\n```bash\n"))
	if !ok {
		return "", errors.New("no ```bash block after the walkthrough marker")
	}
	block, _, ok := bytes.Cut(rest, []byte("\n```\n"))
	if !ok {
		return "", errors.New("the walkthrough block does not end")
	}
	return string(block) + "\n", nil
}

// holdDefaultPort starts a memoryd (token "other-token") on 127.0.0.1:7411,
// the default address, as a user's own service would hold it. It returns
// nil when the port is taken by something else: the walkthrough must work
// then too, and a test machine may run a memoryd of its own.
func holdDefaultPort(t *testing.T) *memorytest.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &memorytest.Buffer{}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	args := []string{"serve", "--addr", "127.0.0.1:7411", "--db", filepath.Join(t.TempDir(), "other.db")}
	go func() {
		err := run(ctx, args, env(map[string]string{"MEMORYD_TOKEN": "other-token"}), strings.NewReader(""), pw, stderr)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("the memoryd on 7411 did not stop")
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	if err != nil || line != "listening on http://127.0.0.1:7411\n" {
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Logf("127.0.0.1:7411 is taken by something else (%v): the walkthrough runs beside it", err)
			return nil
		case <-time.After(60 * time.Second):
			t.Fatalf("the memoryd on 7411 printed %q (%v); stderr:\n%s", line, err, stderr.String())
		}
	}
	return stderr
}

// goEnv returns the values of the go command's settings named.
func goEnv(t *testing.T, names ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"env"}, names...)...).Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	vals := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(vals) != len(names) {
		t.Fatalf("go env %v printed %q", names, out)
	}
	kv := make([]string, len(names))
	for i, n := range names {
		kv[i] = n + "=" + vals[i]
	}
	return kv
}

// walkthroughEnv is a new user's environment: the process's own without
// memoryd's variables, HOME, XDG_* and TMPDIR, which point into dir
// instead; the go command keeps its caches and settings.
func walkthroughEnv(t *testing.T, dir string) []string {
	t.Helper()
	keep := goEnv(t, "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV")
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "MEMORYD_") || strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "TMPDIR" ||
			k == "GOCACHE" || k == "GOMODCACHE" || k == "GOPATH" || k == "GOENV" {
			continue
		}
		out = append(out, kv)
	}
	for _, d := range []string{"home", "data", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return append(append(out, keep...),
		"HOME="+filepath.Join(dir, "home"), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "TMPDIR="+filepath.Join(dir, "tmp"))
}

var (
	walkthroughURL = regexp.MustCompile(`(?m)^memoryd \(pid ([0-9]+)\) at (http://127\.0\.0\.1:([0-9]+))$`)
	ulidField      = regexp.MustCompile(`"task_id":"([0-9A-HJKMNP-TV-Z]{26})"`)
)

// TestReadmeWalkthrough runs the README's first session with curl, the
// bash block after the walkthrough marker, as a new user pastes it: with
// bash from the repository's root, HOME and XDG_DATA_HOME in a fresh
// folder, no MEMORYD_TOKEN, and another memoryd serving on the default
// port 127.0.0.1:7411. Each answer the block prints after a "# expect"
// line must be what that line says; the block's own memoryd must have
// stopped (its port closed) and the one on 7411 must have seen no request.
func TestReadmeWalkthrough(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s: %v", tool, err)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, err := readmeWalkthrough(readme)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "walkthrough.sh")
	if err := os.WriteFile(script, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	other := holdDefaultPort(t)

	// Building memoryd from empty caches takes minutes on two cores.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = walkthroughEnv(t, dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second // a background memoryd left running holds the pipes
	runErr := cmd.Run()
	out := stdout.String()
	t.Logf("the walkthrough printed:\n%s\nstderr:\n%s", out, stderr.String())
	if runErr != nil {
		t.Errorf("bash: %v", runErr)
	}

	m := walkthroughURL.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf(`no line "memoryd (pid N) at http://127.0.0.1:PORT": its memoryd did not start`)
	}
	if m[3] == "7411" {
		t.Errorf("the walkthrough's memoryd listens on the default port %s, want a free one", m[2])
	}
	// The answers: the line after each "# expect" line, in order.
	type answer struct{ expect, got string }
	var answers []answer
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "# expect") {
			a := answer{expect: l}
			if i+1 < len(lines) {
				a.got = lines[i+1]
			}
			answers = append(answers, a)
		}
	}
	if len(answers) != 6 {
		t.Fatalf("%d \"# expect\" lines, want 6 (attach, write, read, events, tasks, stopped)", len(answers))
	}
	var task string
	checks := []func(a answer) bool{
		func(a answer) bool { // attach
			tm := ulidField.FindStringSubmatch(a.got)
			if tm == nil || !strings.Contains(a.got, `"agent":"/root"`) || !strings.Contains(a.got, `"resumed":false`) {
				return false
			}
			task = tm[1]
			return true
		},
		func(a answer) bool { return strings.Contains(a.got, `"created":true`) },
		func(a answer) bool { return strings.Contains(a.got, `"text":"goal: ship memoryd\n"`) },
		func(a answer) bool {
			return task != "" && strings.Contains(a.got, `"task_id":"`+task+`"`) &&
				strings.Contains(a.got, `"type":"task.created"`) && strings.Contains(a.got, `"type":"agent.registered"`) &&
				strings.Contains(a.got, `"type":"note.written"`)
		},
		func(a answer) bool {
			return task != "" && strings.HasPrefix(a.got, `{"tasks":[{"task_id":"`+task+`"`) &&
				strings.Contains(a.got, `"agent":"/root"`) && strings.Contains(a.got, `"window_id":"w1"`) &&
				strings.Contains(a.got, `"phase":"READY"`)
		},
	}
	for i, check := range checks {
		if !check(answers[i]) {
			t.Errorf("after %q the walkthrough printed %q", answers[i].expect, answers[i].got)
		}
	}
	if got := answers[5].expect; got != "# expect memoryd stopped: exit 0" {
		t.Errorf("the walkthrough's last # expect line is %q, want \"# expect memoryd stopped: exit 0\"", got)
	}
	u, err := url.Parse(m[2])
	if err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", u.Host, 2*time.Second); err == nil {
		c.Close()
		t.Errorf("the walkthrough's memoryd still listens on %s", u.Host)
		if pid, err := strconv.Atoi(m[1]); err == nil { // do not leave it running
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
	if other != nil && calledBeyondHealth(other.String()) {
		t.Errorf("the memoryd on 7411 was called by the walkthrough:\n%s", other.String())
	}
}

// calledBeyondHealth reports whether a memoryd's log shows a request other
// than GET /healthz. The walkthrough's memoryd is on another port (checked
// above) and every call of the walkthrough is a /v1 one; a /healthz on
// 7411 is any other memoryd of the machine (another test run's) asking
// who holds the default address it found taken.
func calledBeyondHealth(log string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"msg":"request"`) && !strings.Contains(line, `"route":"/healthz"`) {
			return true
		}
	}
	return false
}
