//go:build unix

package forensics

import (
	"errors"
	"syscall"
)

// processRuns says whether a process with id pid exists. Signal 0 checks
// without sending, and EPERM means another user's process exists.
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
