package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// toolOutput returns about size bytes of what coding agents' tools print:
// test runs, source code, git logs and diffs, JSON with ids and URLs,
// listings, tracebacks, prose. It holds no secret.
func toolOutput(size int) string {
	rng := rand.New(rand.NewPCG(7, 11))
	hex := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[rng.IntN(16)]
		}
		return string(b)
	}
	uuid := func() string { return hex(8) + "-" + hex(4) + "-4" + hex(3) + "-a" + hex(3) + "-" + hex(12) }
	chunks := []func() string{
		func() string {
			return fmt.Sprintf("=== RUN   TestAppend%d\n--- PASS: TestAppend%d (0.%02ds)\n=== RUN   TestReplay_with_fence\n    replay_test.go:%d: position %d, want %d\n--- FAIL: TestReplay_with_fence (0.01s)\nFAIL\tgithub.com/memoryd/memoryd/internal/eventlog\t0.%03ds\n",
				rng.IntN(99), rng.IntN(99), rng.IntN(99), rng.IntN(400), rng.IntN(1000), rng.IntN(1000), rng.IntN(999))
		},
		func() string {
			return "func (s *Store) Append(ctx context.Context, ev events.Event) (Position, error) {\n\tif err := s.check(ev); err != nil {\n\t\treturn 0, fmt.Errorf(\"append %s: %w\", ev.Type, err)\n\t}\n\ttx, err := s.db.BeginTx(ctx, nil)\n\tif err != nil {\n\t\treturn 0, err\n\t}\n\tdefer tx.Rollback()\n\ttoken := req.Header.Get(\"Authorization\")\n\tvar cfg struct{ Token string `json:\"token\"` }\n\treturn s.appendTx(ctx, tx, ev)\n}\n\n"
		},
		func() string {
			return "commit " + hex(40) + "\nAuthor: Ada Lovelace <ada@example.com>\nDate:   Mon May 20 12:34:56 2024 +0200\n\n    history: keep windows when a branch switches (issue " + fmt.Sprint(rng.IntN(90)) + ")\n\ndiff --git a/internal/history/render.go b/internal/history/render.go\nindex " + hex(7) + ".." + hex(7) + " 100644\n--- a/internal/history/render.go\n+++ b/internal/history/render.go\n@@ -120,7 +120,9 @@ func render(w io.Writer, items []Item) error {\n-\tfor _, it := range items {\n+\tfor i, it := range items {\n+\t\tif i > 0 && it.Window != items[i-1].Window {\n"
		},
		func() string {
			return fmt.Sprintf(`{"id":"%s","task_id":"01J%s","type":"history.entry","recorded_at":"2024-05-20T12:34:%02d.%03dZ","data":{"role":"tool","tool":"bash","url":"https://api.github.com/repos/memoryd/memoryd/pulls/%d","sha":"%s","size":%d}}`+"\n",
				uuid(), strings.ToUpper(hex(23)), rng.IntN(60), rng.IntN(1000), rng.IntN(500), hex(40), rng.IntN(1<<20))
		},
		func() string {
			return fmt.Sprintf("-rw-r--r--  1 ada staff  %6d May 20 12:%02d internal/redact/redact_%s.go\ndrwxr-xr-x  5 ada staff     160 May 20 12:%02d node_modules/@types/node\n", rng.IntN(99999), rng.IntN(60), hex(4), rng.IntN(60))
		},
		func() string {
			return "Traceback (most recent call last):\n  File \"/home/ada/src/app/server.py\", line " + fmt.Sprint(rng.IntN(900)) + ", in handle_request\n    response = self.session.post(url, json=payload, timeout=30)\nrequests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.example.com', port=443): Max retries exceeded with url: /v1/items?page=2 (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f" + hex(9) + ">'))\n"
		},
		func() string {
			return "The checkpoint fence admits exactly one notes write and blocks everything else until the rollover. A disk-usage check, a task-runner and the sk-learn docs mention no secret; the password prompt and the Bearer scheme are only words here. See https://github.com/memoryd/memoryd/blob/main/docs/behaviour.md#the-fence for details.\n\n"
		},
		func() string {
			return fmt.Sprintf("src/components/Editor.tsx(%d,%d): error TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'.\n  npm WARN deprecated inflight@1.0.6: This module is not supported, and leaks memory.\n", rng.IntN(400), rng.IntN(80))
		},
	}
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(chunks[rng.IntN(len(chunks))]())
	}
	return b.String()
}

// withSecrets puts a few secrets of different kinds into s.
func withSecrets(s string) string {
	rng := rand.New(rand.NewPCG(1, 2))
	key := base64.StdEncoding.EncodeToString(make([]byte, 900))
	secrets := []string{
		"GITHUB_TOKEN=ghp_R8x2Kq9Lm4Np7Rs1Tv6Wy3Ab0Cd5Ef8GhJk\n",
		"aws_access_key_id = AKIAQ3EGRT5KXMPL7ZWN\naws_secret_access_key = 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\n",
		"Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwiaWF0IjoxNzE2MjM5MDIyfQ.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk\n",
		"DATABASE_URL=postgres://app:Zq7Lm2Kx9Wv4@db.internal:5432/app\n",
		"-----BEGIN RSA PRIVATE KEY-----\n" + key + "\n-----END RSA PRIVATE KEY-----\n",
	}
	for _, sec := range secrets {
		i := strings.LastIndexByte(s[:rng.IntN(len(s))], '\n') + 1
		s = s[:i] + sec + s[i:]
	}
	return s
}

func benchText(b *testing.B, c Config, s string) {
	r := newRedactor(b, c)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		r.Text(s)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(s)), "ns/byte")
}

// BenchmarkText redacts 1 MB of tool output: without a secret, with five,
// and with every opt-in rule on as well.
func BenchmarkText(b *testing.B) {
	clean := toolOutput(1 << 20)
	if _, ms := newRedactor(b, allOn).Text(clean); ms != nil {
		b.Fatalf("the clean text has secrets: %v", ms)
	}
	dirty := withSecrets(clean)
	b.Run("clean", func(b *testing.B) { benchText(b, Config{}, clean) })
	b.Run("5-secrets", func(b *testing.B) { benchText(b, Config{}, dirty) })
	b.Run("clean-all-rules", func(b *testing.B) { benchText(b, allOn, clean) })
	b.Run("5-secrets-all-rules", func(b *testing.B) { benchText(b, allOn, dirty) })
}

// BenchmarkJSON redacts a 1 MB JSON document, the tool output split into
// an array of string lines.
func BenchmarkJSON(b *testing.B) {
	for _, tc := range []struct {
		name string
		text string
	}{{"clean", toolOutput(1 << 20)}, {"5-secrets", withSecrets(toolOutput(1 << 20))}} {
		raw, _ := json.Marshal(map[string]any{"lines": strings.Split(tc.text, "\n")})
		b.Run(tc.name, func(b *testing.B) {
			r := newRedactor(b, Config{})
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, _, err := r.JSON(raw); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(raw)), "ns/byte")
		})
	}
}
