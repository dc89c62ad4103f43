//go:build unix

package eventlog

import (
	"os"
	"syscall"
)

// removed reports whether f's file no longer has a name, with one fstat.
// ok is false when it cannot tell.
func removed(f *os.File) (gone, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, false
	}
	if err := rc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		if syscall.Fstat(int(fd), &st) == nil {
			gone, ok = st.Nlink == 0, true
		}
	}); err != nil {
		return false, false
	}
	return gone, ok
}
