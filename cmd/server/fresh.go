package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// freshDatabase is a database that a verb is about to create: its file
// and the folders above it that do not exist yet. A verb that is all or
// nothing (import, import-session, replay --db) removes what it created
// when it fails, so that a refusal leaves no file behind.
type freshDatabase struct {
	files   []string // the database and the files SQLite keeps beside it
	folders []string // deepest first
}

// newDatabase returns what creating the database at path creates, or nil
// when it exists already: then its files are SQLite's to keep or remove
// (another process may have it open), and a failure leaves them.
func newDatabase(path string) *freshDatabase {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	d := &freshDatabase{files: []string{path, path + "-wal", path + "-shm", path + "-journal"}}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			break
		}
		d.folders = append(d.folders, dir)
	}
	return d
}

// remove removes the database's files and the folders created for it (a
// folder only if it is empty). The database must be closed.
func (d *freshDatabase) remove() {
	if d == nil {
		return
	}
	for _, f := range d.files {
		os.Remove(f)
	}
	for _, dir := range d.folders {
		os.Remove(dir)
	}
}
