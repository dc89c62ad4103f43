package main

import (
	"bytes"
	"errors"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// The command line as a user meets it: help, flag order, usage errors,
// the listen address, and call's messages (issue 20).

// TestHelpListsEveryVerb: "memoryd help", -h, -help and --help print the
// verb list, a line each, on stdout and exit 0.
func TestHelpListsEveryVerb(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}} {
		out, stderr, err := fxRun(t, nil, args...)
		if err != nil || stderr != "" {
			t.Errorf("memoryd %s: %v, stderr %q; want exit 0 and nothing on stderr", strings.Join(args, " "), err, stderr)
		}
		for _, v := range verbs {
			if !regexp.MustCompile(`(?m)^  ` + v.name + ` +` + regexp.QuoteMeta(v.summary) + `$`).MatchString(out) {
				t.Errorf("memoryd %s does not list %q with its line %q:\n%s", strings.Join(args, " "), v.name, v.summary, out)
			}
		}
		if !strings.Contains(out, "usage: memoryd") || strings.Contains(out, "server ") {
			t.Errorf("memoryd %s does not call the program memoryd:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestHelpOfEveryVerb: "memoryd VERB -h" (and --help, -help, "memoryd help
// VERB", and -h after other flags) exits 0 and prints on stdout the
// verb's synopsis, what it does, its positional arguments and every flag.
func TestHelpOfEveryVerb(t *testing.T) {
	for _, v := range verbs {
		t.Run(v.name, func(t *testing.T) {
			fs, _, _ := parseVerb(v, nil, env(nil))
			var first string
			withFlag := []string{v.name, "-h"}
			if fs.Lookup("db") != nil {
				withFlag = []string{v.name, "--db", "x.db", "-h"}
			}
			for _, args := range [][]string{{v.name, "-h"}, {v.name, "--help"}, {v.name, "-help"}, {"help", v.name}, withFlag} {
				out, stderr, err := fxRun(t, nil, args...)
				if err != nil || stderr != "" {
					t.Fatalf("memoryd %s: %v, stderr %q; want exit 0 and nothing on stderr", strings.Join(args, " "), err, stderr)
				}
				if first == "" {
					first = out
				} else if out != first {
					t.Errorf("memoryd %s prints another help than memoryd %s -h:\n%s", strings.Join(args, " "), v.name, out)
				}
			}
			if !strings.HasPrefix(first, "usage: memoryd "+v.synopsis+"\n") {
				t.Errorf("help does not start with the synopsis:\n%s", first)
			}
			if !strings.Contains(first, strings.TrimSpace(v.about)) {
				t.Errorf("help does not say what %s does:\n%s", v.name, first)
			}
			for _, a := range v.args {
				if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(a.name) + ` +` + regexp.QuoteMeta(a.about)).MatchString(first) {
					t.Errorf("help does not describe the argument %s:\n%s", a.name, first)
				}
			}
			fs.VisitAll(func(f *flag.Flag) {
				if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(f.Name) + `( |$)`).MatchString(first) {
					t.Errorf("help does not list the flag --%s:\n%s", f.Name, first)
				}
			})
			if strings.Contains(first, "server ") {
				t.Errorf("help calls the program server:\n%s", first)
			}
		})
	}
	// call's --call-id is documented.
	out, _, _ := fxRun(t, nil, "call", "-h")
	if !strings.Contains(out, "  -call-id ID\n") {
		t.Errorf("call -h does not document --call-id:\n%s", out)
	}
}

// verbSamples is a valid command line of each verb: its flags (each with
// its value) and its positional arguments. TestFlagOrderEveryVerb needs
// one for every verb.
var verbSamples = map[string]struct{ flags, pos [][]string }{
	"serve":           {flags: [][]string{{"--redact", "all"}, {"--addr", "127.0.0.1:0"}, {"--db", "m.db"}, {"--sync", "normal"}, {"--audit-calls=false"}, {"--tls-cert", "c.pem"}, {"--tls-key", "k.pem"}, {"--insecure-plaintext"}}},
	"export":          {flags: [][]string{{"--db", "m.db"}, {"--task", "T"}, {"--until", "5"}}},
	"import":          {flags: [][]string{{"--db", "m.db"}}, pos: [][]string{{"log.jsonl"}}},
	"replay":          {flags: [][]string{{"--until", "5"}, {"--check-reads"}, {"--db", "out.db"}}, pos: [][]string{{"log.jsonl"}}},
	"verify":          {flags: [][]string{{"--db", "m.db"}, {"--erased", "T"}, {"--grep", "secret"}}},
	"call":            {flags: [][]string{{"--log", "log.jsonl"}, {"--until", "0"}, {"--task", "T"}, {"--agent", "/root/a"}, {"--call-id", "c1"}}, pos: [][]string{{"notes_read_file"}, {`{"path":"a.md"}`}}},
	"import-session":  {flags: [][]string{{"--db", "m.db"}}, pos: [][]string{{"session.jsonl"}}},
	"import-sessions": {flags: [][]string{{"--db", "m.db"}, {"--from", "pi"}, {"--since", "2026-01-31"}}, pos: [][]string{{"sessions"}}},
	"search":          {flags: [][]string{{"--db", "m.db"}, {"--agent-kind", "pi"}, {"--since", "2026-01-31"}, {"--limit", "5"}}, pos: [][]string{{"needle"}}},
	"backup":          {flags: [][]string{{"--db", "m.db"}}, pos: [][]string{{"copy.db"}}},
	"restore":         {flags: [][]string{{"--db", "m.db"}}, pos: [][]string{{"copy.db"}}},
	"forget":          {flags: [][]string{{"--db", "m.db"}, {"--vacuum"}, {"--wait", "3s"}}, pos: [][]string{{"T"}}},
	"retain":          {flags: [][]string{{"--db", "m.db"}}, pos: [][]string{{"T"}, {"30d"}}},
	"handoff":         {flags: [][]string{{"--db", "m.db"}, {"--to", "codex"}, {"--from", "/root"}, {"--as", "codex"}, {"--json"}}, pos: [][]string{{"T"}}},
	"tasks":           {flags: [][]string{{"--db", "m.db"}, {"--limit", "2"}, {"--before", "9"}}},
	"inspect":         {flags: [][]string{{"--addr", "127.0.0.1:0"}}, pos: [][]string{{"log.jsonl"}}},
	"stop":            {flags: [][]string{{"--addr", "127.0.0.1:7411"}, {"--db", "m.db"}, {"--wait", "5s"}}},
	"hook":            {flags: [][]string{{"--addr", "127.0.0.1:7411"}, {"--db", "m.db"}}, pos: [][]string{{"claude-code"}}},
	"mcp":             {flags: [][]string{{"--addr", "127.0.0.1:7411"}, {"--db", "m.db"}, {"--tool-names", "codex"}}},
	"setup":           {flags: [][]string{{"--addr", "127.0.0.1:7411"}, {"--bin", "m.db"}}, pos: [][]string{{"claude-code"}}},
	"version":         {}, // no flags nor arguments: nothing to order
}

// TestFlagOrderEveryVerb: every verb takes its flags before, between and
// after its positional arguments, and parses them all the same.
func TestFlagOrderEveryVerb(t *testing.T) {
	for _, v := range verbs {
		sample, ok := verbSamples[v.name]
		if !ok {
			t.Errorf("verbSamples has no command line of the verb %s", v.name)
			continue
		}
		if len(sample.flags) == 0 {
			continue
		}
		var flags, pos []string
		for _, f := range sample.flags {
			flags = append(flags, f...)
		}
		for _, p := range sample.pos {
			pos = append(pos, p...)
		}
		orders := map[string][]string{
			"flags first":                          append(slices.Clone(flags), pos...),
			"flags last":                           append(slices.Clone(pos), flags...),
			"flags reversed, around the arguments": append(append(reversedFlags(sample.flags[1:]), pos...), sample.flags[0]...),
		}
		if len(pos) > 0 {
			between := slices.Concat(sample.flags[:1]...)
			between = append(between, pos[0])
			between = append(between, slices.Concat(sample.flags[1:]...)...)
			orders["between"] = append(between, pos[1:]...)
		}
		want := parsed(t, v, orders["flags first"])
		for name, args := range orders {
			if got := parsed(t, v, args); got != want {
				t.Errorf("%s %q (%s) parses as\n%s\nwant\n%s", v.name, args, name, got, want)
			}
		}
	}
	// And when it runs: positionals first, flags after.
	dir := t.TempDir()
	log := fxLog("cross-agent-notes")
	db := filepath.Join(dir, "m.db")
	if out, _, err := fxRun(t, nil, "import", log, "--db", db); err != nil || !strings.HasPrefix(out, "imported ") {
		t.Fatalf("import FILE --db F: %v %q", err, out)
	}
	task := fxTask(t, log)
	for _, pair := range [][2][]string{
		{{"export", "--db", db, "--until", "7"}, {"export", "--until", "7", "--db", db}},
		{{"replay", "--until", "7", log}, {"replay", log, "--until", "7"}},
		{{"call", "--db", db, "--task", task, "notes_list_files_by_prefix", "{}"}, {"call", "notes_list_files_by_prefix", "--db", db, "{}", "--task", task}},
		{{"verify", "--db", db}, {"verify", "--db=" + db}},
	} {
		a, b := fxMust(t, pair[0]...), fxMust(t, pair[1]...)
		if a != b {
			t.Errorf("memoryd %q printed\n%s\nmemoryd %q printed\n%s", pair[0], a, pair[1], b)
		}
	}
	session := filepath.Join(dir, "session.jsonl")
	b := sessiongen.NewBuilder(3)
	b.UserText("hello")
	var sb bytes.Buffer
	if err := b.Session().WriteJSONL(&sb); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(session, sb.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	fxMust(t, "import-session", session, "--db", filepath.Join(dir, "s.db"))
}

// reversedFlags is flags, last first.
func reversedFlags(flags [][]string) []string {
	var out []string
	for _, f := range slices.Backward(flags) {
		out = append(out, f...)
	}
	return out
}

// fxTask is the id of the first task of a log.
func fxTask(t *testing.T, log string) string {
	t.Helper()
	return fxDecode[events.TaskCreated](t, fxEvents(t, log)[0]).TaskID
}

// parsed is what args mean to v: its flags' values and its positionals.
func parsed(t *testing.T, v *verb, args []string) string {
	t.Helper()
	fs, _, err := parseVerb(v, args, env(nil))
	if err != nil {
		t.Fatalf("%s %q: %v", v.name, args, err)
	}
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) { b.WriteString("--" + f.Name + "=" + f.Value.String() + " ") })
	b.WriteString("args " + quoteAll(fs.Args()))
	return b.String()
}

