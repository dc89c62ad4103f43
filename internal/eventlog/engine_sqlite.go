package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/migrations"
)

// SQLite is the default engine: one database file in WAL mode, which one
// server opens.
const SQLite Engine = "sqlite"

func init() {
	register(SQLite, engineDef{
		file:     true,
		open:     openSQLite,
		queries:  func(db DBTX) eventsdb.Querier { return eventsdb.New(db) },
		classify: classifySQLite,
	}, true)
}

// openSQLite opens the log in the SQLite file at path, creating it with
// mode 0600 if needed.
func openSQLite(ctx context.Context, path string, opts Options) (*Store, error) {
	sync := strings.ToUpper(opts.Synchronous)
	switch sync {
	case "":
		sync = "FULL"
	case "FULL", "NORMAL", "OFF":
	default:
		return nil, fmt.Errorf("events: synchronous must be full, normal or off, not %q", opts.Synchronous)
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	busy := fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds())
	wq := url.Values{}
	wq.Add("_pragma", busy)
	wq.Add("_pragma", "journal_mode(WAL)")
	wq.Add("_pragma", "synchronous("+sync+")")
	wq.Add("_pragma", "foreign_keys(ON)")
	// A batch runs each request in a savepoint, and SQLite keeps the
	// pages a savepoint changes in a statement journal. Keep it in memory,
	// not in a temporary file that a batch of appends spilled to with a
	// pwrite per page. The writer's sorts and temporary tables stay in
	// memory too, since its queries sort nothing larger than a page of
	// rows and migrations copy tables in key order.
	wq.Add("_pragma", "temp_store(MEMORY)")
	// Freed cells are overwritten with zeros, which costs no I/O; an
	// erasure overwrites freed pages too (beginErase, docs/forgetting.md).
	wq.Add("_pragma", "secure_delete(FAST)")
	for _, p := range opts.WriterPragmas {
		wq.Add("_pragma", p)
	}
	wq.Set("_txlock", "immediate")
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err) // err names the file
	}
	warnExposed(path, opts.Warnf)
	writer, err := sql.Open("sqlite", FileURI(path, wq))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", path, classify(err))
	}
	if err := migrations.Up(ctx, writer); err != nil {
		writer.Close()
		return nil, err
	}
	if err := markOverwriting(ctx, writer); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", path, classify(err))
	}
	if opts.Sealer, err = openAtRest(ctx, eventsdb.New(writer), opts); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	rq := url.Values{}
	rq.Add("_pragma", busy)
	rq.Add("_pragma", "query_only(1)")
	reader, err := sql.Open("sqlite", FileURI(path, rq))
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// Read transactions keep up to opts.Readers connections in readConns.
	// Two more serve the pool's own queries, such as Store.Read, Reader
	// and the background prepares, which must not wait for a transaction.
	reader.SetMaxOpenConns(opts.Readers + 2)
	reader.SetMaxIdleConns(2)
	st := newStore(writer, reader, opts, sqliteEngine{}, newWALIndex(path))
	st.file = path
	return st, nil
}

// sqliteEngine is SQLite's engine, one file in WAL mode.
type sqliteEngine struct{}

// beginWrite takes SQLite's write lock at BEGIN IMMEDIATE, so that a
// transaction never has to upgrade a read lock and fail as busy.
func (sqliteEngine) beginWrite(ctx context.Context, c *keptConn) error {
	return c.exec(ctx, "BEGIN IMMEDIATE")
}

// checkTip compares SQLite's data_version, which changes when another
// connection commits but never for the connection's own commits.
func (sqliteEngine) checkTip(ctx context.Context, db DBTX, t *logTip) error {
	var v int64
	if err := db.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return err
	}
	if v != t.dataVersion {
		t.forget()
		t.dataVersion = v
	}
	return nil
}

func (sqliteEngine) savepoint(ctx context.Context, db DBTX) error {
	_, err := db.ExecContext(ctx, sqlSavepoint)
	return err
}

