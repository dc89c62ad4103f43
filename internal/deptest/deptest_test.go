package deptest

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/memoryd/memoryd"

// A rule bans imports from packages, and says why.
//
// Paths are module-relative ("internal/events") for the module's packages
// and full for others ("database/sql"); a path ending in "/..." stands for
// the package and everything under it. Rules are about the packages as
// they build: test files may import more (a test of internal/api opens a
// store to serve from).
type rule struct {
	pkgs   []string // the packages the rule is about
	except []string // packages of pkgs the rule is not about
	banned []string // what they must not import
	// direct: only the package's own imports are checked (.Imports);
	// otherwise everything it builds with (.Deps).
	direct bool
	reason string
}

// storage is what talks to SQLite and PostgreSQL, and the schema it is
// built from.
var storage = []string{"database/sql", "modernc.org/sqlite/...", "github.com/jackc/pgx/...", "github.com/pressly/goose/...", "migrations/...",
	"internal/eventlog/...", "internal/projections/..."}

// pure are the packages that decide and check without I/O.
var pure = []string{"internal/events", "internal/fence", "internal/history", "internal/address", "internal/tools", "internal/strictjson", "internal/jsonenc"}

var rules = []rule{
	{
		pkgs: pure, banned: storage,
		reason: "they are memoryd's model: the event catalog, the fence's state machine, history rendering, addresses, " +
			"tool specs, strict JSON, JSON encoding. They decide and check, so their tests and fuzzers run without a database, " +
			"and nothing about how events are stored can change what they decide (issue 18)",
	},
	{
		pkgs: pure, banned: []string{"net/http", "internal/memory/...", "internal/api/...", "internal/forensics/..."},
		reason: "the model knows neither the service built on it nor HTTP: a rule of the catalog or the fence " +
			"holds for the API, the tools, import and replay alike",
	},
	{
		pkgs: []string{"internal/tools"}, banned: []string{"internal/projections/...", "internal/eventlog/...", "internal/inspector/..."},
		reason: "each tool's result is defined once, in internal/tools beside its schema: memory, the API, the inspector " +
			"and any later protocol use those types, and a stored form (projections.NoteWriteResult) converts to one, " +
			"never the reverse, so renaming a stored field cannot change a result (issue 33)",
	},
	{
		pkgs: []string{"internal/fence"}, banned: []string{"encoding/json"}, direct: true,
		reason: "the fence's state is neither the API's form nor the store's: memory.StateView names its fields for " +
			"the API, the projections' storedState for agent_states (a version of its own), so a field renamed in " +
			"one changes neither the others nor a digest (issue 33)",
	},
	{
		pkgs: []string{"..."}, banned: []string{"cmd/..."},
		reason: "commands are the top: what two of them share belongs in internal/, where it is tested as a package",
	},
	{
		pkgs: []string{"..."}, banned: []string{"internal/memorytest"},
		reason: "internal/memorytest is for tests only (it fails a testing.TB, opens databases in a test's folder, " +
			"keeps a fixed clock): the binaries and the packages they build with have no use for it",
	},
	{
		pkgs: []string{"..."}, except: []string{"internal/memorytest"}, banned: []string{"internal/pgtest"},
		reason: "internal/pgtest is for tests only (it fails or skips a testing.TB, and creates and drops databases " +
			"on the server of MEMORYD_TEST_POSTGRES): the binaries and the packages they build with have no use for it " +
			"(internal/memorytest, for tests only too, opens its databases there when MEMORYD_TEST_ENGINE=postgres)",
	},
	{
		pkgs: []string{"..."}, except: []string{"internal/browsertest"}, banned: []string{"internal/browsertest", "github.com/chromedp/..."},
		reason: "internal/browsertest and chromedp drive a real browser for the web inspector's tests: " +
			"the binaries have no use for them, and memoryd ships no browser automation",
	},
	{
		pkgs: []string{"internal/..."}, except: []string{"internal/api", "internal/inspector", "internal/mcpserver"}, banned: []string{"net/http"},
		reason: "only internal/api, the web inspector it mounts (internal/inspector) and the commands speak HTTP: " +
			"the domain's errors are its own vocabulary, mapped to statuses in one place (internal/api/errors.go, " +
			"which the inspector is given); the MCP server builds with it only because the MCP SDK carries its " +
			"HTTP transport, and the rule below keeps it from importing net/http itself",
	},
	{
		pkgs: []string{"internal/inspector"}, banned: []string{"internal/eventlog/...", "internal/projections/...", "internal/api/..."}, direct: true,
		reason: "the inspector reads through memory's read paths (InspectTool, Tasks, Events, StreamEvents) and " +
			"forensics' copies of past states: it cannot reach the store's writes, and shows what the tools answer",
	},
	{
		pkgs:   []string{"internal/eventlog/..."},
		banned: []string{"internal/projections/...", "internal/memory/...", "internal/forensics/...", "internal/api/..."},
		reason: "the log is below what is built from it: the projections are its Options.Projector, so the log " +
			"can be tested, imported and replayed without them, and a read model cannot shape what is stored",
	},
	{
		pkgs:   []string{"internal/projections/..."},
		banned: []string{"internal/memory/...", "internal/forensics/...", "internal/api/..."},
		reason: "read models follow from events alone: the rebuild and verify recompute them from the log, " +
			"which they could not if the projections depended on the commands that decide",
	},
	{
		pkgs:   []string{"internal/memory/..."},
		banned: []string{"internal/forensics/...", "internal/api/..."},
		reason: "the domain is below its transports and tools: the API, the offline verbs and replay call the same commands",
	},
	{
		pkgs: []string{"internal/forensics/..."}, banned: []string{"internal/api/..."},
		reason: "replay and verify run offline, without a server",
	},
	{
		pkgs: []string{"internal/api"}, banned: []string{"internal/eventlog/...", "internal/projections/..."}, direct: true,
		reason: "HTTP speaks the domain's vocabulary (memory's commands, errors and reads): a handler that reached " +
			"the store or the read models would skip the commands' checks and tie the wire to the storage (issue 18)",
	},
	{
		pkgs: []string{"internal/mcpserver"}, banned: []string{"internal/eventlog/...", "internal/projections/...", "internal/api/...", "net/http"}, direct: true,
		reason: "MCP is one more protocol over memory's commands: its calls go through the same memory code path as the " +
			"HTTP routes, never a second implementation, and the transport (stdio, or HTTP mounted by api) is its caller's (issue 34)",
	},
	{
		pkgs: []string{"internal/claudecode"}, banned: []string{"internal/eventlog/...", "internal/projections/...", "internal/memory/...", "internal/api/...", "net/http", "os"}, direct: true,
		reason: "reading a Claude Code transcript is pure conversion into Pi-shaped entries, so it converts the same " +
			"way on every run and the service never reads a client's files: the hook that owns the file syncs what it reads (issue 34)",
	},
	{
		pkgs: []string{"internal/codex"}, banned: []string{"internal/eventlog/...", "internal/projections/...", "internal/memory/...", "internal/api/...", "net/http", "os"}, direct: true,
		reason: "reading a Codex rollout is pure conversion into Pi-shaped entries, as for Claude Code, so it converts the same " +
			"way on every run and the service never reads a client's files: the hook that owns the file syncs what it reads (issue 35)",
	},
	{
		pkgs: []string{"cmd/server"}, banned: []string{"internal/eventlog/...", "internal/projections/..."}, direct: true,
		reason: "the server command wires and parses flags; opening, importing and verifying a database are the " +
			"domain's (issue 18)",
	},
}

