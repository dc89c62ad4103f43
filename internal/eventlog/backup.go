package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
)

// ErrNoBackup reports a store whose engine memoryd does not back up
// itself: PostgreSQL's own tools do it (docs/durability.md).
var ErrNoBackup = errors.New("memoryd backs up SQLite databases only: back up PostgreSQL with pg_dump or pg_basebackup, " +
	"or take the log with memoryd export (docs/durability.md)")

// Backup writes a consistent copy of the database to the new file dest,
// while the store (and other processes) may go on writing: SQLite's
// VACUUM INTO reads one snapshot. The copy is made
// under a temporary name in dest's folder, synced, made private (0600)
// and then renamed to dest, so dest is either whole or absent. It
// returns the log's last position in the copy.
func (s *Store) Backup(ctx context.Context, dest string) (int64, error) {
	if s.file == "" {
		return 0, ErrNoBackup
	}
	if _, err := os.Lstat(dest); err == nil {
		return 0, fmt.Errorf("%s exists: a backup is written to a new file", dest)
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.partial")
	if err != nil {
		return 0, fmt.Errorf("create the backup beside %s: %w", dest, err)
	}
	name := tmp.Name()
	tmp.Close()
	os.Remove(name) // VACUUM INTO writes a new file only
	done := false
	defer func() {
		if !done {
			os.Remove(name)
		}
	}()
	// VACUUM INTO copies one snapshot. It runs on a connection of its
	// own, as the readers are read-only and the writer must go on
	// writing, and in no transaction, so the copy's last position is read
	// from the copy.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	src, err := sql.Open("sqlite", FileURI(s.file, q))
	if err != nil {
		return 0, err
	}
	_, err = src.ExecContext(ctx, "VACUUM INTO ?", name)
	src.Close()
	if err != nil {
		return 0, fmt.Errorf("copy the database: %w", err)
	}
	last, err := backupPosition(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("read the copy: %w", err)
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	err = errors.Join(f.Chmod(0o600), f.Sync(), f.Close())
	if err != nil {
		return 0, err
	}
	if err := os.Rename(name, dest); err != nil {
		return 0, err
	}
	done = true
	if d, err := os.Open(filepath.Dir(dest)); err == nil {
		d.Sync() // the rename, durable where the folder can be synced
		d.Close()
	}
	return last, nil
}

// File returns the path of the database's file, or "" when its engine
// keeps it elsewhere (PostgreSQL).
func (s *Store) File() string { return s.file }

// backupPosition reads the last log position of the SQLite file path.
func backupPosition(ctx context.Context, path string) (int64, error) {
	db, err := sql.Open("sqlite", FileURI(path, nil))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return eventsdb.New(db).LastPosition(ctx)
}