// endRequest releases the savepoint of a request that succeeded. Its
// statements ran as it made them.
func (sqliteEngine) endRequest(ctx context.Context, db DBTX, savepoint bool, err error) (reqErr, txErr error) {
	if err != nil || !savepoint {
		return err, nil
	}
	_, err = db.ExecContext(ctx, sqlRelease)
	return nil, err
}

// beginRead begins a deferred transaction, whose snapshot starts at the
// first read. It takes no context, which would cost a goroutine in the driver.
func (sqliteEngine) beginRead(c *keptConn) error {
	return c.exec(context.Background(), "BEGIN")
}

func (sqliteEngine) wrap(db DBTX) DBTX { return db }

// classifySQLite maps SQLite's errors to the store's vocabulary by code.
func classifySQLite(err error) (error, bool) {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err, false
	}
	code := se.Code()
	switch code & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_NOMEM:
		return fmt.Errorf("%w: %w", ErrUnavailable, err), true
	case sqlite3.SQLITE_CONSTRAINT:
		if code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
			return fmt.Errorf("%w: %w", ErrConflict, err), true
		}
	}
	return err, false
}

// FileURI returns the SQLite URI that opens the database file at path with
// the query parameters q. Every sql.Open of a database file goes through it.
func FileURI(path string, q url.Values) string {
	p := filepath.ToSlash(path)
	if filepath.VolumeName(path) != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: file:///C:/dir/memory.db
	}
	uri := "file:"
	if strings.HasPrefix(p, "/") {
		uri = "file://" // an empty authority, as p itself may start with "//"
	}
	// SQLite ends a URI's path at '?' or '#' and decodes %XX in it, and the
	// driver takes the first '?' for the start of its parameters. Escaping
	// the path opens the file of exactly that name, whatever it holds.
	uri += (&url.URL{Path: p}).EscapedPath()
	if enc := q.Encode(); enc != "" {
		uri += "?" + enc
	}
	return uri
}

// createPrivate makes an empty database file at path with mode 0600,
// unless something is there already. SQLite would create it readable by
// every local user, and gives the -wal and -shm files the same mode.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Chmod(0o600) // the umask may have taken bits away
	return errors.Join(err, f.Close())
}

// warnExposed reports through warnf each of the database's files that
// exists and that other users can access, -wal and -shm included.
func warnExposed(path string, warnf func(format string, args ...any)) {
	if warnf == nil {
		return
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil || !exposed(fi) {
			continue
		}
		warnf("%s is accessible to other users (mode %04o): they can read every note in it; fix: chmod 600 %s",
			name, fi.Mode().Perm(), name)
	}
}

// beginErase turns secure_delete on for the rest of the transaction: what
// it frees, cells and whole pages, is overwritten with zeros. The writer
// otherwise runs with secure_delete FAST, which zeroes freed cells but not
// freed pages, since that costs no I/O.
func (sqliteEngine) beginErase(ctx context.Context, db DBTX) error {
	_, err := db.ExecContext(ctx, "PRAGMA secure_delete = ON")
	return err
}

func (sqliteEngine) endErase(ctx context.Context, c *keptConn) error {
	return c.exec(ctx, "PRAGMA secure_delete = FAST")
}

// maxScrubBlob bounds one zero-filled row of zeroFreePages.
const maxScrubBlob = 4 << 20

