//go:build !unix

package eventlog

import "io/fs"

// exposed reports false, since the mode bits say nothing of who else may
// read a file here. Windows has ACLs, inherited from the folder.
func exposed(fs.FileInfo) bool { return false }
