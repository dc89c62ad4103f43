package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/version"
)

// TestVersion: "memoryd version", "--version" and "-version" print the
// same line, which names the version and commit /healthz gives.
func TestVersion(t *testing.T) {
	var lines []string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out bytes.Buffer
		if err := run(context.Background(), args, env(nil), nil, &out, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		lines = append(lines, out.String())
	}
	v := version.Get()
	want := fmt.Sprintf("memoryd %s (commit %s, %s, ", v.Version, v.Commit, v.GoVersion)
	for i, l := range lines {
		if !strings.HasPrefix(l, want) || l != lines[0] {
			t.Errorf("line %d %q, want the same line starting %q", i, l, want)
		}
	}
	if err := run(context.Background(), []string{"version", "extra"}, env(nil), nil, io.Discard, io.Discard); exitCode(err) != 2 {
		t.Errorf("version extra: %v, want a usage error", err)
	}
}

// TestHelpOfHelp: "memoryd help -h" is the verb list, not a usage error.
func TestHelpOfHelp(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"help", "-h"}, env(nil), nil, &out, io.Discard); err != nil || !strings.Contains(out.String(), "Verbs:") {
		t.Errorf("help -h: %v\n%s", err, out.String())
	}
}

// TestServeBusyPortSaysWhoHoldsIt: on a taken address, serve names what
// holds it and what to do: a memoryd (its version and pid, memoryd
// stop), a program that answers HTTP but is not memoryd, or one that does
// not answer HTTP (a free port with --addr 127.0.0.1:0).
func TestServeBusyPortSaysWhoHoldsIt(t *testing.T) {
	getenv := env(map[string]string{"MEMORYD_TOKEN": "token-of-the-test"})
	serveOn := func(addr string) error {
		return run(context.Background(), []string{"serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "m.db")}, getenv, nil, io.Discard, io.Discard)
	}
	first := startServe(t, filepath.Join(t.TempDir(), "first.db"), getenv)
	addr := strings.TrimPrefix(first.url, "http://")
	v := version.Get()
	err := serveOn(addr)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), fmt.Sprintf("in use by memoryd %s (commit %s, pid ", v.Version, v.Commit)) ||
		!strings.Contains(err.Error(), "memoryd stop --addr "+addr) || !strings.Contains(err.Error(), "--addr 127.0.0.1:0") {
		t.Errorf("on a memoryd's address: %v", err)
	}

	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusTeapot) })}
	wl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go web.Serve(wl)
	defer web.Close()
	if err := serveOn(wl.Addr().String()); err == nil || !strings.Contains(err.Error(), "a program that is not memoryd") ||
		!strings.Contains(err.Error(), "answered 418") || strings.Contains(err.Error(), "memoryd stop") {
		t.Errorf("on another web server's address: %v", err)
	}

	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	go func() {
		for {
			c, err := raw.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if err := serveOn(raw.Addr().String()); err == nil || !strings.Contains(err.Error(), "a program that does not answer HTTP") ||
		!strings.Contains(err.Error(), "--addr 127.0.0.1:0") {
		t.Errorf("on a non-HTTP listener's address: %v", err)
	}
}

// TestStop: memoryd stop stops the memoryd on --addr that proves it holds
// the token (its serve returns as on SIGTERM, the database closed, the
// address free); a memoryd of another token is left running; nothing
// listening is nothing to stop.
func TestStop(t *testing.T) {
	dir := t.TempDir()
	getenv := env(map[string]string{"HOME": dir})
	s := startServe(t, filepath.Join(dir, "m.db"), getenv)
	addr := strings.TrimPrefix(s.url, "http://")

	other := env(map[string]string{"HOME": dir, "MEMORYD_TOKEN": "not-its-token"})
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"stop", "--addr", addr, "--db", filepath.Join(dir, "m.db")}, other, nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "does not hold this token") {
		t.Fatalf("stop with another token: %v", err)
	}
	if !probe(context.Background(), addr).memoryd {
		t.Fatal("a stop with another token stopped it")
	}

	out.Reset()
	if err := run(context.Background(), []string{"stop", "--addr", addr, "--db", filepath.Join(dir, "m.db")}, getenv, nil, &out, &errOut); err != nil {
		t.Fatalf("stop: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "stopped memoryd (pid ") {
		t.Errorf("stop printed %q", out.String())
	}
	if err := <-s.done; err != nil {
		t.Errorf("serve after stop: %v", err)
	}
	s.done <- nil // for the cleanup
	if line := logLine(t, s.stderr.String(), "stopped: the database is closed"); line == nil {
		t.Errorf("no closing line in:\n%s", s.stderr.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"stop", "--addr", addr}, getenv, nil, &out, io.Discard); err != nil || !strings.Contains(out.String(), "nothing to stop") {
		t.Errorf("stop with nothing listening: %v %q", err, out.String())
	}
}
