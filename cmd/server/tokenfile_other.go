//go:build !unix

package main

import (
	"io/fs"
	"os"
)

// openTokenFile opens the token file at path for reading, refusing a
// symbolic link. On Windows the file has its folder's access list.
func openTokenFile(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, tokenFileNotOurs(path, "is a symbolic link")
	}
	return os.Open(path)
}
