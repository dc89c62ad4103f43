package main

import (
	"fmt"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
)

// The text of the generated sessions of the search-all rows: what a coding
// agent reads and runs on a developer's machine. The tool outputs are the
// bulk of a session's bytes, so their mix sets what the search reads: Go
// source (the Read tool, cat -n style), logs with request ids and
// durations, test runs, grep hits, git logs and diffs, and JSON from an
// API, drawn from a vocabulary large enough that the chunks' trigram
// filters see realistic text rather than a handful of repeated words.

var (
	nouns = []string{"shard", "replica", "queue", "worker", "batch", "cache", "index", "chunk", "filter", "session", "token",
		"request", "handler", "router", "store", "ledger", "invoice", "account", "payment", "order", "customer", "tenant",
		"config", "schema", "migration", "snapshot", "cursor", "window", "branch", "commit", "manifest", "bundle", "asset",
		"upload", "image", "thumbnail", "report", "metric", "gauge", "counter", "histogram", "span", "trace", "probe",
		"lease", "lock", "mutex", "pool", "conn", "socket", "frame", "packet", "buffer", "reader", "writer", "encoder",
		"decoder", "parser", "lexer", "node", "edge", "graph", "plan", "query", "result", "record", "field", "column",
		"table", "row", "page", "block", "segment", "journal", "event", "stream", "topic", "offset", "partition", "broker",
		"client", "server", "gateway", "proxy", "balancer", "backend", "frontend", "widget", "button", "modal", "form",
		"route", "endpoint", "webhook", "job", "task", "cron", "schedule", "retry", "backoff", "deadline", "timeout"}
	verbs = []string{"parse", "load", "store", "flush", "sync", "merge", "split", "build", "render", "encode", "decode",
		"fetch", "apply", "validate", "check", "resolve", "compute", "update", "delete", "insert", "scan", "seek", "open",
		"close", "start", "stop", "drain", "retry", "schedule", "dispatch", "handle", "serve", "accept", "reject", "commit",
		"rollback", "compact", "rebuild", "reindex", "migrate", "export", "import", "replay", "verify", "sign", "hash"}
	adjectives = []string{"stale", "pending", "active", "closed", "partial", "dirty", "sealed", "missing", "duplicate",
		"invalid", "empty", "full", "slow", "hot", "cold", "primary", "secondary", "local", "remote", "cached", "raw"}
	logWords = []string{"worker", "batch", "processed", "in", "ms", "queue", "request", "handler", "cache", "miss", "hit",
		"the", "a", "config", "loaded", "from", "disk", "retry", "timeout", "connection", "reset", "by", "peer", "GET",
		"POST", "/api/v1/items", "/api/v2/orders", "200", "201", "404", "409", "500", "503", "user", "session", "token",
		"refreshed", "scheduler", "tick", "job", "done", "started", "warning", "slow", "query", "index", "rebuild", "shard",
		"replica", "lag", "commit", "flush", "wal", "checkpoint", "compaction", "ok", "failed", "error", "panic", "goroutine",
		"upstream", "latency", "p99", "bytes", "rows", "tenant", "region", "eu-west-1", "us-east-2", "deadline", "exceeded"}
	projects = []string{"acme-api", "billing-svc", "web-console", "infra-live", "ml-pipeline", "search-indexer",
		"mobile-app", "auth-gateway", "data-warehouse", "notify-worker", "cli-tools", "docs-site"}
	packages = []string{"internal/store", "internal/api", "internal/queue", "internal/auth", "internal/billing", "cmd/server",
		"internal/index", "internal/sync", "pkg/client", "internal/metrics", "internal/config", "internal/worker"}
	authors = []string{"Ana Lima <ana@acme.dev>", "Jonas Weber <jonas@acme.dev>", "Priya Nair <priya@acme.dev>",
		"Tom Okafor <tom@acme.dev>", "Mei Chen <mei@acme.dev>", "Sam Rivera <sam@acme.dev>"}
)

// textGen draws the generated text from its own seeded generator, so the
// same seed writes the same bytes.
type textGen struct {
	r *rand.Rand
	b strings.Builder
}

func newTextGen(seed uint64) *textGen { return &textGen{r: rand.New(rand.NewPCG(seed, 0x7e47))} }

func (g *textGen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g *textGen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.r.IntN(16)]
	}
	return string(b)
}

