//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// openPrivate opens or creates the user's own file at path, 0600,
// following no symbolic link and refusing a file another user owns.
func openPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !fi.Mode().IsRegular():
			err = fmt.Errorf("%s is not a regular file", path)
		case !ok || int(st.Uid) != os.Getuid():
			err = fmt.Errorf("%s is not yours", path)
		case fi.Mode().Perm()&0o077 != 0:
			err = os.Chmod(path, 0o600)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockFile holds an exclusive lock on f until it is closed.
func lockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
}

// ownedByUser reports whether this process's user owns the file.
func ownedByUser(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
