package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"time"
)

// fxDisk is about -disk-bytes of generated Pi session files, imported by
// memoryd import-sessions --from pi into a new SQLite database, for the
// bytes-per-session-byte row.
var fxDisk = &fixture{name: "Pi session files, imported into SQLite", setup: (*bench).setupDisk}

// fxDiskPostgres is the same files imported into a new PostgreSQL
// database, for the postgres-bytes-per-session-byte row.
var fxDiskPostgres = &fixture{name: "the same Pi session files, imported into PostgreSQL", needs: []*fixture{fxPostgresServer, fxDisk},
	setup: (*bench).setupDiskPostgres}

// diskFixture is what the bytes-per-session-byte rows measure: the files,
// and the database import-sessions made of them on each engine.
type diskFixture struct {
	dir      string
	sessions int
	files    int
	bytes    int64 // of the .jsonl files
	entries  int   // as import-sessions counted them
	sqlite   string
	pg       string // the PostgreSQL database's connection string
	// imports are the import's figures on each engine.
	imports map[string]diskImport
	// last is the last repetition's breakdown on each engine.
	last map[string]*diskUsage
}

// diskImport is one run of import-sessions.
type diskImport struct {
	took, cpu time.Duration
	peak      int64
}

// writePiSessions writes about total bytes of Pi session files under dir,
// as writeSessions writes its Pi third: sizes log-uniform, each session
// with its own seed, in Pi's layout.
func writePiSessions(dir string, total int64) (sessions, files int, n int64, err error) {
	r := rand.New(rand.NewPCG(uint64(total), 0xd15c))
	for i := 0; n < total; i++ {
		size := sessionSize(r, total, total-n)
		seed := uint64(0xd15c)<<32 | uint64(i)
		start := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * 97 * time.Minute)
		written, err := writePiSession(dir, seed, newTextGen(seed), projects[i%len(projects)], start, size, "")
		if err != nil {
			return 0, 0, 0, err
		}
		sessions++
		for _, f := range written {
			files++
			n += f.size
		}
	}
	return sessions, files, n, nil
}

// setupDisk writes the session files and imports them into SQLite.
func (b *bench) setupDisk(ctx context.Context) error {
	d := &diskFixture{dir: filepath.Join(b.scratch, "disk-sessions"), imports: map[string]diskImport{}, last: map[string]*diskUsage{}}
	t0 := time.Now()
	b.logf("disk: generating %s of Pi session files", mb(b.cfg.diskBytes))
	var err error
	if d.sessions, d.files, d.bytes, err = writePiSessions(d.dir, b.cfg.diskBytes); err != nil {
		return err
	}
	syncFS()
	b.logf("disk: %d sessions, %s, written in %v", d.sessions, mb(d.bytes), time.Since(t0).Round(time.Millisecond))
	b.disk = d
	d.sqlite = filepath.Join(b.scratch, "disk.db")
	return b.diskImport(ctx, "sqlite", d.sqlite)
}

// setupDiskPostgres imports the same files into a new PostgreSQL database.
func (b *bench) setupDiskPostgres(ctx context.Context) error {
	dsn, err := b.pgDatabase(ctx, "memoryd_bench_disk")
	if err != nil {
		return err
	}
	b.disk.pg = dsn
	if err := b.diskImport(ctx, "postgres", dsn); err != nil {
		return err
	}
	// A VACUUM, untimed, as autovacuum would run after the import: the
	// rows the import replaced become free space, and the tables get the
	// maps autovacuum would give them, so that the sizes hold still while
	// they are read.
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("VACUUM after the import: %w", err)
	}
	return nil
}

// diskImport runs memoryd import-sessions --from pi of the files into db,
// exec to exit, and checks that it imported every session.
func (b *bench) diskImport(ctx context.Context, engine, db string) error {
	d := b.disk
	cmd := exec.CommandContext(ctx, b.bin, "import-sessions", "--from", "pi", "--db", db, d.dir)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &tail{prefix: "memoryd(import-sessions, " + engine + "): ", out: b.progress}
	t := time.Now()
	peak, err := runSampled(cmd, 50*time.Millisecond)
	took := time.Since(t)
	if err != nil {
		return fmt.Errorf("memoryd import-sessions into %s: %w", engine, err)
	}
	var sum struct {
		Imported []struct {
			Entries int `json:"entries"`
		} `json:"imported"`
		Failed []any `json:"failed"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		return fmt.Errorf("memoryd import-sessions printed no summary (%v): %.300s", err, stdout.String())
	}
	if len(sum.Failed) > 0 || len(sum.Imported) != d.sessions {
		return fmt.Errorf("memoryd import-sessions into %s imported %d files, failed %d; want %d imported", engine, len(sum.Imported), len(sum.Failed), d.sessions)
	}
	entries := 0
	for _, f := range sum.Imported {
		entries += f.Entries
	}
	d.entries = entries
	d.imports[engine] = diskImport{took: took, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), peak: peak}
	syncFS()
	b.logf("disk: import-sessions into %s: %v, %s entries", engine, took.Round(100*time.Millisecond), num(float64(entries), 0))
	return nil
}
