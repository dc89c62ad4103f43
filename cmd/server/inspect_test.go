package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/memorytest"
)

var loginLinkLine = regexp.MustCompile(`^open once to log in: (http://127\.0\.0\.1:[0-9]+)(/ui/login/once\?code=[0-9a-f]{64})$`)

// startInspect runs the inspect verb with args and returns its base URL
// and its one-time login link, and a stop that cancels it and returns
// its result.
func startInspect(t *testing.T, args ...string) (base, link string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	stderr := &memorytest.Buffer{}
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"inspect"}, args...), env(nil), strings.NewReader(""), pw, stderr)
		pw.Close()
		done <- err
	}()
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var stopped bool
	var result error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case result = <-done:
			case <-time.After(60 * time.Second):
				t.Error("inspect did not stop")
			}
		}
		return result
	}
	t.Cleanup(func() { stop() })
	for i := range 2 {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("inspect printed %d lines; stderr:\n%s", i, stderr.String())
			}
			if i == 0 {
				m := listeningLine.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("first line %q", line)
				}
				base = m[1]
			} else {
				m := loginLinkLine.FindStringSubmatch(line)
				if m == nil || m[1] != base {
					t.Fatalf("second line %q, want the one-time link on %s", line, base)
				}
				link = m[1] + m[2]
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("inspect printed no URL; stderr:\n%s", stderr.String())
		}
	}
	return base, link, stop
}

// TestInspectServesALogReadOnly: inspect FILE.jsonl imports a scenario
// log, serves the inspector alone (no /v1 route) and prints a one-time
// link that logs a browser in once; its pages show the log's task; it
// stops on cancel with exit 0.
func TestInspectServesALogReadOnly(t *testing.T) {
	log := fxLog("fenced-checkpoint-retry")
	task := fxTask(t, log)
	base, link, stop := startInspect(t, log)
	if strings.Contains(link, "token") {
		t.Errorf("link %q", link)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(c *http.Client, url string) (int, string) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, _ := get(c, link); st != http.StatusSeeOther {
		t.Fatalf("the login link: %d", st)
	}
	st, body := get(c, base+"/ui")
	if st != http.StatusOK || !strings.Contains(body, `id="task-`+task+`"`) {
		t.Fatalf("/ui: %d, task %s shown: %v", st, task, strings.Contains(body, task))
	}
	st, body = get(c, base+"/ui/tasks/"+task+"/agents/root")
	if st != http.StatusOK || !strings.Contains(body, `id="tokens-plot"`) || !strings.Contains(body, `class="step"`) {
		t.Errorf("timeline: %d", st)
	}
	other, _ := cookiejar.New(nil)
	if st, _ := get(&http.Client{Jar: other, CheckRedirect: c.CheckRedirect}, link); st != http.StatusUnauthorized {
		t.Errorf("the link used again: %d, want 401", st)
	}
	for _, p := range []string{"/v1/tasks", "/v1/events", "/metrics"} {
		req, _ := http.NewRequest("GET", base+p, nil)
		req.Header.Set("Authorization", "Bearer x")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s beside inspect: %d, want 404", p, resp.StatusCode)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("inspect stopped with %v", err)
	}
}

// TestInspectDatabase: inspect --db F shows an existing database and
// leaves its log as it was.
func TestInspectDatabase(t *testing.T) {
	log := fxLog("cross-agent-notes")
	db := filepath.Join(t.TempDir(), "m.db")
	fxMust(t, "import", log, "--db", db)
	before := fxMust(t, "export", "--db", db)
	base, link, stop := startInspect(t, "--db", db)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(link) // follows to /ui
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), fxTask(t, log)) || resp.Request.URL.String() != base+"/ui" {
		t.Errorf("after the link: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if after := fxMust(t, "export", "--db", db); after != before {
		t.Error("inspect --db changed the log")
	}
}
