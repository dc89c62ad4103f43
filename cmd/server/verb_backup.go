package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/memoryd/memoryd/internal/memory"
)

var backupVerb = verb{
	name:     "backup",
	synopsis: "backup [--db F] DEST",
	summary:  "copy a database, live or not, into the new file DEST",
	about: `
Writes a consistent copy of the SQLite database --db into DEST, a file that must not exist, while a
memoryd may go on serving it: SQLite's VACUUM INTO copies one snapshot of the log and its
projections. The copy is written under a temporary name beside DEST and renamed once whole, mode
0600. It holds no token (the token file beside the database is not copied). Prints {"backup",
"position", "bytes"}: the copy's file, the last log position in it and its size. memoryd restore
checks a copy before it puts it in place. PostgreSQL is backed up with its own tools (pg_dump,
pg_basebackup), or its log taken with memoryd export (docs/durability.md).`,
	args: []arg{{name: "DEST", about: "the new file to write the copy to"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to copy, which must exist (env MEMORYD_DB; default the one serve uses)")
		return func(ctx context.Context, in *invocation) error {
			path, err := databaseToRead(in.getenv, *db, in.stderr)
			if err != nil {
				return err
			}
			dest, err := filepath.Abs(in.args[0])
			if err != nil {
				return err
			}
			svc, err := openExistingService(ctx, in.getenv, path, in.stderr)
			if err != nil {
				return err
			}
			defer svc.Close()
			last, err := svc.Store().Backup(ctx, dest)
			if err != nil {
				return err
			}
			fi, err := os.Stat(dest)
			if err != nil {
				return err
			}
			fmt.Fprintf(in.stderr, "backup: %s holds the log to position %d (%d bytes)\n", dest, last, fi.Size())
			return writeJSON(in.stdout, map[string]any{"backup": dest, "position": last, "bytes": fi.Size()})
		}
	},
}

var restoreVerb = verb{
	name:     "restore",
	synopsis: "restore [--db F] BACKUP",
	summary:  "check a backup with verify, then put it in place as the database --db",
	about: `
Checks the SQLite database BACKUP as memoryd verify does (its projections rebuilt from its log and
compared, every event checked against an import's rules; the report printed) and, only when it is
clean, copies it to --db, which must not exist: move the old database aside first (with its -wal
and -shm files, and while no memoryd serves it). The copy is written under a temporary name and
renamed once whole, mode 0600, its folder created 0700. A serve started on --db then makes a new
token beside it unless MEMORYD_TOKEN is set.`,
	args: []arg{{name: "BACKUP", about: "the backup to restore (memoryd backup wrote it)"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "the database `F` to create from the backup (env MEMORYD_DB; default the one serve uses)")
		return func(ctx context.Context, in *invocation) error {
			dest := *db
			if dest == "" {
				var err error
				if dest, err = defaultDBPath(in.getenv); err != nil {
					return err
				}
			}
			file, ok := memory.ParseLocation(dest).File()
			if !ok {
				return &usageError{"restore: --db must be an SQLite file; restore PostgreSQL with its own tools, or memoryd import an export (docs/durability.md)"}
			}
			if _, err := os.Lstat(file); err == nil {
				return fmt.Errorf("%s exists: move it aside (with its -wal and -shm files, while no memoryd serves it), or give another --db", file)
			}
			src := in.args[0]
			if fi, err := os.Stat(src); err != nil || !fi.Mode().IsRegular() {
				return fmt.Errorf("%s is not a backup file", src)
			}
			if err := runVerify(ctx, src, in); err != nil {
				return fmt.Errorf("the backup %s is not restored: %w", src, err)
			}
			if err := copyPrivate(src, file); err != nil {
				return err
			}
			fmt.Fprintf(in.stderr, "restore: %s is now the database %s\n", src, file)
			return nil
		}
	},
}

// copyPrivate copies src to the new file dest (0600, its folder made 0700)
// under a temporary name, renamed once whole and synced.
func copyPrivate(src, dest string) (err error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.partial")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(out.Name())
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := errors.Join(out.Chmod(0o600), out.Sync(), out.Close()); err != nil {
		return err
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("%s appeared while the backup was copied: not replaced", dest)
	}
	return os.Rename(out.Name(), dest)
}