// TestUsageExitsTwo: every command line memoryd cannot run is a usage
// error (exit 2) with a message naming what is wrong, then the verb's
// usage line; nothing is created.
func TestUsageExitsTwo(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	log := fxLog("idempotent-retries")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "extra", "--db", db}, `serve takes no arguments; got "extra"`},
		{[]string{"--db", db, "a", "b"}, `serve takes no arguments; got "a" "b"`},
		{[]string{"--sync", "bogus", "--db", db}, `--sync must be full or normal, got "bogus"`},
		{[]string{"--addr", "nonsense", "--db", db}, `--addr "nonsense" (or MEMORYD_ADDR) is not HOST:PORT or :PORT`},
		{[]string{"--addr", "127.0.0.1:http", "--db", db}, `--addr "127.0.0.1:http" (or MEMORYD_ADDR): the port "http" is not a number from 0 to 65535`},
		{[]string{"--addr", "127.0.0.1:70000", "--db", db}, `--addr "127.0.0.1:70000" (or MEMORYD_ADDR): the port "70000" is not a number from 0 to 65535`},
		{[]string{"--max-body", "0", "--db", db}, `--max-body must be at least 1 byte`},
		{[]string{"--shutdown-grace", "-1s", "--db", db}, `--shutdown-grace must not be negative`},
		{[]string{"--tls-cert", "c.pem", "--db", db}, `--tls-cert and --tls-key (or MEMORYD_TLS_CERT and MEMORYD_TLS_KEY) go together`},
		{[]string{"serve", "--tls-key", "k.pem", "--db", db}, `--tls-cert and --tls-key (or MEMORYD_TLS_CERT and MEMORYD_TLS_KEY) go together`},
		{[]string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--insecure-plaintext", "--db", db}, `--insecure-plaintext contradicts --tls-cert`},
		{[]string{"--addr", "0.0.0.0:0", "--db", db}, `--addr "0.0.0.0:0" (or MEMORYD_ADDR) listens beyond this machine`},
		{[]string{"serve", "--nope"}, `flag provided but not defined: -nope`},
		{[]string{"export", "--nope", "--db", db}, `flag provided but not defined: -nope`},
		{[]string{"export", "--db", db, "extra"}, `export takes no arguments; got "extra"`},
		{[]string{"export", "--db", db, "--until", "-1"}, `invalid value "-1" for flag -until: want a position: 0 (before any event) or a positive number`},
		{[]string{"export", "--db", db, "--until", "soon"}, `invalid value "soon" for flag -until`},
		{[]string{"import", "--db", db}, `import needs FILE`},
		{[]string{"import", "a.jsonl", "--db", db, "b.jsonl"}, `import takes FILE; got 1 argument more: "b.jsonl"`},
		{[]string{"import", "a.jsonl"}, `import needs --db F`},
		{[]string{"import", "--nope", "a.jsonl", "--db", db}, `flag provided but not defined: -nope`},
		{[]string{"replay"}, `replay needs FILE`},
		{[]string{"replay", log, log}, `replay takes FILE; got 1 argument more`},
		{[]string{"replay", log, "--until", "-3"}, `invalid value "-3" for flag -until`},
		{[]string{"replay", log, "--nope"}, `flag provided but not defined: -nope`},
		{[]string{"verify", "--db", db, "extra"}, `verify takes no arguments; got "extra"`},
		{[]string{"verify", "--nope", "--db", db}, `flag provided but not defined: -nope`},
		{[]string{"verify", "--db", db, "--grep", "x"}, `--grep goes with --erased TASK`},
		{[]string{"verify", "--db", db, "--erased", "T", "--grep", ""}, `--grep needs a text that is not empty`},
		{[]string{"forget", "--db", db}, `forget needs TASK`},
		{[]string{"forget", "T", "U", "--db", db}, `forget takes TASK; got 1 argument more: "U"`},
		{[]string{"forget", "T", "--db", db, "--wait", "0s"}, `--wait must be positive`},
		{[]string{"retain", "--db", db}, `retain needs TASK and PERIOD (30d, forever or default), or --dry-run or --apply`},
		{[]string{"retain", "T", "--db", db}, `retain needs TASK and PERIOD`},
		{[]string{"retain", "T", "30 days", "--db", db}, `PERIOD: not a retention period: "30 days" has no unit h, d or w`},
		{[]string{"retain", "T", "off", "--db", db}, `PERIOD: not a retention period: "off" has no unit h, d or w`},
		{[]string{"retain", "--dry-run", "--apply", "--db", db}, `retain takes --dry-run or --apply, not both`},
		{[]string{"retain", "--dry-run", "T", "--db", db}, `retain --dry-run or --apply takes no TASK; got "T"`},
		{[]string{"retain", "--dry-run", "--retain", "90", "--db", db}, `--retain (or MEMORYD_RETAIN): not a retention period: "90" has no unit h, d or w`},
		{[]string{"retain", "--apply", "--db", db, "--wait", "0s"}, `--wait must be positive`},
		{[]string{"serve", "--db", db, "--retain", "3 months"}, `--retain (or MEMORYD_RETAIN): not a retention period: "3 months"`},
		{[]string{"call", "--log", log, "notes_read_file"}, `call needs --task T`},
		{[]string{"call", "--log", log, "--db", db, "--task", "T", "notes_read_file"}, `call takes --db F or --log FILE, not both`},
		{[]string{"call", "--log", log, "--task", "T"}, `call needs TOOL`},
		{[]string{"call", "--log", log, "--task", "T", "notes_read_file", "{}", "x"}, `call takes TOOL 'ARGS-JSON'; got 1 argument more: "x"`},
		{[]string{"call", "--log", log, "--task", "T", "notes_read_file", `{"path":`}, `ARGS-JSON is not valid JSON`},
		{[]string{"call", "--log", log, "--task", "T", "--until", "x", "notes_read_file"}, `invalid value "x" for flag -until`},
		{[]string{"call", "--nope", "--log", log, "--task", "T", "notes_read_file"}, `flag provided but not defined: -nope`},
		{[]string{"import-session", "--db", db}, `import-session needs SESSION.jsonl`},
		{[]string{"import-session", "a.jsonl", "b.jsonl", "--db", db}, `import-session takes SESSION.jsonl; got 1 argument more: "b.jsonl"`},
		{[]string{"import-session", "a.jsonl"}, `import-session needs --db F`},
		{[]string{"bogus"}, `unknown verb "bogus"`},
		{[]string{"help", "bogus"}, `unknown verb "bogus"`},
		{[]string{"help", "serve", "export"}, `help takes one verb`},
	} {
		_, stderr, err := fxRun(t, nil, tc.args...)
		var ue *usageError
		if !errors.As(err, &ue) || exitCode(err) != 2 {
			t.Errorf("memoryd %q: %v (exit %d), want a usage error (exit 2)", tc.args, err, exitCode(err))
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tc.want) {
			t.Errorf("memoryd %q says %q, want it to start with %q", tc.args, msg, tc.want)
		}
		if v := verbOf(tc.args); v != nil && !strings.HasSuffix(msg, "\n"+v.usageLine()) {
			t.Errorf("memoryd %q: the message does not end with the usage line of %s:\n%s", tc.args, v.name, msg)
		}
		if strings.Contains(msg, "server ") || stderr != "" {
			t.Errorf("memoryd %q: message %q, stderr %q", tc.args, msg, stderr)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("usage errors left %v (%v) behind", entries, err)
	}
}

