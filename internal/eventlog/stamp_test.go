package eventlog

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
)

// TestCommitStampMovesWithEveryCommit: the stamp stays while nothing is
// committed (reads included) and moves with every commit, the store's own
// and another connection's.
func TestCommitStampMovesWithEveryCommit(t *testing.T) {
	s := openStore(t, nil)
	stamp := func(what string) CommitStamp {
		t.Helper()
		st, ok := s.CommitStamp()
		if !ok {
			t.Fatalf("%s: no stamp", what)
		}
		return st
	}
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "a")); err != nil {
		t.Fatal(err)
	}
	first := stamp("after an append")
	readAll(t, s)
	if got := stamp("after a read"); got != first {
		t.Fatal("a read moved the stamp")
	}
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "b")); err != nil {
		t.Fatal(err)
	}
	second := stamp("after a second append")
	if second == first {
		t.Fatal("an append did not move the stamp")
	}

	other, err := sql.Open("sqlite", FileURI(dbPath(t, s), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`CREATE TABLE stamp_probe (a)`); err != nil {
		t.Fatal(err)
	}
	third := stamp("after another connection's commit")
	if third == second {
		t.Fatal("another connection's commit did not move the stamp")
	}
	if _, err := other.Exec(`INSERT INTO stamp_probe VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if stamp("after its second commit") == third {
		t.Fatal("another connection's second commit did not move the stamp")
	}
}

// TestCommitStampFollowsANewSHMFile: when every connection has closed,
// SQLite removes the -shm file and the next connection makes a new one;
// the stamp is then read from the new file, not from the removed one.
func TestCommitStampFollowsANewSHMFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	w := newWALIndex(path)
	defer w.close()
	if _, ok := w.stamp(); ok {
		t.Fatal("a stamp before the database exists")
	}
	exec := func(db *sql.DB, queries ...string) {
		t.Helper()
		for _, q := range queries {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	db, err := sql.Open("sqlite", FileURI(path, url.Values{"_pragma": {"journal_mode(WAL)"}}))
	if err != nil {
		t.Fatal(err)
	}
	exec(db, `CREATE TABLE a (x)`, `INSERT INTO a VALUES (1)`, `INSERT INTO a VALUES (2)`)
	before, ok := w.stamp()
	if !ok {
		t.Fatal("no stamp")
	}
	db.Close()
	if _, err := os.Stat(path + "-shm"); !os.IsNotExist(err) {
		t.Fatalf("the -shm file is still there after the last close (%v): the test cannot show anything", err)
	}
	db, err = sql.Open("sqlite", FileURI(path, url.Values{"_pragma": {"journal_mode(WAL)"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	exec(db, `INSERT INTO a VALUES (3)`)
	after, ok := w.stamp()
	if !ok {
		t.Fatal("no stamp from the new -shm file")
	}
	if after == before {
		t.Fatal("the stamp did not move: read from the removed -shm file")
	}
	exec(db, `INSERT INTO a VALUES (4)`)
	if again, _ := w.stamp(); again == after {
		t.Fatal("a commit after the new -shm file did not move the stamp")
	}
}

// dbPath is the store's database file.
func dbPath(tb testing.TB, s *Store) string {
	tb.Helper()
	var seq int
	var name, file string
	if err := s.Reader().QueryRowContext(context.Background(), `PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		tb.Fatal(err)
	}
	return file
}

// TestWALIndexClosesOnlyARemovedFile: closing a descriptor of the -shm
// file would drop every POSIX lock this process holds on it, SQLite's
// included, so close keeps it open while the file is in use and closes it
// once SQLite has removed the file.
func TestWALIndexClosesOnlyARemovedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	db, err := sql.Open("sqlite", FileURI(path, url.Values{"_pragma": {"journal_mode(WAL)"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE a (x)`); err != nil {
		t.Fatal(err)
	}
	kept := func() int {
		keptOpen.Lock()
		defer keptOpen.Unlock()
		return len(keptOpen.files)
	}

	inUse := newWALIndex(path)
	if _, ok := inUse.stamp(); !ok {
		t.Fatal("no stamp")
	}
	before := kept()
	inUse.close()
	if kept() != before+1 {
		t.Fatal("close closed the descriptor of a -shm file still in use")
	}
	if _, ok := inUse.stamp(); ok {
		t.Fatal("a stamp after close")
	}

	removedLater := newWALIndex(path)
	if _, ok := removedLater.stamp(); !ok {
		t.Fatal("no stamp")
	}
	db.Close() // the last connection: SQLite removes the -shm file
	if _, err := os.Stat(path + "-shm"); !os.IsNotExist(err) {
		t.Fatalf("the -shm file is still there after the last close (%v)", err)
	}
	before = kept()
	removedLater.close()
	if kept() != before {
		t.Fatal("close kept the descriptor of a removed -shm file")
	}
}

// BenchmarkCommitStamp: what a note read served from the cache pays for
// each of its two stamps (an fstat and a pread).
func BenchmarkCommitStamp(b *testing.B) {
	s := openStore(b, nil)
	if _, err := appendOne(b, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "a")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, ok := s.CommitStamp(); !ok {
			b.Fatal("no stamp")
		}
	}
}
