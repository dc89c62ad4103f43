package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/memoryd/memoryd/internal/forensics"
)

// useScratchFolder puts this process's scratch copies in the data folder's
// scratch folder and removes there the copies of processes that no longer run.
func useScratchFolder(getenv func(string) string, stderr io.Writer) {
	data, err := defaultDataDir(getenv)
	if err != nil {
		return // without a data folder the copies stay in the system's temporary folder
	}
	dir := filepath.Join(data, "scratch")
	forensics.SetScratchFolder(dir)
	if err := forensics.RemoveStaleScratch(dir); err != nil {
		fmt.Fprintf(stderr, "memoryd: warning: removing stale scratch copies in %s: %v\n", dir, err)
	}
}
