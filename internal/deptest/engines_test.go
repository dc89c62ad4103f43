package deptest

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// engineImports are the packages only one storage engine uses: its
// driver, and its generated queries in the log and the projections.
var engineImports = []string{
	"modernc.org/sqlite", "modernc.org/sqlite/lib",
	"github.com/jackc/pgx/v5", "github.com/jackc/pgx/v5/pgconn", "github.com/jackc/pgx/v5/stdlib",
	module + "/internal/eventlog/eventspg", module + "/internal/projections/projectionspg",
}

// engineFile is the name of a file that holds one engine's code: its
// engine_<name>.go, a platform variant of it, or its generated adapter.
var engineFile = regexp.MustCompile(`^(engine_[a-z]+(_[a-z]+)?\.go|pgqueries\.go)$`)

// TestEngineFiles: in the log and the projections, only an engine's own
// files import its driver or its generated queries, and nothing outside
// them names an engine. A third engine is then one new file per layer
// plus its generated queries, and no edit elsewhere (docs/architecture.md).
func TestEngineFiles(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	root := moduleRoot(t, goBin)
	for _, dir := range []string{"internal/eventlog", "internal/projections"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files: %v", dir, err)
		}
		for _, path := range files {
			name := filepath.Base(path)
			if strings.HasSuffix(name, "_test.go") || engineFile.MatchString(name) {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, banned := range engineImports {
					if p == banned {
						t.Errorf("%s/%s imports %s: only an engine's files (engine_<name>.go) may, so that an engine is added or changed in its own files", dir, name, p)
					}
				}
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range []string{"eventlog.Postgres", "eventlog.SQLite", "Engine = \"", "postgresEngine", "sqliteEngine"} {
				if strings.Contains(string(src), e) {
					t.Errorf("%s/%s names %s: an engine is chosen by value, in its own files", dir, name, e)
				}
			}
		}
	}
}
