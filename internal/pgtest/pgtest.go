// Package pgtest gives a test a new, empty PostgreSQL database of its own.
//
// The database is made on the server MEMORYD_TEST_POSTGRES names and
// dropped when the test ends. scripts/local-postgres starts such a server
// and prints the value for the variable. Without the variable a test that
// asks for a database is skipped, or fails under MEMORYD_REQUIRE_POSTGRES=1
// as in .ci/run, so that CI never passes with these tests skipped. Only
// tests import it.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/memoryd/memoryd/migrations"
)

const (
	// EnvServer names the variable holding the pgx connection string of
	// the server tests create their databases on, to any database the role
	// may connect to.
	EnvServer = "MEMORYD_TEST_POSTGRES"
	// EnvRequire, set to 1, makes a missing EnvServer fail the tests that
	// need it instead of skipping them.
	EnvRequire = "MEMORYD_REQUIRE_POSTGRES"
)

// Prefix starts the name of every database NewDatabase creates, so that
// one a killed test left behind is recognized.
const Prefix = "memoryd_test_"

// adminTimeout bounds the connection and the CREATE or DROP DATABASE.
const adminTimeout = time.Minute

// NewDatabase creates a new database on the server of MEMORYD_TEST_POSTGRES
// and returns its connection string. The database is dropped when tb ends,
// even with connections still open to it. Without MEMORYD_TEST_POSTGRES it
// skips tb, or fails it if MEMORYD_REQUIRE_POSTGRES is 1.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	server := os.Getenv(EnvServer)
	if server == "" {
		if os.Getenv(EnvRequire) == "1" {
			tb.Fatalf("%s=1 but %s is not set: this test needs a PostgreSQL server", EnvRequire, EnvServer)
		}
		tb.Skipf("needs PostgreSQL: export %s=$(scripts/local-postgres start DIR)", EnvServer)
	}
	name, err := databaseName(tb.Name())
	if err != nil {
		tb.Fatal(err)
	}
	dsn, err := WithDatabase(server, name)
	if err != nil {
		tb.Fatalf("%s: %v", EnvServer, err)
	}
	if err := admin(server, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("create the test database %s on the server of %s: %v", name, EnvServer, err)
	}
	tb.Cleanup(func() {
		if err := admin(server, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop the test database %s: %v", name, err)
		}
	})
	return dsn
}

// admin runs one statement on its own connection to server, since CREATE
// and DROP DATABASE cannot run in a transaction nor in the database they name.
func admin(server, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// databaseName is a new database name of Prefix, the test's name shortened
// to lower-case letters, digits and underscores, and random hex digits,
// within PostgreSQL's 63 bytes.
func databaseName(test string) (string, error) {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		if b.Len() == 36 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	random := make([]byte, 6)
	if _, err := rand.Read(random); err != nil {
		return "", err
	}
	return Prefix + b.String() + "_" + hex.EncodeToString(random), nil
}

// WithDatabase returns the connection string conn with its database
// replaced by name. conn is a URL or key=value pairs, as pgx takes them,
// and name is a plain identifier of letters, digits and underscores.
func WithDatabase(conn, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("no database name")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return "", fmt.Errorf("database name %q is not letters, digits and underscores", name)
		}
	}
	var out string
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return "", fmt.Errorf("not a connection URL: %v", err)
		}
		u.Path, u.RawPath = "/"+name, ""
		if q := u.Query(); q.Has("dbname") {
			q.Del("dbname")
			u.RawQuery = q.Encode()
		}
		out = u.String()
	} else {
		out = conn + " dbname=" + name // the last setting of a key wins
	}
	cfg, err := pgx.ParseConfig(out)
	if err != nil {
		return "", fmt.Errorf("not a pgx connection string: %v", err)
	}
	if cfg.Database != name {
		return "", fmt.Errorf("the connection string names the database %q after replacing it by %q", cfg.Database, name)
	}
	return out, nil
}

// Or returns where a test that runs on both engines keeps its database.
// That is sqlitePath, or a new PostgreSQL database when
// MEMORYD_TEST_ENGINE is postgres.
func Or(tb testing.TB, sqlitePath string) string {
	tb.Helper()
	switch e := os.Getenv("MEMORYD_TEST_ENGINE"); e {
	case "", "sqlite":
		return sqlitePath
	case "postgres":
		return NewDatabase(tb)
	default:
		tb.Fatalf("MEMORYD_TEST_ENGINE=%q: want sqlite or postgres", e)
		return ""
	}
}

// OpenMigrated opens a new database through database/sql with memoryd's
// PostgreSQL migrations applied, closed when tb ends. It serves the tests
// of the schema and the queries below the store.
func OpenMigrated(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open("pgx", NewDatabase(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if err := migrations.UpPostgres(context.Background(), db); err != nil {
		tb.Fatal(err)
	}
	return db
}
