package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/pgtest"
)

// TestBytesPerSessionByte runs the bytes-per-session-byte rows on 2 MiB
// of Pi session files and checks their breakdowns: every part counted
// once, adding up to the database's size (for SQLite, its files on
// disk), and the big tables and columns there. It asserts nothing about
// speed.
func TestBytesPerSessionByte(t *testing.T) {
	args := []string{"-rows", "bytes-per-session-byte,postgres-bytes-per-session-byte", "-disk-bytes", "2MiB", "-reps", "1"}
	if os.Getenv("MEMORYD_TEST_POSTGRES") != "" { // else the bench starts a private server
		args = append(args, "-postgres", pgtest.NewDatabase(t))
	}
	cfg, err := parseConfig(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var progress strings.Builder
	b := &bench{cfg: cfg, progress: &progress, results: map[string]*rowResult{}, started: time.Now(), scratch: t.TempDir()}
	defer func() {
		var err error
		b.closeAll(&err)
		if err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Log(progress.String())
		}
	}()
	if err := b.buildServer(ctx); err != nil {
		t.Fatal(err)
	}
	for _, fx := range fixturesFor(cfg) {
		if err := fx.setup(b, ctx); err != nil {
			t.Fatalf("%s: %v", fx.name, err)
		}
	}
	if b.disk.bytes < 2<<20 || b.disk.sessions < 4 || b.disk.entries == 0 {
		t.Fatalf("%d sessions, %d bytes, %d entries: want at least 4 sessions, 2 MiB and some entries", b.disk.sessions, b.disk.bytes, b.disk.entries)
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		s, err := b.measureDisk(ctx, engine)
		if err != nil {
			t.Fatalf("%s: %v", engine, err)
		}
		u := b.disk.last[engine]
		if err := u.check(); err != nil {
			t.Error(err)
		}
		if want := float64(u.total) / float64(b.disk.bytes); s.fig != want {
			t.Errorf("%s: figure %v, want the database's %d bytes / the files' %d", engine, s.fig, u.total, b.disk.bytes)
		}
		if engine == "sqlite" {
			if files := sizeOf(b.disk.sqlite) + sizeOf(b.disk.sqlite+"-wal"); u.total != files {
				t.Errorf("SQLite: the total is %d bytes, the files on disk %d", u.total, files)
			}
			// dbstat and the free list account for every page: nothing is
			// left for the rest of a file under 1 GiB.
			for _, p := range u.parts {
				if p.kind == "rest" && p.bytes != 0 {
					t.Errorf("SQLite: %d bytes in no table, index or free page", p.bytes)
				}
			}
		}
		seen := map[string]int64{}
		for _, p := range u.parts {
			if p.kind == "table" || p.kind == "index" {
				if _, dup := seen[p.name]; dup {
					t.Errorf("%s: %s counted twice", engine, p.name)
				}
				seen[p.name] = p.bytes
			}
		}
		for _, name := range []string{"events", "history_entries", "history_chunks", "events_task"} {
			if seen[name] <= 0 {
				t.Errorf("%s: no bytes for %s in %v", engine, name, u.parts)
			}
		}
		for _, c := range u.columns {
			if c.bytes <= 0 {
				t.Errorf("%s: %s.%s holds no bytes", engine, c.table, c.column)
			}
		}
		if notes := b.diskNotes(engine); !strings.Contains(notes, "| history_chunks |") || !strings.Contains(notes, "| events.data |") {
			t.Errorf("%s: the notes lack the breakdown:\n%s", engine, notes)
		}
	}
}
