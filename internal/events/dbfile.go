package events

import (
	"net/url"
	"path/filepath"
	"strings"
)

// FileURI returns the SQLite URI that opens the database file at path
// with the query parameters q (nil: none). SQLite ends a URI's path at
// '?' or '#' and decodes %XX in it, and the driver takes the first '?' for
// the start of its parameters, so the path is percent-encoded: any file
// name (with '#', '?', '%', spaces, non-ASCII) opens the file of exactly
// that name. Every sql.Open of a database file goes through it.
func FileURI(path string, q url.Values) string {
	p := filepath.ToSlash(path)
	if filepath.VolumeName(path) != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: file:///C:/dir/memory.db
	}
	uri := "file:"
	if strings.HasPrefix(p, "/") {
		uri = "file://" // an empty authority, as p itself may start with "//"
	}
	uri += (&url.URL{Path: p}).EscapedPath()
	if enc := q.Encode(); enc != "" {
		uri += "?" + enc
	}
	return uri
}