// uuid is a random UUID in its usual form.
func (g *textGen) uuid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// ident is a Go identifier such as flushStaleShard.
func (g *textGen) ident(exported bool) string {
	v := g.pick(verbs)
	if exported {
		v = title(v)
	}
	if g.r.IntN(2) == 0 {
		return v + title(g.pick(adjectives)) + title(g.pick(nouns))
	}
	return v + title(g.pick(nouns))
}

func (g *textGen) srcPath() string {
	return fmt.Sprintf("%s/%s_%s.go", g.pick(packages), g.pick(nouns), g.pick(nouns))
}

// sentence is a line of prose, as in prompts, answers and comments.
func (g *textGen) sentence() string {
	switch g.r.IntN(6) {
	case 0:
		return fmt.Sprintf("The %s %s is %s when the %s retries, so %s it before the %s.", g.pick(adjectives), g.pick(nouns),
			g.pick(adjectives), g.pick(nouns), g.pick(verbs), g.pick(nouns))
	case 1:
		return fmt.Sprintf("%s calls %s on every %s, which explains the %d ms spent in %s.", g.ident(true), g.ident(false),
			g.pick(nouns), 5+g.r.IntN(900), g.pick(nouns))
	case 2:
		return fmt.Sprintf("I'll %s the %s first, then %s the %s and run the tests again.", g.pick(verbs), g.pick(nouns),
			g.pick(verbs), g.pick(nouns))
	case 3:
		return fmt.Sprintf("The failure comes from %s returning an error when the %s is %s.", g.ident(false), g.pick(nouns), g.pick(adjectives))
	case 4:
		return fmt.Sprintf("Let me check how %s handles a %s %s.", g.ident(true), g.pick(adjectives), g.pick(nouns))
	}
	return fmt.Sprintf("Tests pass now: %d packages, %d tests, the %s path covered.", 3+g.r.IntN(20), 10+g.r.IntN(400), g.pick(nouns))
}

// prose is n sentences.
func (g *textGen) prose(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = g.sentence()
	}
	return strings.Join(s, " ")
}

// prompt is what the user asks.
func (g *textGen) prompt(project string) string {
	switch g.r.IntN(5) {
	case 0:
		return fmt.Sprintf("The %s tests fail after my change to %s. Can you find out why and fix it?", g.pick(packages), g.ident(true))
	case 1:
		return fmt.Sprintf("Add a %s option to %s so that %s %s can be %s, with tests.", g.pick(adjectives), g.ident(true),
			g.pick(adjectives), g.pick(nouns)+"s", g.pick(verbs)+"ed")
	case 2:
		return fmt.Sprintf("Production logs show %q in %s. Look at the logs and tell me what is going on.",
			"deadline exceeded", g.pick(packages))
	case 3:
		return fmt.Sprintf("Refactor %s in %s: it does too much. Keep the behaviour, split it in two.", g.ident(true), project)
	}
	return fmt.Sprintf("Review the diff on this branch and check the %s handling. %s", g.pick(nouns), g.sentence())
}

// output writes a tool's output of about n bytes of the given sort.
func (g *textGen) output(sort string, n int) string {
	g.b.Reset()
	switch sort {
	case "source":
		g.source(n, true)
	case "log":
		g.logs(n)
	case "test":
		g.tests(n)
	case "grep":
		g.grep(n)
	case "git":
		g.gitLog(n)
	case "diff":
		g.diff(n)
	default:
		g.jsonOut(n)
	}
	return g.b.String()
}

// sorts are the kinds of tool output, weighted as a coding session reads
// them: files and test runs most.
var sorts = []string{"source", "source", "source", "test", "test", "log", "grep", "grep", "git", "diff", "json"}

