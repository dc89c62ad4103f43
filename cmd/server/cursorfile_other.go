//go:build !unix

package main

import (
	"io/fs"
	"os"
	"os/exec"
)

// openPrivate opens or creates the file at path, refusing a symbolic link.
// On Windows the file has its folder's access list.
func openPrivate(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
	}
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

// lockFile does nothing here: hooks of one session may then sync at once,
// which the service's conflict check turns into a whole resync.
func lockFile(*os.File) error { return nil }

// ownedByUser is true here: on Windows the file has its folder's access list.
func ownedByUser(os.FileInfo) bool { return true }

// openAppendPrivate opens or creates the file at path for appending,
// refusing a symbolic link.
func openAppendPrivate(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// detach does nothing here: the started memoryd runs on its own.
func detach(*exec.Cmd) {}
