package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/memoryd/memoryd"

// moduleRoot is the module's folder, seen from this package's folder.
const moduleRoot = "../.."

// goDeps returns the transitive imports (go list's .Deps, the set
// `go list -deps` prints) of every package matching the patterns.
func goDeps(t *testing.T, patterns ...string) map[string][]string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	args := append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, patterns...)
	cmd := exec.Command(goBin, args...)
	cmd.Dir = moduleRoot
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		deps[f[0]] = f[1:]
	}
	return deps
}

// TestLayering keeps the domain free of HTTP and the event log free of
// what is built on it.
func TestLayering(t *testing.T) {
	deps := goDeps(t, "./internal/...")
	for _, p := range []string{"events", "projections", "memory", "address", "tools"} {
		if _, ok := deps[module+"/internal/"+p]; !ok {
			t.Errorf("package internal/%s not found by go list", p)
		}
	}
	forbidden := func(pkg string, bad ...string) {
		for _, b := range bad {
			if slices.Contains(deps[pkg], b) {
				t.Errorf("%s imports %s (directly or not)", strings.TrimPrefix(pkg, module+"/"), strings.TrimPrefix(b, module+"/"))
			}
		}
	}
	for pkg := range deps {
		if pkg == module+"/internal/api" {
			continue
		}
		// Only internal/api (and cmd) may speak HTTP.
		forbidden(pkg, "net/http", module+"/internal/api")
	}
	forbidden(module+"/internal/events", module+"/internal/projections", module+"/internal/memory")
	forbidden(module+"/internal/projections", module+"/internal/memory")
}

// TestPackageDocs: every hand-written package under internal/ and cmd/ has
// a package comment. Packages whose files are all generated are exempt.
func TestPackageDocs(t *testing.T) {
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
