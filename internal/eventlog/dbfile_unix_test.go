//go:build unix

package eventlog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
)

// TestOpenCreatesPrivateFiles: the database and the -wal and -shm files
// SQLite makes beside it are 0600 whatever the umask, so no other local
// user can read the notes. It sets the process's umask: it must not run
// in parallel with tests that create files.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	for _, umask := range []int{0o022, 0o000} {
		func() {
			defer syscall.Umask(syscall.Umask(umask))
			path := filepath.Join(t.TempDir(), "m.db")
			s := openFile(t, path, Options{})
			defer s.Close()
			if _, err := appendOne(t, s, "t1/root", 0, events.TypeNoteAppended, note("t1", "/root", "secret")); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Stat(name)
				if err != nil {
					t.Errorf("umask %03o: %v", umask, err)
				} else if perm := fi.Mode().Perm(); perm != 0o600 {
					t.Errorf("umask %03o: %s has mode %04o, want 0600", umask, filepath.Base(name), perm)
				}
			}
		}()
	}
}

// TestOpenWarnsOfExposedDatabase: opening a database that other users can
// read (made by an earlier version, or copied) says so, naming the file
// and the fix; a private one opens without a word.
func TestOpenWarnsOfExposedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	var warnings []string
	warnf := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	openFile(t, path, Options{Warnf: warnf}).Close()
	if len(warnings) != 0 {
		t.Fatalf("creating a database warned: %q", warnings)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		warnings = nil
		openFile(t, path, Options{Warnf: warnf}).Close()
		want := fmt.Sprintf("%s is accessible to other users (mode %04o): they can read every note in it; fix: chmod 600 %s", path, mode, path)
		if len(warnings) != 1 || warnings[0] != want {
			t.Errorf("mode %04o: warnings %q, want [%q]", mode, warnings, want)
		}
	}
	// A -wal left readable by others is named too.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+"-wal", 0o644); err != nil {
		t.Fatal(err)
	}
	warnings = nil
	openFile(t, path, Options{Warnf: warnf}).Close()
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], path+"-wal is accessible") || !strings.HasSuffix(warnings[0], "chmod 600 "+path+"-wal") {
		t.Errorf("an exposed -wal: warnings %q", warnings)
	}
	warnings = nil
	openFile(t, path, Options{Warnf: warnf}).Close()
	if len(warnings) != 0 {
		t.Errorf("a private database warned: %q", warnings)
	}
}
