package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// fxPostgresServer is a PostgreSQL server: -postgres, else a private one
// started with scripts/local-postgres.
var fxPostgresServer = &fixture{name: "a PostgreSQL server", setup: (*bench).setupPostgresServer}

// fxPostgres is a database on the PostgreSQL server that two memoryd
// servers share, and a second database for the raw ceiling.
var fxPostgres = &fixture{name: "PostgreSQL and two memoryd servers on one database", needs: []*fixture{fxPostgresServer}, setup: (*bench).setupPostgres}

// setupPostgresServer starts or takes the PostgreSQL server.
func (b *bench) setupPostgresServer(ctx context.Context) error {
	base := b.cfg.postgres
	if base == "" {
		script, err := moduleFile(ctx, "scripts/local-postgres")
		if err != nil {
			return err
		}
		// The server gets a folder of its own in the system's temporary
		// folder, not in the scratch one. Run as root, the script serves it
		// as an unprivileged user, who must be able to reach it.
		dir, err := os.MkdirTemp("", "memoryd-bench-pg-")
		if err != nil {
			return err
		}
		b.logf("starting a private PostgreSQL: scripts/local-postgres start %s", dir)
		out, err := exec.CommandContext(ctx, script, "start", dir).Output()
		if err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("scripts/local-postgres start: %w%s", err, stderrOf(err))
		}
		base = strings.TrimSpace(string(out))
		b.pgStop = func() {
			exec.Command(script, "stop", dir).Run()
			os.RemoveAll(dir)
		}
	}
	b.pgBase = base
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := admin.QueryRowContext(ctx, "SHOW server_version").Scan(&b.pgVersion); err != nil {
		return fmt.Errorf("PostgreSQL at -postgres: %w", err)
	}
	return nil
}

// pgDatabase makes the database name anew on the PostgreSQL server,
// dropping one of that name, and returns its connection string.
func (b *bench) pgDatabase(ctx context.Context, name string) (string, error) {
	admin, err := sql.Open("pgx", b.pgBase)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	u, err := url.Parse(b.pgBase)
	if err != nil {
		return "", fmt.Errorf("-postgres must be a postgres:// URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// setupPostgres makes the two databases, starts two memoryd servers on the
// first and attaches a task.
func (b *bench) setupPostgres(ctx context.Context) error {
	var dsns [2]string
	names := []string{"memoryd_bench", "memoryd_bench_raw"}
	if b.atRest { // -compare-at-rest's two runs may share -postgres
		names[0] += "_at_rest"
		names[1] += "_at_rest"
	}
	for i, name := range names {
		var err error
		if dsns[i], err = b.pgDatabase(ctx, name); err != nil {
			return err
		}
	}
	b.pgRaw, b.pgDB = dsns[1], dsns[0]
	var err error
	for i := range b.pg {
		if b.pg[i], err = b.startMemoryd(ctx, fmt.Sprintf("memoryd(postgres %d)", i+1), dsns[0]); err != nil {
			return err
		}
	}
	if b.pgTask, err = b.attach(ctx, b.pg[0], "postgres"); err != nil {
		return err
	}
	b.logf("two memoryd servers on PostgreSQL %s at %s and %s, task %s", b.pgVersion, b.pg[0].url, b.pg[1].url, b.pgTask)
	if _, err := b.pgAppendLoop(ctx, 2, b.warmUp()); err != nil {
		return fmt.Errorf("PostgreSQL append warm-up: %w", err)
	}
	return nil
}

// moduleFile is the path of a file of the memoryd module, which the bench
// runs inside.
func moduleFile(ctx context.Context, rel string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("cannot find the memoryd module for %s: run bench inside it or pass -postgres", rel)
	}
	return filepath.Join(filepath.Dir(gomod), rel), nil
}

// stderrOf is what a failed command said on stderr, if anything.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
