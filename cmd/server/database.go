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
	"github.com/memoryd/memoryd/internal/redact"
)

// defaultDBPath returns MEMORYD_DB, else memory.db in the default data
// folder.
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

// checkDatabase refuses a database that begins like a PostgreSQL URL but
// is not one memoryd can use, rather than take it for an SQLite file.
func checkDatabase(db string) error {
	lower := strings.ToLower(db)
	if _, file := memory.ParseLocation(db).File(); !file || !strings.HasPrefix(lower, "postgres:") && !strings.HasPrefix(lower, "postgresql:") {
		return nil
	}
	// The message leaves out the value, which may hold a password.
	return &usageError{"--db (or MEMORYD_DB) begins as a PostgreSQL URL (postgres: or postgresql:) but is not one memoryd can use: " +
		"give postgres://USER:PASSWORD@HOST:PORT/DATABASE (or postgresql://..., the scheme in lower case); " +
		"an SQLite file whose name begins so is given as ./postgres:..."}
}

// databaseFolder is the folder of the database db, serve's by default, in
// which its token file lives; for a PostgreSQL database it is the default
// data folder.
func databaseFolder(getenv func(string) string, db string) (string, error) {
	var err error
	if db == "" {
		if db, err = defaultDBPath(getenv); err != nil {
			return "", err
		}
	}
	if file, ok := memory.ParseLocation(db).File(); ok {
		return filepath.Dir(file), nil
	}
	return defaultDataDir(getenv)
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

// openService opens the database at path, creating it if missing, and
// reports a migration's rebuild or a database others can read on stderr.
// A database encrypted at rest is opened with its key (atRestKey).
func openService(ctx context.Context, getenv func(string) string, path, synchronous string, stderr io.Writer) (*memory.Service, error) {
	return openRedacting(ctx, getenv, path, synchronous, stderr, nil, false)
}

// openRedacting is openService with the redaction of red (nil: none),
// making a new database encrypted at rest when encrypt is set.
func openRedacting(ctx context.Context, getenv func(string) string, path, synchronous string, stderr io.Writer, red *redact.Redactor, encrypt bool) (*memory.Service, error) {
	sealer, made, err := atRestKey(getenv, path, encrypt)
	if err != nil {
		return nil, err
	}
	svc, err := memory.Open(ctx, path, memory.OpenOptions{
		Redactor:    red,
		Sealer:      sealer,
		Encrypt:     encrypt,
		Synchronous: synchronous,
		Logf:        func(format string, args ...any) { fmt.Fprintf(stderr, "memoryd: "+format+"\n", args...) },
		Warnf:       func(format string, args ...any) { fmt.Fprintf(stderr, "memoryd: warning: "+format+"\n", args...) },
		Now:         testHooksOf(ctx).now, // a test's clock; nil: time.Now
	})
	return svc, atRestError(err, getenv, path, made)
}

// openExistingService opens a database that must already exist.
func openExistingService(ctx context.Context, getenv func(string) string, path string, stderr io.Writer) (*memory.Service, error) {
	if file, ok := memory.ParseLocation(path).File(); ok {
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("database %s: %w", file, err)
		}
	}
	// A database on a server is migrated as it is opened.
	return openService(ctx, getenv, path, "", stderr)
}

// openAllOrNothing opens the database at path for a verb that is all or
// nothing. done closes it and, when the verb failed, removes what opening
// it created.
func openAllOrNothing(ctx context.Context, getenv func(string) string, path string, stderr io.Writer) (svc *memory.Service, done func(failed bool), err error) {
	return openAllOrNothingWith(ctx, getenv, path, stderr, func() (*redact.Redactor, error) { return nil, nil })
}

// openSessionImport is openAllOrNothing for an import of session files:
// their entries go through the redaction serve applies (MEMORYD_REDACT,
// MEMORYD_REDACT_RULES), keyed by the database's redaction key, so that a session
// imported and the same session synced by a hook store the same entries.
func openSessionImport(ctx context.Context, getenv func(string) string, path string, stderr io.Writer) (*memory.Service, func(failed bool), error) {
	return openAllOrNothingWith(ctx, getenv, path, stderr, func() (*redact.Redactor, error) {
		mode := envOr(getenv, "MEMORYD_REDACT", redactDefault)
		if mode == redactOff {
			return nil, nil
		}
		key, err := loadSecret(getenv, path, redactionKeyFile)
		if err != nil {
			return nil, err
		}
		return newRedactor(mode, getenv("MEMORYD_REDACT_RULES"), key)
	})
}

// openAllOrNothingWith is openAllOrNothing with the redactor redactor
// makes once the database's folder exists. A new database is encrypted at
// rest when MEMORYD_ENCRYPT asks for it; its new key file, if any, is
// removed with it when the verb fails.
func openAllOrNothingWith(ctx context.Context, getenv func(string) string, path string, stderr io.Writer, redactor func() (*redact.Redactor, error)) (svc *memory.Service, done func(failed bool), err error) {
	encrypt, err := encryptAsked(getenv)
	if err != nil {
		return nil, nil, err
	}
	fresh := newDatabase(path)
	if file, ok := memory.ParseLocation(path).File(); ok {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			fresh.remove()
			return nil, nil, fmt.Errorf("create the database folder: %w", err)
		}
	}
	red, err := redactor()
	if err != nil {
		fresh.remove()
		return nil, nil, err
	}
	if svc, err = openRedacting(ctx, getenv, path, "", stderr, red, encrypt); err != nil {
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

// freshDatabase is the files and missing folders that creating a database
// makes. A verb that is all or nothing removes them when it fails.
type freshDatabase struct {
	files   []string // the database and the files SQLite keeps beside it
	folders []string // deepest first
}

// newDatabase returns what creating the database db creates, or nil when
// it exists already or is not a file.
func newDatabase(db string) *freshDatabase {
	path, ok := memory.ParseLocation(db).File()
	if !ok {
		return nil // an import into a server's database is one transaction, so a failed one leaves the tables empty
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return nil // another process may have it open, so a failure leaves its files
	}
	d := &freshDatabase{files: []string{path, path + "-wal", path + "-shm", path + "-journal"}}
	for _, sf := range []secretFile{redactionKeyFile, encryptionKeyFile} {
		if key := filepath.Join(filepath.Dir(path), sf.name); !exists(key) {
			d.files = append(d.files, key)
		}
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) || dir == filepath.Dir(dir) {
			break
		}
		d.folders = append(d.folders, dir)
	}
	return d
}

// remove deletes the database's files and the empty folders created for
// it. The database must be closed.
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

// databaseToRead returns the database a reading verb reads. That is db
// when given, else the one serve uses, which it names on stderr.
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

// exists reports whether something is at path.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
