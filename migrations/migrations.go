// Package migrations holds memoryd's SQLite schema as embedded goose
// migrations. The same files are the schema sqlc generates queries from.
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

// UpPostgres applies every pending PostgreSQL migration to db. Servers
// sharing a database may start together: goose's session lock (an
// advisory lock) lets one migrate while the others wait.
func UpPostgres(ctx context.Context, db *sql.DB) error {
	fsys, err := fs.Sub(postgresFiles, "postgres")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

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
