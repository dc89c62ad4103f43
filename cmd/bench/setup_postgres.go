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

// fxPostgres is a PostgreSQL server with a database two memoryd servers
// share, and a second database for the raw ceiling. The server is
// -postgres, else a private one started with scripts/local-postgres.
var fxPostgres = &fixture{name: "PostgreSQL and two memoryd servers on one database", setup: (*bench).setupPostgres}

// setupPostgres starts or takes the PostgreSQL server, makes the two
// databases, starts two memoryd servers on the first and attaches a task.
func (b *bench) setupPostgres(ctx context.Context) error {
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
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := admin.QueryRowContext(ctx, "SHOW server_version").Scan(&b.pgVersion); err != nil {
		return fmt.Errorf("PostgreSQL at -postgres: %w", err)
	}
	var dsns [2]string
	names := []string{"memoryd_bench", "memoryd_bench_raw"}
	if b.atRest { // -compare-at-rest's two runs may share -postgres
		names[0] += "_at_rest"
		names[1] += "_at_rest"
	}
	for i, name := range names {
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return err
		}
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
			return err
		}
		u, err := url.Parse(base)
		if err != nil {
			return fmt.Errorf("-postgres must be a postgres:// URL: %w", err)
		}
		u.Path = "/" + name
		dsns[i] = u.String()
	}
	b.pgRaw, b.pgDB = dsns[1], dsns[0]
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
