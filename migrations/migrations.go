// Package migrations holds memoryd's schema as embedded goose migrations:
// the SQLite ones (*.sql, the embedded default) and the PostgreSQL ones
// (postgres/*.sql, the same tables in PostgreSQL's dialect). The same
// files are the schemas sqlc generates queries from (sqlc.yaml).
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

//go:embed postgres/*.sql
var postgresFiles embed.FS

// Up applies every pending migration to db.
func Up(ctx context.Context, db *sql.DB) error {
	p, err := NewProvider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// NewProvider returns a goose provider over the embedded migrations.
func NewProvider(db *sql.DB) (*goose.Provider, error) {
	fsys, err := fs.Sub(files, ".")
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// UpPostgres applies every pending PostgreSQL migration to db, a
// PostgreSQL database.
func UpPostgres(ctx context.Context, db *sql.DB) error {
	p, err := NewPostgresProvider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// postgresLockID is the key of the session advisory lock the PostgreSQL
// migrations run under: several servers starting on one database at once
// migrate it one after the other (the later ones find nothing to do).
const postgresLockID int64 = 0x6d656d6f72796402 // "memoryd" 2 (eventlog's append lock is "memoryd" 1)

// NewPostgresProvider returns a goose provider over the embedded
// PostgreSQL migrations, which holds a session advisory lock while it
// migrates.
func NewPostgresProvider(db *sql.DB) (*goose.Provider, error) {
	fsys, err := fs.Sub(postgresFiles, "postgres")
	if err != nil {
		return nil, err
	}
	// Probe the lock every second for up to five minutes.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(postgresLockID), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}
