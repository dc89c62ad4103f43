package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/memoryd/memoryd/internal/forensics"
)

// useScratchFolder puts the scratch copies this process makes (the
// inspector's past states, inspect's imported log, call and verify) in
// the scratch folder of memoryd's data folder (0700, defaultDataDir)
// instead of the system's temporary folder, and removes there the copies
// of memorydes that no longer run (killed): several memorydes may share
// the data folder, each has its own folder (forensics.RemoveStaleScratch).
// Without a data folder (no HOME) the copies stay in the temporary folder.
func useScratchFolder(getenv func(string) string, stderr io.Writer) {
	data, err := defaultDataDir(getenv)
	if err != nil {
		return
	}
	dir := filepath.Join(data, "scratch")
	forensics.SetScratchFolder(dir)
	if err := forensics.RemoveStaleScratch(dir); err != nil {
		fmt.Fprintf(stderr, "memoryd: warning: removing stale scratch copies in %s: %v\n", dir, err)
	}
}
