//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
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

// openAppendPrivate opens or creates the user's own file at path for
// appending, 0600, following no symbolic link.
func openAppendPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || !ownedByUser(fi)) {
		err = fmt.Errorf("%s is not a regular file of yours", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// detach starts cmd in a session of its own, so it outlives the hook and
// the host's signals to the hook's process group.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}
