//go:build !unix

package events

import "os"

// removed reports whether f's file is no longer the one at its name (or
// cannot be checked).
func removed(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return true
	}
	at, err := os.Stat(f.Name())
	return err != nil || !os.SameFile(fi, at)
}
