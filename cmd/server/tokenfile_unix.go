//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openTokenFile opens the token file at path for reading, refusing one
// that another user could have planted or can read.
func openTokenFile(path string) (*os.File, error) {
	// Follow no symbolic link, wait on no FIFO, and check the file opened,
	// so the file checked is the file read.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, tokenFileNotOurs(path, "is a symbolic link")
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkTokenFile(path, fi, os.Getuid())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkTokenFile reports whether the user uid may trust the token file at
// path, found to be fi. It must be uid's regular file, closed to others.
func checkTokenFile(path string, fi fs.FileInfo, uid int) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("token file: no owner in its file information")
	}
	mode := fi.Mode()
	switch {
	case !mode.IsRegular():
		return tokenFileNotOurs(path, fmt.Sprintf("is not a regular file (%v)", mode.Type()))
	case int(st.Uid) != uid:
		return &unsafeTokenFileError{
			path:    path,
			problem: fmt.Sprintf("is owned by uid %d (mode %04o), not by you (uid %d)", st.Uid, mode.Perm(), uid),
			fix:     "rm " + path + " (a new one is made at the next start) and keep the database in a folder only you can write to",
		}
	case mode.Perm()&0o077 != 0:
		return &unsafeTokenFileError{
			path:    path,
			problem: fmt.Sprintf("is accessible to group or others (mode %04o, owner uid %d)", mode.Perm(), st.Uid),
			fix:     "chmod 600 " + path,
		}
	}
	return nil
}
