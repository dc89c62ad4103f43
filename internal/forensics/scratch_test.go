package forensics_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/memoryd/memoryd/internal/forensics"
)

// useScratchFolder points Scratch at a scratch folder in a data folder of
// the test's, and back at the system's temporary folder when it ends.
func useScratchFolder(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "memoryd", "scratch")
	forensics.SetScratchFolder(dir)
	t.Cleanup(func() { forensics.SetScratchFolder("") })
	return dir
}

// A past-state copy (the notes' text) is made under memoryd's scratch
// folder, in this process's folder, every folder 0700; cleanup removes it.
func TestScratchCopiesAreInTheDataFolder(t *testing.T) {
	dir := useScratchFolder(t)
	svc, cleanup, err := forensics.Scratch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "pid-"+strconv.Itoa(os.Getpid()))
	copies, err := filepath.Glob(filepath.Join(own, "*", "replay.db"))
	if err != nil || len(copies) != 1 {
		t.Fatalf("copies in %s: %v (%v), want one replay.db", own, copies, err)
	}
	for _, d := range []string{dir, own, filepath.Dir(copies[0])} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v (%v), want a folder 0700", d, fi.Mode(), err)
		}
	}
	_ = svc
	cleanup()
	if _, err := os.Stat(filepath.Dir(copies[0])); !os.IsNotExist(err) {
		t.Errorf("after cleanup the copy's folder: %v, want removed", err)
	}
}

// A start removes the copies of a memoryd that no longer runs (killed:
// its folder and copy left as it made them) and keeps those of a memoryd
// that runs (here the test's parent process) and anything it did not make.
func TestStaleScratchIsRemovedAtStart(t *testing.T) {
	dir := useScratchFolder(t)
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	plant := func(pid int) string {
		copyDir := filepath.Join(dir, "pid-"+strconv.Itoa(pid), "copy-1")
		if err := os.MkdirAll(copyDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, "replay.db"), []byte("notes"), 0o600); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(copyDir)
	}
	dead, live := plant(exited.Process.Pid), plant(os.Getppid())
	other := filepath.Join(dir, "not-ours")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := forensics.RemoveStaleScratch(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a killed process's copies %s: %v, want removed", dead, err)
	}
	for _, kept := range []string{live, other} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s: %v, want kept", kept, err)
		}
	}
	if err := forensics.RemoveStaleScratch(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("a missing scratch folder: %v, want nothing to do", err)
	}
}
