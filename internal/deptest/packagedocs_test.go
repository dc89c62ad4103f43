package deptest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocs: every hand-written package under internal/ and cmd/ has
// a package comment. Packages whose files are all generated are exempt.
func TestPackageDocs(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	moduleRoot := moduleRoot(t, goBin)
	n := 0
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(moduleRoot, top), func(dir string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			files, err := filepath.Glob(filepath.Join(dir, "*.go"))
			if err != nil {
				return err
			}
			documented, generated, sources := false, 0, 0
			name := ""
			fset := token.NewFileSet()
			for _, file := range files {
				if strings.HasSuffix(file, "_test.go") {
					continue
				}
				f, err := parser.ParseFile(fset, file, nil, parser.PackageClauseOnly|parser.ParseComments)
				if err != nil {
					return err
				}
				sources++
				name = f.Name.Name
				if ast.IsGenerated(f) {
					generated++
				}
				if f.Doc != nil {
					documented = true
					want := "Package " + name + " "
					if name == "main" {
						want = "Command "
					}
					if !strings.HasPrefix(f.Doc.Text(), want) {
						t.Errorf("%s: package comment should start %q", file, want)
					}
				}
			}
			rel, _ := filepath.Rel(moduleRoot, dir)
			switch {
			case sources == 0, generated == sources:
			case !documented:
				t.Errorf("package %s (%s) has no package comment", name, rel)
			default:
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 7 {
		t.Errorf("only %d documented packages found; is the walk looking in the right place?", n)
	}
}
