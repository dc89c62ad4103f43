package eventlog

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// FileURI returns the SQLite URI that opens the database file at path with
// the query parameters q. Every sql.Open of a database file goes through it.
func FileURI(path string, q url.Values) string {
	p := filepath.ToSlash(path)
	if filepath.VolumeName(path) != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: file:///C:/dir/memory.db
	}
	uri := "file:"
	if strings.HasPrefix(p, "/") {
		uri = "file://" // an empty authority, as p itself may start with "//"
	}
	// SQLite ends a URI's path at '?' or '#' and decodes %XX in it, and the
	// driver takes the first '?' for the start of its parameters. Escaping
	// the path opens the file of exactly that name, whatever it holds.
	uri += (&url.URL{Path: p}).EscapedPath()
	if enc := q.Encode(); enc != "" {
		uri += "?" + enc
	}
	return uri
}

// createPrivate makes an empty database file at path with mode 0600,
// unless something is there already. SQLite would create it readable by
// every local user, and gives the -wal and -shm files the same mode.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Chmod(0o600) // the umask may have taken bits away
	return errors.Join(err, f.Close())
}

// warnExposed reports through warnf each of the database's files that
// exists and that other users can access, -wal and -shm included.
func warnExposed(path string, warnf func(format string, args ...any)) {
	if warnf == nil {
		return
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil || !exposed(fi) {
			continue
		}
		warnf("%s is accessible to other users (mode %04o): they can read every note in it; fix: chmod 600 %s",
			name, fi.Mode().Perm(), name)
	}
}
