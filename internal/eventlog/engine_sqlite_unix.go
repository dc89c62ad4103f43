//go:build unix

package eventlog

import "io/fs"

// exposed reports whether users other than the owner may access fi.
func exposed(fi fs.FileInfo) bool { return fi.Mode().Perm()&0o077 != 0 }
