package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// inspect's temporary database (the notes' text) is made in the scratch
// folder of memoryd's data folder, 0700, not in the system's temporary
// folder; after a SIGKILL it is left there, and the next memoryd to start
// removes it (it stayed in the temporary folder for good).
func TestInspectScratchCopyIsRemovedAfterAKill(t *testing.T) {
	xdg, tmp := t.TempDir(), t.TempDir()
	logFile := filepath.Join(t.TempDir(), "empty.jsonl")
	if err := os.WriteFile(logFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), childEnv+"=serve", "XDG_DATA_HOME="+xdg, "TMPDIR="+tmp)
	cmd := exec.Command(os.Args[0], "inspect", logFile)
	cmd.Env = env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil { // the child exits when it closes (TestMain)
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	if sc := bufio.NewScanner(out); !sc.Scan() { // "listening on ...": the log is imported
		t.Fatal("inspect printed nothing")
	}
	go io.Copy(io.Discard, out)

	scratch := filepath.Join(xdg, "memoryd", "scratch")
	own := filepath.Join(scratch, "pid-"+strconv.Itoa(cmd.Process.Pid))
	copies, _ := filepath.Glob(filepath.Join(own, "*", "replay.db"))
	if len(copies) != 1 {
		left, _ := filepath.Glob(filepath.Join(tmp, "*"))
		t.Fatalf("copies in %s: %v, want one replay.db (the temporary folder has %v)", own, copies, left)
	}
	for _, d := range []string{scratch, own, filepath.Dir(copies[0])} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v (%v), want a folder 0700", d, fi.Mode(), err)
		}
	}
	cmd.Process.Kill()
	cmd.Wait() // reaped: its pid runs no more

	next := exec.Command(os.Args[0], "help")
	next.Env = env
	stdin, keep, err := os.Pipe() // held open: the child exits when its stdin closes
	if err != nil {
		t.Fatal(err)
	}
	defer keep.Close()
	next.Stdin = stdin
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("memoryd help: %v\n%s", err, out)
	}
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Errorf("the killed inspect's copies %s after the next start: %v, want removed", own, err)
	}
}
