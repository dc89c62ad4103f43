//go:build unix

package events

import (
	"os"
	"syscall"
)

// removed reports whether f's file no longer has a name (or cannot be
// checked): one fstat, no path lookup.
func removed(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	gone := true
	if err := rc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) == nil {
			gone = st.Nlink == 0
		}
	}); err != nil {
		return true
	}
	return gone
}