// source writes Go source, numbered as the Read tool and cat -n show it.
func (g *textGen) source(n int, numbered bool) {
	start, line := g.b.Len(), 0
	w := func(s string) {
		line++
		if numbered {
			g.b.WriteString(fmt.Sprintf("%6d\t", line))
		}
		g.b.WriteString(s)
		g.b.WriteByte('\n')
	}
	w("package " + path.Base(g.pick(packages)))
	w("")
	w(`import (`)
	for _, p := range []string{"context", "errors", "fmt", "time"} {
		w("\t\"" + p + "\"")
	}
	w(")")
	for g.b.Len()-start < n {
		w("")
		name, recv, arg := g.ident(true), g.pick(nouns), g.pick(nouns)
		doc := g.sentence()
		w(fmt.Sprintf("// %s: %s", name, doc))
		w(fmt.Sprintf("func (s *%sService) %s(ctx context.Context, %s *%s) error {", title(recv), name, arg, title(arg)))
		for k := 2 + g.r.IntN(5); k > 0; k-- {
			switch g.r.IntN(4) {
			case 0:
				w(fmt.Sprintf("\tif err := s.%s.%s(ctx, %s.ID); err != nil {", g.pick(nouns), title(g.pick(verbs)), arg))
				w(fmt.Sprintf("\t\treturn fmt.Errorf(\"%s %s %%s: %%w\", %s.ID, err)", g.pick(verbs), g.pick(nouns), arg))
				w("\t}")
			case 1:
				w(fmt.Sprintf("\t%s, err := s.%s(ctx, %s)", g.pick(nouns), g.ident(false), arg))
				w("\tif err != nil {")
				w("\t\treturn err")
				w("\t}")
			case 2:
				w(fmt.Sprintf("\tfor _, %s := range %s.%ss {", g.pick(nouns)[:1], arg, title(g.pick(nouns))))
				w(fmt.Sprintf("\t\ts.%s.Add(%d)", g.pick(nouns), 1+g.r.IntN(16)))
				w("\t}")
			default:
				w(fmt.Sprintf("\tctx, cancel := context.WithTimeout(ctx, %d*time.Millisecond)", 50*(1+g.r.IntN(40))))
				w("\tdefer cancel()")
			}
		}
		if g.r.IntN(3) == 0 {
			w(fmt.Sprintf("\treturn errors.New(%q)", g.pick(nouns)+" is "+g.pick(adjectives)))
		} else {
			w("\treturn nil")
		}
		w("}")
	}
}

func (g *textGen) stamp() string {
	return fmt.Sprintf("2026-11-%02dT%02d:%02d:%02d.%03dZ", 1+g.r.IntN(28), g.r.IntN(24), g.r.IntN(60), g.r.IntN(60), g.r.IntN(1000))
}

// logs writes service logs, an error every dozen lines or so.
func (g *textGen) logs(n int) {
	start := g.b.Len()
	for i := 0; g.b.Len()-start < n; i++ {
		level := "INFO"
		switch {
		case i%12 == 11:
			level = "ERROR"
		case i%7 == 6:
			level = "WARN"
		}
		g.b.WriteString(g.stamp())
		g.b.WriteString(" " + level + " ")
		g.b.WriteString(g.pick(packages))
		g.b.WriteString(" req=" + g.hex(16))
		for k := 5 + g.r.IntN(9); k > 0; k-- {
			g.b.WriteByte(' ')
			g.b.WriteString(g.pick(logWords))
		}
		g.b.WriteString(" dur=" + strconv.Itoa(g.r.IntN(5000)) + "ms\n")
	}
}

// tests writes a go test -v run, with a failure now and then.
func (g *textGen) tests(n int) {
	start := g.b.Len()
	for g.b.Len()-start < n {
		pkg := g.pick(packages)
		for k := 3 + g.r.IntN(12); k > 0; k-- {
			name := "Test" + g.ident(true)
			g.b.WriteString("=== RUN   " + name + "\n")
			if g.r.IntN(9) == 0 {
				fmt.Fprintf(&g.b, "    %s_test.go:%d: %s: got %d, want %d\n", g.pick(nouns), 20+g.r.IntN(400), g.ident(false), g.r.IntN(9), g.r.IntN(9))
				fmt.Fprintf(&g.b, "    %s_test.go:%d: unexpected error: %s %s: context deadline exceeded\n", g.pick(nouns), 20+g.r.IntN(400), g.pick(verbs), g.pick(nouns))
				fmt.Fprintf(&g.b, "--- FAIL: %s (%d.%02ds)\n", name, g.r.IntN(3), g.r.IntN(100))
			} else {
				fmt.Fprintf(&g.b, "--- PASS: %s (0.%02ds)\n", name, g.r.IntN(100))
			}
		}
		fmt.Fprintf(&g.b, "ok  \tgithub.com/acme/%s/%s\t%d.%03ds\n", g.pick(projects), pkg, g.r.IntN(4), g.r.IntN(1000))
	}
}

