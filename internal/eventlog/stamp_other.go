//go:build !unix

package eventlog

import (
	"errors"
	"io/fs"
	"os"
)

// removed reports whether f's file is no longer the one at its name.
// ok is false when it cannot tell.
func removed(f *os.File) (gone, ok bool) {
	fi, err := f.Stat()
	if err != nil {
		return false, false
	}
	at, err := os.Stat(f.Name())
	if errors.Is(err, fs.ErrNotExist) {
		return true, true
	}
	if err != nil {
		return false, false
	}
	return !os.SameFile(fi, at), true
}
