package pgtest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestNewDatabase: a database of the test's own, empty and usable, is
// dropped at the end of its test even with a connection still open to it;
// two calls give two databases.
func TestNewDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := NewDatabase(t) // skips without a server; a database to look from
	var name string
	var open *pgx.Conn
	t.Run("inner", func(t *testing.T) {
		dsn := NewDatabase(t)
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		open = conn // left open: the drop must end it
		var encoding string
		if err := conn.QueryRow(ctx, "SELECT current_database(), pg_encoding_to_char(encoding) FROM pg_database WHERE datname = current_database()").Scan(&name, &encoding); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, Prefix+"testnewdatabase_inner_") || len(name) > 63 {
			t.Errorf("database %q, want %sTESTNAME_RANDOM within 63 bytes", name, Prefix)
		}
		if encoding != "UTF8" {
			t.Errorf("encoding %s, want UTF8", encoding)
		}
		var tables int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil || tables != 0 {
			t.Errorf("a new database has %d tables (%v), want none", tables, err)
		}
		if _, err := conn.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('é€𝄞')"); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := conn.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != "é€𝄞" {
			t.Errorf("read back %q, %v", v, err)
		}
		if other := NewDatabase(t); other == dsn {
			t.Errorf("two calls gave the same database %s", other)
		}
	})
	if name == "" {
		t.Fatal("the inner test did not run")
	}
	defer open.Close(context.Background())
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Errorf("database %s: %d left after its test ended (%v), want it dropped", name, n, err)
	}
	if err := open.Ping(ctx); err == nil {
		t.Error("a connection to the dropped database still answers")
	}
}

// TestWithoutServer: without MEMORYD_TEST_POSTGRES, NewDatabase skips with
// the command that starts a server, or fails under MEMORYD_REQUIRE_POSTGRES=1.
func TestWithoutServer(t *testing.T) {
	t.Setenv(EnvServer, "")
	for require, want := range map[string]string{
		"":  "skip: needs PostgreSQL: export MEMORYD_TEST_POSTGRES=$(scripts/local-postgres start DIR)",
		"0": "skip: needs PostgreSQL",
		"1": "fatal: MEMORYD_REQUIRE_POSTGRES=1 but MEMORYD_TEST_POSTGRES is not set",
	} {
		t.Setenv(EnvRequire, require)
		tb := &recorder{TB: t}
		var wg sync.WaitGroup
		wg.Go(func() {
			NewDatabase(tb)
			tb.ended = "returned"
		})
		wg.Wait()
		if !strings.HasPrefix(tb.ended, want) {
			t.Errorf("%s=%q: NewDatabase ended with %q, want %q", EnvRequire, require, tb.ended, want)
		}
	}
}

// recorder is a testing.TB whose Skip and Fatal record how it ended and
// end the goroutine, as testing's own do.
type recorder struct {
	testing.TB
	ended string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended = "skip: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended = "fatal: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.ended = "fatal: " + fmt.Sprint(args...)
	runtime.Goexit()
}

// TestWithDatabase: the database of a URL or key=value connection string
// is replaced, and nothing else changes (a socket folder with a space, as
// scripts/local-postgres prints it, included).
func TestWithDatabase(t *testing.T) {
	for _, conn := range []string{
		"postgres:///postgres?host=/tmp/a%20b&port=5432&user=memoryd&sslmode=disable",
		"postgresql://memoryd:secret@db.example:6432/postgres?sslmode=require",
		"postgres://memoryd@db.example/other?dbname=postgres&sslmode=disable",
		"host=/tmp/pg port=5432 user=memoryd dbname=postgres sslmode=disable",
		"host=db.example user=memoryd",
	} {
		got, err := WithDatabase(conn, "memoryd_test_x_0a1b")
		if err != nil {
			t.Errorf("WithDatabase(%q): %v", conn, err)
			continue
		}
		before, err := pgx.ParseConfig(conn)
		if err != nil {
			t.Fatal(err)
		}
		after, err := pgx.ParseConfig(got)
		if err != nil {
			t.Fatal(err)
		}
		if after.Database != "memoryd_test_x_0a1b" || after.Host != before.Host || after.Port != before.Port ||
			after.User != before.User || after.Password != before.Password || (after.TLSConfig == nil) != (before.TLSConfig == nil) {
			t.Errorf("WithDatabase(%q) = %q: database %q host %q port %d user %q; want only the database changed",
				conn, got, after.Database, after.Host, after.Port, after.User)
		}
	}
	if after, _ := pgx.ParseConfig("postgres:///postgres?host=/tmp/a%20b"); after == nil || after.Host != "/tmp/a b" {
		t.Errorf("a percent-encoded socket folder parses as %v", after)
	}
	for _, bad := range []string{"x; DROP", "a-b", ""} {
		if _, err := WithDatabase("host=/tmp/pg", bad); err == nil {
			t.Errorf("WithDatabase took the name %q", bad)
		}
	}
}

// TestDatabaseName: names are valid, bounded and distinct.
func TestDatabaseName(t *testing.T) {
	long := strings.Repeat("TestSomething/with spaces and ünïcode/", 5)
	a, err := databaseName(long)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := databaseName(long)
	if a == b || len(a) > 63 || !strings.HasPrefix(a, Prefix+"testsomething_with_spaces_and__n_cod_") {
		t.Errorf("names %q and %q: want distinct, at most 63 bytes, from the test's name", a, b)
	}
	if _, err := WithDatabase("host=/tmp/pg", a); err != nil {
		t.Error(err)
	}
}