// verbOf is the verb a command line runs (nil for help or an unknown one).
func verbOf(args []string) *verb {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return lookupVerb("serve")
	}
	return lookupVerb(args[0])
}

// TestListenAddress: a port alone is loopback; a host named is kept.
func TestListenAddress(t *testing.T) {
	for in, want := range map[string]string{
		":0":             "127.0.0.1:0",
		":7411":          "127.0.0.1:7411",
		"127.0.0.1:7411": "127.0.0.1:7411",
		"localhost:0":    "localhost:0",
		"[::1]:0":        "[::1]:0",
		"0.0.0.0:7411":   "0.0.0.0:7411",
		"[::]:7411":      "[::]:7411",
		"192.168.1.5:80": "192.168.1.5:80",
	} {
		if got, err := listenAddress(in); err != nil || got != want {
			t.Errorf("listenAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestServePortOnlyAddrIsLoopback: serve --addr :0 listens on 127.0.0.1
// (its "listening on" line says so and it answers there), checks the Host
// header as a loopback listener does, and is not reachable on the
// machine's other addresses.
func TestServePortOnlyAddrIsLoopback(t *testing.T) {
	for _, getenv := range []func(string) string{
		env(map[string]string{"MEMORYD_TOKEN": "tok"}),
		env(map[string]string{"MEMORYD_TOKEN": "tok", "MEMORYD_ADDR": ":0"}),
	} {
		args := []string{"serve", "--db", filepath.Join(t.TempDir(), "m.db")}
		if getenv("MEMORYD_ADDR") == "" {
			args = append(args, "--addr", ":0")
		}
		s := startRun(t, args, getenv) // fails unless the line is "listening on http://127.0.0.1:PORT" and /healthz answers there
		_, port, err := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest("GET", s.url+"/v1/events?after=0", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok")
		req.Host = "attacker.example:" + port
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a request with a foreign Host got %d, want 403: the Host check must be on", resp.StatusCode)
		}
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			if c, err := net.Dial("tcp", net.JoinHostPort(ipn.IP.String(), port)); err == nil {
				c.Close()
				t.Errorf("serve --addr :0 answers on %s: a port alone must listen on loopback only", ipn.IP)
			}
		}
		if err := s.stop(t); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCallWriteIsNotStored: call runs a write against a scratch copy; it
// prints the write's answer and a line on stderr saying nothing was
// stored, and the database is unchanged. A read prints no such line.
func TestCallWriteIsNotStored(t *testing.T) {
	log := fxLog("cross-agent-notes")
	db := fxImport(t, log)
	task := fxTask(t, log)
	before := fxExport(t, "--db", db)
	for _, src := range [][]string{{"--db", db}, {"--log", log}} {
		args := append(slices.Clone(src), "--task", task, "notes_write_file", `{"path":"new.md","text":"x"}`)
		out, stderr, err := fxRun(t, nil, append([]string{"call"}, args...)...)
		if err != nil {
			t.Fatalf("call %q: %v\n%s", args, err, stderr)
		}
		if d, _ := fxJSON(t, out)["details"].(map[string]any); d["created"] != true {
			t.Errorf("call %q answered %s", args, out)
		}
		if !strings.Contains(stderr, "memoryd: not stored: call ran notes_write_file against a scratch copy of the log") || !strings.Contains(stderr, src[1]+" is unchanged") {
			t.Errorf("call %q: stderr %q does not say that nothing was stored", args, stderr)
		}
		_, stderr, err = fxRun(t, nil, append([]string{"call"}, append(slices.Clone(src), "--task", task, "notes_read_file", `{"path":"plan.md"}`)...)...)
		if err != nil || stderr != "" {
			t.Errorf("a read: %v, stderr %q; want nothing on stderr", err, stderr)
		}
	}
	if after := fxExport(t, "--db", db); !bytes.Equal(before, after) {
		t.Error("call of a write changed the database")
	}
}

// TestUntilZeroIsTheEmptyLog: --until 0 is the state before any event for
// export, replay and call; no --until is the end of the log.
func TestUntilZeroIsTheEmptyLog(t *testing.T) {
	log := fxLog("cross-agent-notes")
	db := fxImport(t, log)
	evs := fxEvents(t, log)
	task, last := fxTask(t, log), evs[len(evs)-1].Position

	if out := fxMust(t, "export", "--db", db, "--until", "0"); out != "" {
		t.Errorf("export --until 0 wrote %d bytes, want none", len(out))
	}
	if out := fxMust(t, "export", "--db", db); !bytes.Equal([]byte(out), mustRead(t, log)) {
		t.Error("export without --until is not the whole log")
	}
	for until, want := range map[string]float64{"0": 0, "1": 1, "": float64(last)} {
		args := []string{"replay", log}
		if until != "" {
			args = append(args, "--until", until)
		}
		if got := fxJSON(t, fxMust(t, args...))["events"]; got != want {
			t.Errorf("replay --until %q: %v events, want %v", until, got, want)
		}
	}
	for _, src := range [][]string{{"--db", db}, {"--log", log}} {
		call := append(append([]string{"call"}, src...), "--task", task, "get_context_remaining")
		fxMust(t, call...)
		out, _, err := fxRun(t, nil, append(call, "--until", "0")...)
		if err == nil || exitCode(err) != 1 {
			t.Fatalf("call %q --until 0: %v; want the task unknown in the empty log (exit 1)", call, err)
		}
		if e, _ := fxJSON(t, out)["error"].(map[string]any); e == nil {
			t.Errorf("call --until 0 printed %s, want an error envelope", out)
		}
	}
}
