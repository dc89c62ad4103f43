//go:build unix

package forensics

import (
	"errors"
	"syscall"
)

// processRuns says whether a process with id pid exists (signal 0 checks
// without sending; EPERM: it exists, another user's).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
