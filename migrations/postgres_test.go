package migrations_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/migrations"
)

// postgresDB returns a new, empty database on the PostgreSQL server of
// the tests (internal/pgtest).
func postgresDB(t *testing.T) *sql.DB {
	t.Helper()
	return openPostgres(t, pgtest.NewDatabase(t))
}

// sqlASCIIDB returns a new, empty database encoded SQL_ASCII on the same
// server, dropped when the test ends.
func sqlASCIIDB(t *testing.T) *sql.DB {
	t.Helper()
	server := postgresDB(t) // for its connection to the server, and pgtest's skip
	b := make([]byte, 6)
	rand.Read(b)
	name := pgtest.Prefix + "sql_ascii_" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := server.ExecContext(ctx, "CREATE DATABASE "+name+" ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := server.ExecContext(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	dsn, err := pgtest.WithDatabase(os.Getenv(pgtest.EnvServer), name)
	if err != nil {
		t.Fatal(err)
	}
	return openPostgres(t, dsn)
}

func openPostgres(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestUpPostgresTwice: the PostgreSQL migrations apply to an empty
// database, and applying them again changes nothing.
func TestUpPostgresTwice(t *testing.T) {
	ctx := context.Background()
	db := postgresDB(t)
	for i := range 2 {
		if err := migrations.UpPostgres(ctx, db); err != nil {
			t.Fatalf("Up #%d: %v", i+1, err)
		}
	}
	p, err := migrations.NewPostgresProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := p.HasPending(ctx)
	if err != nil || pending {
		t.Fatalf("pending after Up: %v, %v", pending, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil || n != 0 {
		t.Fatalf("events: %d, %v", n, err)
	}
}

// TestUpPostgresRefusesSQLASCII: the migrations refuse a database whose
// encoding is not UTF8 (substr would count bytes, not characters) and
// leave it empty.
func TestUpPostgresRefusesSQLASCII(t *testing.T) {
	ctx := context.Background()
	db := sqlASCIIDB(t)
	err := migrations.UpPostgres(ctx, db)
	if err == nil || !strings.Contains(err.Error(), "UTF8") {
		t.Fatalf("Up on SQL_ASCII: %v, want an error naming UTF8", err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'events'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("events tables after a refused Up: %d, %v", n, err)
	}
}

// column is one column of a table as both engines can describe it.
type column struct {
	Name    string
	Type    string // integer, text or blob
	NotNull bool
	Default string
}

// index is a table's index or key: its columns, whether it is unique
// and whether it is partial (its WHERE is not compared).
type index struct {
	Columns string
	Unique  bool
	Partial bool
}

// TestPostgresSchemaIsSQLites: the PostgreSQL schema is the end state of
// the SQLite migrations, table for table: the same columns in the same
// order (the Go types sqlc generates follow from them), the same
// primary keys, unique constraints and indexes. A SQLite migration without
// its PostgreSQL counterpart fails here.
func TestPostgresSchemaIsSQLites(t *testing.T) {
	ctx := context.Background()
	pg := postgresDB(t)
	if err := migrations.UpPostgres(ctx, pg); err != nil {
		t.Fatal(err)
	}
	lite, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if err := migrations.Up(ctx, lite); err != nil {
		t.Fatal(err)
	}

	liteTables := queryStrings(t, lite, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'goose_db_version' ORDER BY name`)
	pgTables := queryStrings(t, pg, `SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'goose_db_version' ORDER BY table_name COLLATE "C"`)
	if !slices.Equal(liteTables, pgTables) {
		t.Fatalf("tables:\nsqlite     %v\npostgresql %v", liteTables, pgTables)
	}
	for _, table := range liteTables {
		lc, li := sqliteTable(t, lite, table)
		pc, pi := postgresTable(t, pg, table)
		if !slices.Equal(lc, pc) {
			t.Errorf("%s columns:\nsqlite     %+v\npostgresql %+v", table, lc, pc)
		}
		if !slices.Equal(li, pi) {
			t.Errorf("%s keys and indexes:\nsqlite     %+v\npostgresql %+v", table, li, pi)
		}
	}
}

func queryStrings(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sqliteTable(t *testing.T, db *sql.DB, table string) ([]column, []index) {
	t.Helper()
	// A primary key's columns count as NOT NULL: SQLite allows NULL in
	// them (a quirk memoryd never uses), PostgreSQL does not.
	rows, err := db.Query(`SELECT name, type, "notnull" OR pk > 0, coalesce(dflt_value, '') FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		t.Fatal(err)
	}
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.Name, &c.Type, &c.NotNull, &c.Default); err != nil {
			t.Fatal(err)
		}
		c.Type = strings.ToLower(c.Type)
		cols = append(cols, c)
	}
	rows.Close()
	var idx []index
	for _, name := range queryStrings(t, db, `SELECT name FROM pragma_index_list(?)`, table) {
		var unique, partial bool
		if err := db.QueryRow(`SELECT "unique", "partial" FROM pragma_index_list(?) WHERE name = ?`, table, name).Scan(&unique, &partial); err != nil {
			t.Fatal(err)
		}
		cs := queryStrings(t, db, `SELECT name FROM pragma_index_info(?) ORDER BY seqno`, name)
		idx = append(idx, index{Columns: strings.Join(cs, ","), Unique: unique, Partial: partial})
	}
	// An INTEGER PRIMARY KEY is the rowid, with no index of its own.
	if pk := queryStrings(t, db, `SELECT name FROM pragma_table_info(?) WHERE pk > 0 AND lower(type) = 'integer'`, table); len(pk) == 1 &&
		len(queryStrings(t, db, `SELECT name FROM pragma_table_info(?) WHERE pk > 0`, table)) == 1 {
		idx = append(idx, index{Columns: pk[0], Unique: true})
	}
	return cols, sortIndexes(idx)
}

func postgresTable(t *testing.T, db *sql.DB, table string) ([]column, []index) {
	t.Helper()
	rows, err := db.Query(`SELECT column_name::text, data_type::text, is_nullable = 'NO', coalesce(column_default, ''), coalesce(collation_name::text, '')
		FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, table)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{"bigint": "integer", "text": "text", "bytea": "blob"}
	var cols []column
	for rows.Next() {
		var c column
		var collation string
		if err := rows.Scan(&c.Name, &c.Type, &c.NotNull, &c.Default, &collation); err != nil {
			t.Fatal(err)
		}
		if c.Type == "text" && collation != "C" {
			t.Errorf("%s.%s: collation %q, want \"C\" (SQLite compares text by bytes)", table, c.Name, collation)
		}
		if ty, ok := types[c.Type]; ok {
			c.Type = ty
		}
		c.Default = strings.TrimSuffix(c.Default, "::text")
		if c.Default == `'\x'::bytea` { // the empty BLOB, as SQLite writes it
			c.Default = "x''"
		}
		cols = append(cols, c)
	}
	rows.Close()
	rows, err = db.Query(`SELECT i.indisunique, i.indpred IS NOT NULL, array_to_string(array(
			SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n), ',')
		FROM pg_index i WHERE i.indrelid = $1::regclass`, table)
	if err != nil {
		t.Fatal(err)
	}
	var idx []index
	for rows.Next() {
		var x index
		if err := rows.Scan(&x.Unique, &x.Partial, &x.Columns); err != nil {
			t.Fatal(err)
		}
		idx = append(idx, x)
	}
	rows.Close()
	return cols, sortIndexes(idx)
}

func sortIndexes(idx []index) []index {
	slices.SortFunc(idx, func(a, b index) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return idx
}
