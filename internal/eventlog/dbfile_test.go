package eventlog

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
)

// openFile opens the store at path with a projector that does nothing.
func openFile(tb testing.TB, path string, opts Options) *Store {
	tb.Helper()
	opts.Projector = testProjector{}
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("open %q: %v", path, err)
	}
	return s
}

// filesUnder lists the files (not folders) under root, slash-separated
// and relative to it.
func filesUnder(tb testing.TB, root string) []string {
	tb.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestOpenAnyFileName: a database whose name (or folder's name) holds a
// character that means something in an SQLite URI ('#', '?', '%') or is
// not plain ASCII opens, keeps what was written across a reopen, and is
// the file of exactly that name: nothing else appears beside it or in a
// parent folder ("C#proj/memory.db" once made a database "C").
func TestOpenAnyFileName(t *testing.T) {
	for _, name := range []string{
		"C#proj/memory.db",
		"q/a?b.db",
		"x?y/memory.db",
		"100%.db",
		"a%20b.db",
		"%3F%23.db",
		"with space/my notes.db",
		"café/mémoire.db",
		"笔记/メモ.db",
		"a #1?%2541 é笔?&=+;:@$,!'()*[].db",
		"#",
		"?",
	} {
		t.Run(name, func(t *testing.T) {
			if runtime.GOOS == "windows" && strings.ContainsAny(name, `?*:`) {
				t.Skip("not a file name on Windows")
			}
			root := t.TempDir()
			path := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			s := openFile(t, path, Options{})
			if _, err := appendOne(t, s, "t1/root", 0, events.TypeNoteAppended, note("t1", "/root", "kept")); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openFile(t, path, Options{})
			evs := readAll(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"kept"`) {
				t.Errorf("after a reopen the log is %v, want the one event written", evs)
			}
			if got := filesUnder(t, root); !slices.Equal(got, []string{name}) {
				t.Errorf("files under the folder: %q, want only %q", got, name)
			}
		})
	}
	// A relative name too, as --db takes it.
	t.Run("relative", func(t *testing.T) {
		root := t.TempDir()
		t.Chdir(root)
		name := "C#proj/a b%25é.db"
		if err := os.Mkdir("C#proj", 0o700); err != nil {
			t.Fatal(err)
		}
		openFile(t, filepath.FromSlash(name), Options{}).Close()
		if got := filesUnder(t, root); !slices.Equal(got, []string{name}) {
			t.Errorf("files under the folder: %q, want only %q", got, name)
		}
	})
}
