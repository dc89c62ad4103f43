//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// fakeFileInfo is what checkTokenFile is shown of a file.
type fakeFileInfo struct {
	mode fs.FileMode
	uid  uint32
}

func (f fakeFileInfo) Name() string       { return "token" }
func (f fakeFileInfo) Size() int64        { return 65 }
func (f fakeFileInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeFileInfo) ModTime() time.Time { return time.Time{} }
func (f fakeFileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeFileInfo) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }

// TestCheckTokenFile: a token file is trusted only when it is a regular
// file of the current user's that group and others cannot access; the
// refusal names the file, its owner and mode, and the fix.
func TestCheckTokenFile(t *testing.T) {
	const me, other = 1000, 1001
	for _, tc := range []struct {
		name string
		fi   fakeFileInfo
		want string // "" when trusted, else the refusal
	}{
		{"mine 0600", fakeFileInfo{0o600, me}, ""},
		{"mine 0400", fakeFileInfo{0o400, me}, ""},
		{"another user's 0600", fakeFileInfo{0o600, other},
			"refusing the token file /d/token: it is owned by uid 1001 (mode 0600), not by you (uid 1000); like an ssh private key, it must be yours and accessible to no one else; fix: rm /d/token (a new one is made at the next start) and keep the database in a folder only you can write to, or set MEMORYD_TOKEN"},
		{"another user's 0644", fakeFileInfo{0o644, other}, "is owned by uid 1001 (mode 0644), not by you (uid 1000)"},
		{"root's", fakeFileInfo{0o600, 0}, "is owned by uid 0 (mode 0600), not by you (uid 1000)"},
		{"mine 0644", fakeFileInfo{0o644, me},
			"refusing the token file /d/token: it is accessible to group or others (mode 0644, owner uid 1000); like an ssh private key, it must be yours and accessible to no one else; fix: chmod 600 /d/token, or set MEMORYD_TOKEN"},
		{"mine 0666", fakeFileInfo{0o666, me}, "(mode 0666, owner uid 1000)"},
		{"mine 0640", fakeFileInfo{0o640, me}, "(mode 0640, owner uid 1000)"},
		{"mine 0604", fakeFileInfo{0o604, me}, "(mode 0604, owner uid 1000)"},
		{"mine 0620", fakeFileInfo{0o620, me}, "(mode 0620, owner uid 1000)"},
		{"a folder", fakeFileInfo{fs.ModeDir | 0o700, me}, "it is not a regular file (d---------); "},
		{"a FIFO", fakeFileInfo{fs.ModeNamedPipe | 0o600, me}, "it is not a regular file (p---------); "},
	} {
		err := checkTokenFile("/d/token", tc.fi, me)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a refusal with %q", tc.name, err, tc.want)
		}
	}
}

// TestTokenFileRefusals: a token file beside the database that group or
// others can access, a symbolic link (even to a private file of the
// user's) or something other than a file is refused; a private one is
// read; none is changed.
func TestTokenFileRefusals(t *testing.T) {
	const token = "0123456789abcdef"
	for _, tc := range []struct {
		mode os.FileMode
		want string // "" when accepted
	}{
		{0o644, "is accessible to group or others (mode 0644, owner uid "},
		{0o666, "is accessible to group or others (mode 0666, owner uid "},
		{0o640, "is accessible to group or others (mode 0640, owner uid "},
		{0o600, ""},
		{0o400, ""},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "token")
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		got, err := loadToken(env(nil), filepath.Join(dir, "memory.db"))
		switch {
		case tc.want == "" && (err != nil || got != token):
			t.Errorf("mode %04o: %q, %v; want the file's token", tc.mode, got, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "refusing the token file "+path+": it "+tc.want) ||
			!strings.Contains(err.Error(), "fix: chmod 600 "+path+", or set MEMORYD_TOKEN")):
			t.Errorf("mode %04o: %q, %v; want a refusal with %q and the fix", tc.mode, got, err, tc.want)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != tc.mode {
			t.Errorf("mode %04o: the token file is now %v, %v", tc.mode, fi, err)
		}
	}

	// A symbolic link, to a private file with a token.
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "token")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if got, err := loadTokenWithin(t, filepath.Join(dir, "memory.db")); err == nil ||
		err.Error() != "refusing the token file "+link+": it is a symbolic link; like an ssh private key, it must be yours and accessible to no one else; fix: rm "+link+" (a new one is made at the next start), or set MEMORYD_TOKEN" {
		t.Errorf("a symbolic link: %q, %v; want a refusal", got, err)
	}
	// A dangling one is not followed to create the file it names.
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	if got, err := loadTokenWithin(t, filepath.Join(dir, "memory.db")); err == nil || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Errorf("a dangling symbolic link: %q, %v; want a refusal", got, err)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("the link's target was created: %v", err)
	}

	// A FIFO: refused at once, not waited on.
	dir = t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "token"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadTokenWithin(t, filepath.Join(dir, "memory.db")); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("a FIFO: %v; want a refusal", err)
	}
}

// loadTokenWithin is loadToken without MEMORYD_TOKEN, failing the test if
// it takes more than 5 s (it waited on a FIFO, or looped on a dangling
// symbolic link that it could neither read nor create).
func loadTokenWithin(t *testing.T, dbPath string) (string, error) {
	t.Helper()
	type result struct {
		token string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		token, err := loadToken(env(nil), dbPath)
		done <- result{token, err}
	}()
	select {
	case r := <-done:
		return r.token, r.err
	case <-time.After(60 * time.Second):
		t.Fatalf("loadToken beside %s did not return within 60 s", dbPath)
		return "", nil
	}
}

// TestServeRefusesPlantedTokenFile: serve, without MEMORYD_TOKEN, beside a
// token file others can read, does not start: exit 1, naming the file,
// its mode and owner, and the fix.
func TestServeRefusesPlantedTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte("planted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a serve that starts stops then
	defer cancel()
	err := run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "memory.db")},
		env(nil), nil, io.Discard, io.Discard)
	want := "refusing the token file " + path + ": it is accessible to group or others (mode 0666, owner uid "
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "fix: chmod 600 "+path) {
		t.Fatalf("serve beside a planted token file: %v (exit %d), want exit 1 with %q and the fix", err, exitCode(err), want)
	}
	// Refused before anything else: no database was made beside it.
	if names, _ := filepath.Glob(filepath.Join(dir, "memory.db*")); len(names) > 0 {
		t.Errorf("a refused start left %v behind", names)
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
