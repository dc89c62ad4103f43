package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a server subprocess, memoryd or a bare server, that printed
// "listening on http://HOST:PORT".
type proc struct {
	name     string
	cmd      *exec.Cmd
	url      string
	started  time.Time // just before exec
	listened time.Time // when the listening line was read
	done     chan struct{}
	waitErr  error
	log      *tail
}

// startProc runs argv and waits for its listening line on stdout.
// env is added to this process's environment. The process's stderr goes to
// progress, prefixed with name, and its last lines are kept.
func startProc(ctx context.Context, name string, argv []string, env []string, progress io.Writer) (*proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: &tail{prefix: name + ": ", out: progress}}
	cmd.Stderr = p.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
			if line := sc.Text(); !found && strings.HasPrefix(line, "listening on http://") {
				found = true
				lines <- strings.TrimPrefix(line, "listening on ")
			}
		}
		close(lines)
	}()
	timeout := time.NewTimer(5 * time.Minute)
	defer timeout.Stop()
	select {
	case u, ok := <-lines:
		if ok {
			p.url, p.listened = u, time.Now()
			return p, nil
		}
		<-p.done
		return nil, fmt.Errorf("%s exited before listening (%v)%s", name, p.waitErr, p.log.last())
	case <-timeout.C:
		err = fmt.Errorf("%s printed no listening line in 5 minutes", name)
	case <-ctx.Done():
		err = ctx.Err()
	}
	cmd.Process.Kill()
	<-p.done
	return nil, err
}

// pid is the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits. Anything but a clean exit is an error.
func (p *proc) stop() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s had exited by itself (%v)%s", p.name, p.waitErr, p.log.last())
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within a minute of SIGTERM", p.name)
	}
	if p.waitErr != nil {
		return fmt.Errorf("%s: %v%s", p.name, p.waitErr, p.log.last())
	}
	return nil
}

// tail forwards a process's stderr line by line and keeps the last few
// lines for error messages.
type tail struct {
	prefix string
	out    io.Writer
	mu     sync.Mutex
	buf    []byte
	lines  []string
	// watch is the text await waits for. found gets the first line
	// written afterwards that holds it.
	watch string
	found chan string
}

// await waits, at most timeout, for a stderr line holding s and returns it.
func (t *tail) await(ctx context.Context, s string, timeout time.Duration) (string, error) {
	t.mu.Lock()
	for _, l := range t.lines {
		if strings.Contains(l, s) {
			t.mu.Unlock()
			return l, nil
		}
	}
	t.watch, t.found = s, make(chan string, 1)
	found := t.found
	t.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case l := <-found:
		return l, nil
	case <-timer.C:
		return "", fmt.Errorf("no stderr line holding %s in %s%s", s, timeout, t.last())
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		line := string(t.buf[:i])
		t.buf = t.buf[i+1:]
		fmt.Fprintf(t.out, "%s%s\n", t.prefix, line)
		t.lines = append(t.lines, line)
		if t.watch != "" && strings.Contains(line, t.watch) {
			t.found <- line
			t.watch = ""
		}
		if len(t.lines) > 20 {
			t.lines = t.lines[1:]
		}
	}
	return len(b), nil
}

func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	return "; its last stderr lines:\n" + strings.Join(t.lines, "\n")
}
