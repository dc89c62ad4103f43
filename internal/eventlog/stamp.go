package eventlog

import (
	"bytes"
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
)

// CommitStamp identifies the state of the database that a read
// transaction starting now would see: two equal stamps read at two times
// mean that no connection, in this process or another, committed anything
// in between.
//
// It is SQLite's wal-index header, the 48 bytes at the start of the
// database's "-shm" file (https://www.sqlite.org/walformat.html, "The
// WAL-Index Header"). Every commit rewrites it (its change counter, the
// WAL's last frame, its checksum), and a read transaction takes its
// snapshot from it, so it changes exactly when what a new reader sees
// may change.
type CommitStamp [walIndexHeaderSize]byte

const (
	walIndexHeaderSize = 48
	walIndexVersion    = 3007000 // iVersion of the header SQLite writes
)

// CommitStamp returns the database's commit stamp, or false when it
// cannot be read: before the first connection made the -shm file, or while
// a commit is rewriting it (its two copies differ), or on any error. The
// caller then reads through SQLite, as it would without stamps.
//
// A log on PostgreSQL has no stamp (always false): other servers commit
// to it, and no file tells this one when.
func (s *Store) CommitStamp() (CommitStamp, bool) {
	if s.walIndex == nil {
		return CommitStamp{}, false
	}
	return s.walIndex.stamp()
}

// walIndex reads the wal-index header of one database. The -shm file is
// kept open, and opened anew when it has been removed (SQLite removes it
// when the last connection to the database closes and makes a new one
// with the next: a header read from the old one would never change again).
// While a store is open its own connections hold the file (SQLite removes
// it only when it can lock the database exclusively), so that happens
// only when they are all gone, and the check costs one fstat, no path
// lookup.
//
// A descriptor of the file is closed only once the file is removed.
// Closing any descriptor of a file drops every POSIX lock the process
// holds on it, SQLite's own included ("How To Corrupt An SQLite Database
// File", §2.2): SQLite's connections to a removed file are all gone, but
// those of another store of this process on the same database would lose
// their locks on a file still in use.
type walIndex struct {
	path   string
	mu     sync.Mutex // serialises opening and closing
	open   atomic.Pointer[os.File]
	closed bool // under mu
}

func newWALIndex(dbPath string) *walIndex { return &walIndex{path: dbPath + "-shm"} }

func (w *walIndex) stamp() (CommitStamp, bool) {
	var st CommitStamp
	f := w.open.Load()
	stale := f == nil
	if f != nil {
		gone, ok := removed(f)
		if !ok {
			return st, false
		}
		stale = gone
	}
	if stale {
		var err error
		if f, err = w.reopen(f); err != nil || f == nil {
			return st, false
		}
	}
	var buf [2 * walIndexHeaderSize]byte
	if n, _ := f.ReadAt(buf[:], 0); n != len(buf) {
		return st, false
	}
	first, second := buf[:walIndexHeaderSize], buf[walIndexHeaderSize:]
	// SQLite writes the second copy, then the first; a reader that finds
	// them different retries. So do we, by not answering.
	if !bytes.Equal(first, second) || binary.NativeEndian.Uint32(first[0:4]) != walIndexVersion || first[12] != 1 {
		return st, false
	}
	copy(st[:], first)
	return st, true
}

// reopen opens the -shm file at the path in place of stale (nil: none was
// open; else its file is removed), unless another caller did already. It
// returns nil once the index is closed.
func (w *walIndex) reopen(stale *os.File) (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, nil
	}
	if f := w.open.Load(); f != stale {
		return f, nil
	}
	f, err := os.Open(w.path)
	if err != nil {
		return nil, err
	}
	if stale != nil {
		stale.Close() // removed: no lock of anyone's is on it; a concurrent ReadAt finishes first (os.File counts its uses)
	}
	w.open.Store(f)
	return f, nil
}

// keptOpen holds the descriptors close could not close (their files were
// still in use), so that no finalizer closes them either.
var keptOpen struct {
	sync.Mutex
	files []*os.File
}

// close stops reading stamps. Call it after the store's connections are
// closed: the descriptor is closed if the file is removed by then, and
// kept open otherwise (see walIndex).
func (w *walIndex) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	f := w.open.Swap(nil)
	if f == nil {
		return
	}
	if gone, ok := removed(f); ok && gone {
		f.Close()
		return
	}
	keptOpen.Lock()
	keptOpen.files = append(keptOpen.files, f)
	keptOpen.Unlock()
}
