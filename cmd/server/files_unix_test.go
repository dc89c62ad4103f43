//go:build unix

package main

import (
	"bytes"
	"io/fs"
	"path/filepath"
	"testing"
)

// TestVerbsTakeAnyDatabaseName: --db names the file of exactly that name,
// whatever characters it holds ('#' and '?' once cut it short, '%XX' was
// decoded): import writes it, export reads it back, and nothing else is
// made in its folder or the folder above.
func TestVerbsTakeAnyDatabaseName(t *testing.T) {
	root := t.TempDir()
	db := filepath.Join(root, "C#proj", "a?b %41 é笔.db")
	log := fxLog("idempotent-retries")
	fxMust(t, "import", "--db", db, log)
	if got := fxExport(t, "--db", db); !bytes.Equal(got, mustRead(t, log)) {
		t.Error("export does not give back the imported log")
	}
	if got := fxJSON(t, fxMust(t, "verify", "--db", db)); got["clean"] != true {
		t.Errorf("verify: %v", got)
	}
	var files []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if len(files) != 1 || files[0] != db {
		t.Errorf("files made: %q, want only %q", files, db)
	}
}
