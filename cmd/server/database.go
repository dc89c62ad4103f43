package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memoryd/memoryd/internal/memory"
)

// defaultDBPath returns MEMORYD_DB, else memory.db in the default data
// folder (defaultDataDir).
func defaultDBPath(getenv func(string) string) (string, error) {
	if p := getenv("MEMORYD_DB"); p != "" {
		return p, checkDatabase(p)
	}
	dir, err := defaultDataDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "memory.db"), nil
}

// checkDatabase refuses a database (--db, MEMORYD_DB) that names
// PostgreSQL, starting with "postgres:" or "postgresql:" in any case, but
// is not a postgres:// or postgresql:// URL: memoryd would take it for an
// SQLite file named "postgres:" (two servers meant to share a database
// would write two files). The value is not repeated: it may hold a
// password.
func checkDatabase(db string) error {
	lower := strings.ToLower(db)
	if memory.IsPostgres(db) || !strings.HasPrefix(lower, "postgres:") && !strings.HasPrefix(lower, "postgresql:") {
		return nil
	}
	return &usageError{"--db (or MEMORYD_DB) begins as a PostgreSQL URL (postgres: or postgresql:) but is not one memoryd can use: " +
		"give postgres://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql://..., the scheme in lower case); " +
		"an SQLite file whose name begins so is given as ./postgres:..."}
}

// defaultDataDir returns $XDG_DATA_HOME/memoryd, else
// ~/.local/share/memoryd.
func defaultDataDir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "memoryd"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("cannot find a home folder for the default database: set --db, MEMORYD_DB or HOME")
	}
	return filepath.Join(home, ".local", "share", "memoryd"), nil
}

// openService opens (creating with a 0700 folder, the file 0600) the
// database at path (memory.Open: the Service owns it, Close closes it). A
// rebuild of the projections that a migration asks for, and a database
// that other users can read, are reported on stderr.
func openService(ctx context.Context, path, synchronous string, stderr io.Writer) (*memory.Service, error) {
	return memory.Open(ctx, path, memory.OpenOptions{
		Synchronous: synchronous,
		Logf:        func(format string, args ...any) { fmt.Fprintf(stderr, "memoryd: "+format+"\n", args...) },
		Warnf:       func(format string, args ...any) { fmt.Fprintf(stderr, "memoryd: warning: "+format+"\n", args...) },
	})
}

// openExistingService opens a database that must already exist.
func openExistingService(ctx context.Context, path string, stderr io.Writer) (*memory.Service, error) {
	if memory.IsPostgres(path) {
		return openService(ctx, path, "", stderr) // a PostgreSQL database is migrated as it is opened
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	return openService(ctx, path, "", stderr)
}

// openAllOrNothing opens the database at path for a verb that is all or
// nothing (import, import-session). done closes it and, when the verb
// failed, removes what opening it created.
func openAllOrNothing(ctx context.Context, path string, stderr io.Writer) (svc *memory.Service, done func(failed bool), err error) {
	fresh := newDatabase(path)
	if svc, err = openService(ctx, path, "", stderr); err != nil {
		fresh.remove()
		return nil, nil, err
	}
	return svc, func(failed bool) {
		svc.Close()
		if failed {
			fresh.remove()
		}
	}, nil
}

// freshDatabase is a database that a verb is about to create: its file
// and the folders above it that do not exist yet. A verb that is all or
// nothing (import, import-session, replay --db) removes what it created
// when it fails, so that a refusal leaves no file behind.
type freshDatabase struct {
	files   []string // the database and the files SQLite keeps beside it
	folders []string // deepest first
}

// newDatabase returns what creating the database at path creates, or nil
// when it exists already or is a PostgreSQL database: then its files are SQLite's to keep or remove
// (another process may have it open), and a failure leaves them.
func newDatabase(path string) *freshDatabase {
	if memory.IsPostgres(path) {
		return nil // an import into PostgreSQL is one transaction: a failed one leaves the tables empty
	}
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

// databaseToRead is the database a reading verb (tasks, export, verify,
// call, inspect) reads: db when given, else the one serve uses
// (MEMORYD_DB, else the default), which it names on stderr.
func databaseToRead(getenv func(string) string, db string, stderr io.Writer) (string, error) {
	if db != "" {
		return db, nil
	}
	db, err := defaultDBPath(getenv)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(stderr, "memoryd: reading %s, the database serve uses (--db F reads another)\n", db)
	return db, nil
}