// exceptions are the imports that break a rule today, each as
// "package imports path" (module-relative). The list is exact: the test
// fails for an exception the code no longer needs, so that it is removed.
var exceptions = map[string]string{}

// pkg is what go list says of one of the module's packages.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// rel returns path module-relative, if it is the module's.
func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// matches reports whether a module-relative path matches a rule path.
func matches(path, pattern string) bool {
	if pattern == "..." {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == p || strings.HasPrefix(path, p+"/")
	}
	return path == pattern
}

// goCmd returns a go command run in the module's root.
func goCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	goBin, err := exec.LookPath("go") // go test puts its GOROOT/bin first on PATH
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = moduleRoot(t, goBin)
	return cmd
}

func moduleRoot(t *testing.T, goBin string) string {
	t.Helper()
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %q, %v", out, err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// listModule returns the module's packages by module-relative path.
func listModule(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := goCmd(t, "list", "-json=ImportPath,Imports,Deps", "./...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[rel(p.ImportPath)] = p
	}
	return pkgs
}

// TestDependencies checks the rules, and that the exceptions are exactly
// the imports that break them.
func TestDependencies(t *testing.T) {
	pkgs := listModule(t)
	if _, ok := pkgs["internal/events"]; !ok || len(pkgs) < 10 {
		t.Fatalf("go list found %d packages, not internal/events: is it listing the module?", len(pkgs))
	}
	used := map[string]bool{}
	for _, r := range rules {
		// A rule about no package, or banning a package of the module
		// that is not there, checks nothing: a typo or a rename.
		for _, pat := range append(slices.Clone(r.pkgs), r.except...) {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(pkgs)), func(p string) bool { return matches(p, pat) }) {
				t.Errorf("rule %q: no package of the module matches %s", r.reason, pat)
			}
		}
		for _, b := range r.banned {
			if local := strings.HasPrefix(b, "internal/") || strings.HasPrefix(b, "cmd/") || strings.HasPrefix(b, "migrations"); local &&
				!slices.ContainsFunc(slices.Collect(maps.Keys(pkgs)), func(p string) bool { return matches(p, b) }) {
				t.Errorf("rule %q bans %s, which is not a package of the module", r.reason, b)
			}
		}
		for name, p := range pkgs {
			if !slices.ContainsFunc(r.pkgs, func(pat string) bool { return matches(name, pat) }) ||
				slices.ContainsFunc(r.except, func(pat string) bool { return matches(name, pat) }) {
				continue
			}
			imports := p.Deps
			if r.direct {
				imports = p.Imports
			}
			for _, imp := range imports {
				imp = rel(imp)
				if imp == name || !slices.ContainsFunc(r.banned, func(b string) bool { return matches(imp, b) }) {
					continue
				}
				how := "imports"
				if !r.direct && !slices.Contains(p.Imports, imp) && !slices.Contains(p.Imports, module+"/"+imp) {
					how = "builds with (imports indirectly)"
				}
				key := name + " imports " + imp
				if _, ok := exceptions[key]; ok {
					used[key] = true
					t.Logf("known exception: %s (%s)", key, exceptions[key])
					continue
				}
				t.Errorf("%s %s %s, which it must not: %s", name, how, imp, r.reason)
			}
		}
	}
	for key := range exceptions {
		if !used[key] {
			t.Errorf("exception %q is no longer needed: remove it from the list", key)
		}
	}
}
