//go:build !unix

package forensics

// processRuns cannot tell here: every process is taken to run, so no
// scratch folder of another process is removed.
func processRuns(pid int) bool { return true }
