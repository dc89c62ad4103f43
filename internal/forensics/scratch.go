package forensics

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// scratchFolder is where Scratch makes its copies. An empty dir means the
// system's temporary folder, for tests and a memoryd without a data folder.
var scratchFolder struct {
	sync.Mutex
	dir string
}

// processFolderPrefix names a process's own folder in the scratch folder,
// pid-<its pid>. RemoveStaleScratch at a start removes those of processes
// that no longer run, so a copy outlives a SIGKILL only until then.
const processFolderPrefix = "pid-"

// SetScratchFolder makes Scratch create its copies under dir, in a private
// folder of this process, instead of in the system's temporary folder.
// memoryd sets it to the scratch folder of its data folder.
func SetScratchFolder(dir string) {
	scratchFolder.Lock()
	scratchFolder.dir = dir
	scratchFolder.Unlock()
}

// newScratchDir makes a new private folder for one scratch copy.
func newScratchDir() (string, error) {
	scratchFolder.Lock()
	dir := scratchFolder.dir
	scratchFolder.Unlock()
	if dir == "" {
		return os.MkdirTemp("", "memoryd-replay-")
	}
	own := filepath.Join(dir, processFolderPrefix+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(own, 0o700); err != nil {
		return "", fmt.Errorf("create the scratch folder: %w", err)
	}
	// MkdirAll keeps the mode of a folder that exists, so make sure no one
	// else can list or enter them. The data folder is memoryd's own.
	for _, d := range []string{dir, own} {
		if err := os.Chmod(d, 0o700); err != nil {
			return "", fmt.Errorf("scratch folder: %w", err)
		}
	}
	return os.MkdirTemp(own, "copy-")
}

// RemoveStaleScratch removes from the scratch folder dir the folders of
// processes that no longer run, and this process's own, which an earlier
// process with the same pid left. Folders of running processes and anything
// not named pid-<pid> are left.
func RemoveStaleScratch(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) { // nothing to do
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), processFolderPrefix))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), processFolderPrefix) || err != nil || pid <= 0 {
			continue
		}
		if pid == os.Getpid() || !processRuns(pid) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
