package eventlog

import (
	"bytes"
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
)

// CommitStamp identifies the state of the database that a read
// transaction starting now would see. Two equal stamps mean that no
// connection of any process committed anything in between. It is SQLite's
// wal-index header from the -shm file; see docs/contract-notes.md.
type CommitStamp [walIndexHeaderSize]byte

const (
	walIndexHeaderSize = 48
	walIndexVersion    = 3007000 // iVersion of the header SQLite writes
)

// CommitStamp returns the database's commit stamp, or false when it cannot
// be read. The caller then reads through SQLite, as it would without stamps.
func (s *Store) CommitStamp() (CommitStamp, bool) {
	// A log on PostgreSQL has no stamp, since other servers commit to it
	// and no file tells this one when.
	if s.walIndex == nil {
		return CommitStamp{}, false
	}
	return s.walIndex.stamp()
}

// walIndex reads the wal-index header of one database.
// It keeps the -shm file open and opens it anew once SQLite has removed it.
// It closes a descriptor only once the file is removed, because closing one
// drops the process's POSIX locks on it; see docs/contract-notes.md.
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
		// SQLite removes the file when the last connection closes and makes
		// a new one with the next, and the old header would never change
		// again. The store's own connections hold it while it is open, so
		// this is rare, and the check costs one fstat.
		gone, ok := removed(f)
		if !ok {
			return st, false
		}
		stale = gone
	}
	if stale {
		var err error
		if f, err = w.reopen(f); err != nil || f == nil { // no -shm file yet, or closed
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

// reopen opens the -shm file in place of stale, unless another caller did
// already. stale is nil when none was open. It returns nil once the index
// is closed.
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
		stale.Close() // removed, so no one's lock is on it; os.File lets a concurrent ReadAt finish first
	}
	w.open.Store(f)
	return f, nil
}

// keptOpen holds the descriptors of files still in use that close could
// not close, so that no finalizer closes them either.
var keptOpen struct {
	sync.Mutex
	files []*os.File
}

// close stops reading stamps. Call it after the store's connections are
// closed, so the descriptor is closed if the file is removed by then.
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
