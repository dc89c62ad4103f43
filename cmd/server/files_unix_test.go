//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// privateFiles fails the test for each of the database's files (path, its
// -wal and -shm) that exists with a mode other than 0600; the database
// itself must exist.
func privateFiles(t *testing.T, what, path string) {
	t.Helper()
	for i, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			if i > 0 && os.IsNotExist(err) {
				continue
			}
			t.Errorf("%s: %v", what, err)
		} else if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: %s has mode %04o, want 0600", what, filepath.Base(name), perm)
		}
	}
}

// TestVerbsCreatePrivateDatabases: every verb that creates a database
// (serve, import, replay --db, import-session) makes it, its -wal and -shm
// 0600, and serve its token 0600, with a umask that would leave them
// readable by everyone. It sets the process's umask: it must not run in
// parallel with tests that create files.
func TestVerbsCreatePrivateDatabases(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0))
	dir := t.TempDir()

	db := filepath.Join(dir, "serve", "memory.db")
	s := startServe(t, db, env(nil))
	token, err := os.ReadFile(filepath.Join(dir, "serve", "token"))
	if err != nil {
		t.Fatal(err)
	}
	if st := s.call(t, strings.TrimSpace(string(token)), "POST", "/v1/sessions/attach", `{"session_key":"/s/private.jsonl"}`, nil); st != 200 {
		t.Fatalf("attach: %d", st)
	}
	for _, name := range []string{db + "-wal", db + "-shm"} {
		if _, err := os.Stat(name); err != nil {
			t.Fatalf("while serving: %v", err) // the check would prove nothing
		}
	}
	privateFiles(t, "serve", db)
	if fi, err := os.Stat(filepath.Join(dir, "serve", "token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("serve: the token file is %v, %v; want mode 0600", fi, err)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}

	log := fxLog("idempotent-retries")
	db = filepath.Join(dir, "import.db")
	fxMust(t, "import", "--db", db, log)
	privateFiles(t, "import", db)

	db = filepath.Join(dir, "replay.db")
	fxMust(t, "replay", log, "--db", db)
	privateFiles(t, "replay --db", db)

	session := filepath.Join(dir, "2026-12-02T09-00-00-000Z_ci.jsonl")
	if err := os.WriteFile(session, []byte(strings.Join(fxSession, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(dir, "session.db")
	fxMust(t, "import-session", "--db", db, session)
	privateFiles(t, "import-session", db)
}

// TestOpenWarnsOfReadableDatabase: a database other users can read (made
// by an earlier version) still opens, with a warning naming the file and
// the fix: on stderr for the command-line verbs, in the log for serve.
func TestOpenWarnsOfReadableDatabase(t *testing.T) {
	db := fxImport(t, fxLog("idempotent-retries"))
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	want := db + " is accessible to other users (mode 0644): they can read every note in it; fix: chmod 600 " + db
	out, stderr, err := fxRun(t, nil, "export", "--db", db)
	if err != nil || out == "" {
		t.Fatalf("export of a readable database: %v\n%s", err, stderr)
	}
	if stderr != "memoryd: warning: "+want+"\n" {
		t.Errorf("export's stderr %q, want the warning %q", stderr, want)
	}

	s := startServe(t, db, env(map[string]string{"MEMORYD_TOKEN": "x"}))
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	var warned bool
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		var rec struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Level == "WARN" && rec.Msg == want {
			warned = true
		}
	}
	if !warned {
		t.Errorf("serve logged no warning %q:\n%s", want, s.stderr.String())
	}

	if err := os.Chmod(db, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := fxRun(t, nil, "export", "--db", db); err != nil || stderr != "" {
		t.Errorf("export of a private database: %v, stderr %q", err, stderr)
	}
}

// TestVerbsTakeAnyDatabaseName: --db names the file of exactly that name,
// whatever characters it holds ('#' and '?' once cut it short, '%XX' was
// decoded): import writes it, export reads it back, and nothing else is
// made in its folder or the folder above.
func TestVerbsTakeAnyDatabaseName(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(root, "C#proj", "a?b %41 é笔.db")
	log := fxLog("idempotent-retries")
	fxMust(t, "import", "--db", db, log)
	if got := fxExport(t, "--db", db); !bytes.Equal(got, mustRead(t, log)) {
		t.Error("export does not give back the imported log")
	}
	if got := fxJSON(t, fxMust(t, "verify", "--db", db)); got["clean"] != true {
		t.Errorf("verify: %v", got)
	}
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if len(files) != 1 || files[0] != db {
		t.Errorf("files made: %q, want only %q", files, db)
	}
}