// grep writes grep -rn hits.
func (g *textGen) grep(n int) {
	start := g.b.Len()
	for g.b.Len()-start < n {
		switch g.r.IntN(3) {
		case 0:
			fmt.Fprintf(&g.b, "%s:%d:\tif err := s.%s(ctx); err != nil {\n", g.srcPath(), 1+g.r.IntN(900), g.ident(false))
		case 1:
			fmt.Fprintf(&g.b, "%s:%d:func (s *%sService) %s(ctx context.Context) error {\n", g.srcPath(), 1+g.r.IntN(900), title(g.pick(nouns)), g.ident(true))
		default:
			fmt.Fprintf(&g.b, "%s:%d:\t// %s\n", g.srcPath(), 1+g.r.IntN(900), g.sentence())
		}
	}
}

// gitLog writes git log output.
func (g *textGen) gitLog(n int) {
	start := g.b.Len()
	for g.b.Len()-start < n {
		fmt.Fprintf(&g.b, "commit %s\nAuthor: %s\nDate:   Mon Nov %d %02d:%02d:%02d 2026 +0100\n\n    %s: %s the %s %s\n\n    %s\n\n",
			g.hex(40), g.pick(authors), 1+g.r.IntN(28), g.r.IntN(24), g.r.IntN(60), g.r.IntN(60),
			g.pick(packages), g.pick(verbs), g.pick(adjectives), g.pick(nouns), g.sentence())
	}
}

// diff writes a unified diff.
func (g *textGen) diff(n int) {
	start := g.b.Len()
	for g.b.Len()-start < n {
		p := g.srcPath()
		fmt.Fprintf(&g.b, "diff --git a/%s b/%s\nindex %s..%s 100644\n--- a/%s\n+++ b/%s\n", p, p, g.hex(7), g.hex(7), p, p)
		for k := 1 + g.r.IntN(4); k > 0; k-- {
			l := 10 + g.r.IntN(500)
			fmt.Fprintf(&g.b, "@@ -%d,7 +%d,8 @@ func (s *%sService) %s(ctx context.Context) error {\n", l, l, title(g.pick(nouns)), g.ident(true))
			fmt.Fprintf(&g.b, " \t%s, err := s.%s(ctx)\n \tif err != nil {\n-\t\treturn err\n+\t\treturn fmt.Errorf(\"%s: %%w\", err)\n \t}\n", g.pick(nouns), g.ident(false), g.ident(false))
			fmt.Fprintf(&g.b, "+\ts.%s.Observe(time.Since(start))\n \treturn nil\n", g.pick(nouns))
		}
	}
}

// jsonOut writes an API's JSON answer, pretty-printed.
func (g *textGen) jsonOut(n int) {
	start := g.b.Len()
	g.b.WriteString("{\n  \"items\": [\n")
	for first := true; g.b.Len()-start < n; first = false {
		if !first {
			g.b.WriteString(",\n")
		}
		fmt.Fprintf(&g.b, "    {\"id\": %q, \"%s\": %q, \"status\": %q, \"updated_at\": %q, \"size\": %d, \"region\": %q}",
			g.uuid(), g.pick(nouns), g.ident(false), g.pick(adjectives), g.stamp(), g.r.IntN(1<<20), g.pick([]string{"eu-west-1", "us-east-2", "ap-south-1"}))
	}
	g.b.WriteString("\n  ],\n  \"next_page_token\": \"" + g.hex(24) + "\"\n}\n")
}

// outputSize draws a tool output's size: mostly a few KB, sometimes tens,
// now and then the most the tool keeps (limit).
func (g *textGen) outputSize(limit int) int {
	switch x := g.r.IntN(100); {
	case x < 70:
		return 200 + g.r.IntN(6000)
	case x < 95:
		return 6000 + g.r.IntN(30000)
	default:
		return limit/2 + g.r.IntN(limit/2)
	}
}

// command is a shell command the agent runs for a tool output of sort.
func (g *textGen) command(sort string) string {
	switch sort {
	case "source":
		return "cat -n " + g.srcPath()
	case "log":
		return fmt.Sprintf("kubectl logs deploy/%s --since=1h | tail -n %d", g.pick(projects), 100+g.r.IntN(900))
	case "test":
		return "go test -v ./" + g.pick(packages) + "/..."
	case "grep":
		return fmt.Sprintf("grep -rn %q --include=*.go .", g.ident(false))
	case "git":
		return fmt.Sprintf("git log -n %d", 5+g.r.IntN(40))
	case "diff":
		return "git diff HEAD~1"
	}
	return fmt.Sprintf("curl -s https://api.acme.dev/v1/%ss?limit=%d | jq .", g.pick(nouns), 10+g.r.IntN(200))
}