// zeroFreePages overwrites every free page of the database with zeros, in
// the erasure's transaction db, before it frees anything itself. A free
// page may hold what a delete freed before, while secure_delete was only
// FAST (or off, in an older memoryd). It inserts zero-filled rows (4 MiB
// each) as large as the free pages together into a table of its own,
// which SQLite builds from the free pages first, then deletes them and
// drops the table; secure_delete ON leaves their pages zeroed. The
// erasure runs alone in its batch, so no savepoint makes SQLite keep a
// copy of the pages it overwrites, nor does any statement here.
func (sqliteEngine) zeroFreePages(ctx context.Context, db DBTX) (int64, error) {
	var free, size int64
	if err := db.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil || free == 0 {
		return 0, err
	}
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&size); err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE memoryd_erase_scrub (b BLOB)"); err != nil {
		return 0, err
	}
	rows := int64(0)
	for left := free * size; left > 0; left -= maxScrubBlob {
		if _, err := db.ExecContext(ctx, "INSERT INTO memoryd_erase_scrub VALUES (zeroblob(?))", min(left, maxScrubBlob)); err != nil {
			return 0, err
		}
		rows++
	}
	// A row at a time: a DROP of the whole table would keep a copy of
	// every page it frees in its statement journal, in memory.
	for rowid := int64(1); rowid <= rows; rowid++ {
		if _, err := db.ExecContext(ctx, "DELETE FROM memoryd_erase_scrub WHERE rowid = ?", rowid); err != nil {
			return 0, err
		}
	}
	_, err := db.ExecContext(ctx, "DROP TABLE memoryd_erase_scrub")
	return free, err
}

// overwritingMark is the user_version of a database file all of whose
// freed space memoryd overwrote (secure_delete FAST, on since memoryd made
// the file or last rebuilt it with VACUUM). A file without it, one an
// older memoryd wrote, may keep in its pages what its deletes freed, so an
// erasure rebuilds it once.
const overwritingMark = 1

// markOverwriting marks a new database file, whose writes all overwrite
// what they free.
func markOverwriting(ctx context.Context, db *sql.DB) error {
	var v, events int64
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v == overwritingMark {
		return err
	}
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM events LIMIT 1)").Scan(&events); err != nil || events > 0 {
		return err
	}
	_, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", overwritingMark))
	return err
}

// reclaim does nothing: SQLite reuses a deleted row's pages.
func (sqliteEngine) reclaim(context.Context, *Store, []string) error { return nil }

// scrub checkpoints the WAL into the database file and truncates it to 0
// bytes, on a connection of its own: the WAL's frames hold every page as
// each transaction wrote it, the erased rows included, until it is reset.
// A reader still reading an older snapshot holds the checkpoint back, so it
// is tried again until opts.Wait is over. With opts.Vacuum, or once for a
// file an older memoryd wrote (overwritingMark), the file is first rebuilt
// from its live rows.
func (sqliteEngine) scrub(ctx context.Context, s *Store, _ []string, opts ScrubOptions) (Scrub, error) {
	r := Scrub{Engine: SQLite, SecureDelete: true, Vacuumed: []string{}, Left: []string{}}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.Wait.Milliseconds()))
	db, err := sql.Open("sqlite", FileURI(s.file, q))
	if err != nil {
		return r, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var mark int64
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&mark); err != nil {
		return r, classify(err)
	}
	switch {
	case opts.Vacuum:
		r.VacuumReason = "asked for"
	case mark != overwritingMark:
		r.VacuumReason = "the file was written by a memoryd that did not overwrite what its deletes freed: rebuilt once"
	}
	if r.VacuumReason != "" {
		if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
			return r, fmt.Errorf("vacuum: %w", classify(err))
		}
		r.Vacuumed = append(r.Vacuumed, "*")
		if mark != overwritingMark {
			if _, err := db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", overwritingMark)); err != nil {
				return r, classify(err)
			}
		}
	}
	deadline := time.Now().Add(opts.Wait)
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		var busy, frames, done int64
		err := db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done)
		if err != nil && !errors.Is(classify(err), ErrUnavailable) {
			return r, fmt.Errorf("checkpoint: %w", err)
		}
		if err == nil && busy == 0 {
			r.WALTruncated = true
			break
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(pause):
		}
	}
	if fi, err := os.Stat(s.file + "-wal"); err == nil {
		r.WALBytes = fi.Size()
	}
	if !r.WALTruncated {
		r.Left = append(r.Left, fmt.Sprintf("the WAL (%s-wal, %d bytes) may still hold page images of before the erasure: "+
			"readers held it for %s; run memoryd forget again for the same task to retry, or stop memoryd, whose last close checkpoints it",
			s.file, r.WALBytes, opts.Wait))
	}
	return r, nil
}
