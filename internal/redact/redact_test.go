package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// block is one case of a corpus file: "=== name" and its text, with the
// secrets between « and » in the file.
type block struct {
	name    string
	kind    string // the name up to ':', for secrets.txt
	input   string // the text without the marks
	secrets [][2]int
}

func readCorpus(t testing.TB, path string) []block {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	var body []string
	flush := func() {
		if len(blocks) == 0 {
			return
		}
		b := &blocks[len(blocks)-1]
		text := strings.TrimRight(strings.Join(body, "\n"), "\n")
		for {
			open := strings.Index(text, "«")
			if open < 0 {
				break
			}
			close := strings.Index(text, "»")
			if close < open {
				t.Fatalf("%s: block %q: unbalanced «»", path, b.name)
			}
			b.secrets = append(b.secrets, [2]int{open, close - len("«")})
			text = text[:open] + text[open+len("«"):close] + text[close+len("»"):]
		}
		b.input = text
		body = nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "=== "); ok {
			flush()
			kind, _, _ := strings.Cut(name, ":")
			blocks = append(blocks, block{name: name, kind: kind})
			continue
		}
		if len(blocks) == 0 {
			continue // the header comment
		}
		body = append(body, line)
	}
	flush()
	return blocks
}

func newRedactor(t testing.TB, c Config) *Redactor {
	t.Helper()
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var allOn = Config{Enable: []string{"secret_assignment", "high_entropy"}}

func optIn(kind string) bool {
	for _, ri := range Builtin() {
		if ri.Name == kind {
			return !ri.Default
		}
	}
	return false
}

// expected is b's input with each marked secret replaced by its marker.
func (b block) expected(r *Redactor) string {
	var out strings.Builder
	last := 0
	for _, s := range b.secrets {
		out.WriteString(b.input[last:s[0]])
		out.WriteString(marker(b.kind, r.Digest(b.input[s[0]:s[1]])))
		last = s[1]
	}
	out.WriteString(b.input[last:])
	return out.String()
}

func TestSecretsCorpus(t *testing.T) {
	blocks := readCorpus(t, "testdata/secrets.txt")
	kinds := map[string]bool{}
	for _, cfg := range []struct {
		name string
		c    Config
	}{{"default", Config{}}, {"all rules", allOn}, {"keyed digest", Config{DigestKey: []byte("k"), Enable: allOn.Enable}}} {
		r := newRedactor(t, cfg.c)
		for _, b := range blocks {
			kinds[b.kind] = true
			if len(b.secrets) == 0 {
				t.Fatalf("block %q marks no secret", b.name)
			}
			want := b.expected(r)
			if cfg.name == "default" && optIn(b.kind) {
				want = b.input
			}
			got, matches := r.Text(b.input)
			if got != want {
				t.Errorf("%s: %s:\n got: %q\nwant: %q", cfg.name, b.name, got, want)
				continue
			}
			if got == b.input {
				continue
			}
			if len(matches) != len(b.secrets) {
				t.Errorf("%s: %s: %d matches, want %d", cfg.name, b.name, len(matches), len(b.secrets))
				continue
			}
			for i, m := range matches {
				if m.Kind != b.kind || m.Start != b.secrets[i][0] || m.End != b.secrets[i][1] || m.Digest != r.Digest(b.input[m.Start:m.End]) {
					t.Errorf("%s: %s: match %+v, want kind %s at %v", cfg.name, b.name, m, b.kind, b.secrets[i])
				}
			}
			if again, ms := r.Text(got); again != got || ms != nil {
				t.Errorf("%s: %s: redacting twice changed the text: %q (%v)", cfg.name, b.name, again, ms)
			}
		}
	}
	for _, ri := range Builtin() {
		if !kinds[ri.Name] {
			t.Errorf("the corpus has no secret of rule %s", ri.Name)
		}
	}
}

func TestLookalikes(t *testing.T) {
	blocks := readCorpus(t, "testdata/lookalikes.txt")
	def, all := newRedactor(t, Config{}), newRedactor(t, allOn)
	for _, b := range blocks {
		rs := []*Redactor{def, all}
		if strings.HasSuffix(b.name, "(default only)") {
			rs = rs[:1]
		}
		for _, r := range rs {
			if got, matches := r.Text(b.input); got != b.input || matches != nil {
				t.Errorf("%s, with rules %v: changed: %v\n%s", b.name, r.Rules(), matches, got)
			}
		}
	}
}

func TestOptInRulesAreOffByDefault(t *testing.T) {
	rules := newRedactor(t, Config{}).Rules()
	for _, ri := range Builtin() {
		if slices.Contains(rules, ri.Name) == !ri.Default {
			t.Errorf("rule %s: on by default is %v, want %v", ri.Name, !ri.Default, ri.Default)
		}
	}
	if r := newRedactor(t, Config{Disable: []string{"jwt", "url_password"}}); slices.Contains(r.Rules(), "jwt") || slices.Contains(r.Rules(), "url_password") {
		t.Errorf("disabled rules still run: %v", r.Rules())
	}
	in := "password=hunter2-is-weak relay: Zx8Kq2Lm9Np4Rs7Tv1Wy3Ab6Cd0Ef5Gh"
	if got, _ := newRedactor(t, Config{}).Text(in); got != in {
		t.Errorf("the default rules changed %q to %q", in, got)
	}
}

func TestSameSecretSameMarker(t *testing.T) {
	tok := "ghp_" + strings.Repeat("aB3dE6gH9j", 4)[:36]
	other := "ghp_" + strings.Repeat("Zy8Xw7Vu6T", 4)[:36]
	in := "first " + tok + " then " + other + " and again https://x:" + tok + "@github.com"
	r1, r2 := newRedactor(t, Config{}), newRedactor(t, Config{})
	got, ms := r1.Text(in)
	if got2, _ := r2.Text(in); got2 != got {
		t.Fatalf("two redactors disagree:\n%s\n%s", got, got2)
	}
	if len(ms) != 3 || ms[0].Digest != ms[2].Digest || ms[0].Digest == ms[1].Digest {
		t.Fatalf("matches %+v: want the same digest for the same token only", ms)
	}
	sum := sha256.Sum256([]byte(tok))
	if want := hex.EncodeToString(sum[:4]); ms[0].Digest != want {
		t.Errorf("digest %s, want the first 4 bytes of SHA-256, %s", ms[0].Digest, want)
	}
	if want := "first [REDACTED:github_token:" + ms[0].Digest + "] then"; !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start %q", got, want)
	}
	keyed := newRedactor(t, Config{DigestKey: []byte("per-database key")})
	mac := hmac.New(sha256.New, []byte("per-database key"))
	mac.Write([]byte(tok))
	if got, want := keyed.Digest(tok), hex.EncodeToString(mac.Sum(nil)[:4]); got != want {
		t.Errorf("keyed digest %s, want HMAC-SHA256's first 4 bytes %s", got, want)
	}
}

func TestCleanTextIsReturnedAsIs(t *testing.T) {
	r := newRedactor(t, allOn)
	for _, s := range []string{"", "plain text", "https://example.com/ sk- eyJ -----BEGIN", strings.Repeat("x", 1<<16)} {
		got, ms := r.Text(s)
		if got != s || ms != nil {
			t.Errorf("Text(%.40q) = %.40q, %v", s, got, ms)
		}
		if len(s) > 0 && unsafe.StringData(got) != unsafe.StringData(s) {
			t.Errorf("Text(%.40q) returned a copy", s)
		}
	}
}

func TestOverlapsAndMarkers(t *testing.T) {
	r := newRedactor(t, allOn)
	tok := "ghp_" + strings.Repeat("Q1w2E3r4T5", 4)[:36]
	cases := []struct{ in, want string }{
		// The most specific rule names a secret several rules match.
		{"Authorization: token " + tok, "Authorization: token " + marker("github_token", r.Digest(tok))},
		{"GITHUB_TOKEN=" + tok, "GITHUB_TOKEN=" + marker("github_token", r.Digest(tok))},
		// A marker is never matched, inside a URL or an assignment.
		{"https://u:[REDACTED:url_password:0011aabb]@h", "https://u:[REDACTED:url_password:0011aabb]@h"},
		{"password=[REDACTED:secret_assignment:0011aabb]", "password=[REDACTED:secret_assignment:0011aabb]"},
		// A marker's look-alike that is not one is no shield.
		{"https://u:[REDACTED:x]@h", "https://u:[REDACTED:x]@h"},
		// Secrets back to back.
		{tok + " " + tok, marker("github_token", r.Digest(tok)) + " " + marker("github_token", r.Digest(tok))},
	}
	for _, c := range cases {
		if got, _ := r.Text(c.in); got != c.want {
			t.Errorf("Text(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestSecondPass: a match dropped for overlapping a better one can fit
// beside that one's marker; Text redacts it too, so that redacting its
// result changes nothing. (Inputs shrunk from TestKeywordSoup's kind.)
func TestSecondPass(t *testing.T) {
	r := newRedactor(t, allOn)
	for _, c := range []struct{ in, want string }{
		{"-://password=:p@password=-swo9", "-://password=:" + marker("url_password", r.Digest("p")) + "@password=" + marker("secret_assignment", r.Digest("-swo9"))},
		{"yhbGcJIUzI1NiJ9password==aJeY", marker("high_entropy", r.Digest("yhbGcJIUzI1NiJ9password=")) + marker("secret_assignment", r.Digest("=aJeY"))},
	} {
		got, ms := r.Text(c.in)
		if got != c.want || len(ms) != 2 {
			t.Errorf("Text(%q)\n got %q %v\nwant %q", c.in, got, ms, c.want)
		}
		if again, _ := r.Text(got); again != got {
			t.Errorf("Text(%q) twice: %q", c.in, again)
		}
	}
}

// TestLongestTokens: each rule's window around its keyword holds its
// longest token and the byte after it.
func TestLongestTokens(t *testing.T) {
	r := newRedactor(t, Config{})
	alnum := func(n int) string { return strings.Repeat("aB3", n)[:n] }
	for _, c := range []struct{ kind, secret string }{
		{"aws_access_key_id", "AKIA" + strings.Repeat("Q7", 8)},
		{"github_token", "ghp_" + alnum(251)},
		{"github_token", "github_pat_" + alnum(22) + "_" + alnum(59)},
		{"gitlab_token", "glsoat-" + alnum(300) + ".0a1b2c3d4"},
		{"slack_token", "xapp-1-" + alnum(250)},
		{"stripe_key", "sk_live_" + alnum(247)},
		{"anthropic_key", "sk-ant-abcdefghij01-" + alnum(400)},
		{"openai_key", "sk-svcacct-" + alnum(399) + "9"},
		{"sk_api_key", "sk-" + alnum(127) + "9"},
		{"pypi_token", "pypi-AgEIcHlwaS5vcmc" + alnum(3000)},
		{"bearer_token", alnum(5000) + "9"},
	} {
		in := "x " + c.secret + " y"
		if c.kind == "bearer_token" {
			in = "Bearer " + c.secret + " y"
		}
		got, ms := r.Text(in)
		if len(ms) != 1 || ms[0].Kind != c.kind || in[ms[0].Start:ms[0].End] != c.secret {
			t.Errorf("%s of %d bytes: %v, %.80q", c.kind, len(c.secret), ms, got)
		}
	}
}

func TestUserRules(t *testing.T) {
	c, err := ParseConfig([]byte(`
enable = ["secret_assignment"]
disable = ["jwt"]

[high_entropy]
min_length = 30
threshold = 4.5

[secret_assignment]
keys = ["passcode"]

[[rule]]
name = "acme_token"
pattern = '''\bacme_[A-Za-z0-9]{16}\b'''
keywords = ["acme_"]

[[rule]]
name = "internal_host_secret"
pattern = '''X-Internal-Secret: (?P<secret>\S+)'''
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newRedactor(t, c)
	if want := []string{"jwt"}; slices.Contains(r.Rules(), want[0]) || !slices.Contains(r.Rules(), "acme_token") || !slices.Contains(r.Rules(), "secret_assignment") {
		t.Errorf("rules %v", r.Rules())
	}
	in := "acme_0123456789abcdef X-Internal-Secret: s3cr3t! passcode=4711-0815"
	want := marker("acme_token", r.Digest("acme_0123456789abcdef")) + " X-Internal-Secret: " + marker("internal_host_secret", r.Digest("s3cr3t!")) +
		" passcode=" + marker("secret_assignment", r.Digest("4711-0815"))
	if got, _ := r.Text(in); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ toml, want string }{
		{`enable = ["nope"]`, `no rule is named "nope"`},
		{`disable = ["jwt"]` + "\n" + `enable = ["jwt"]`, "both enabled and disabled"},
		{`colour = "blue"`, "unknown field"},
		{"[[rule]]\nname = \"x\"\npattern = '''(unclosed'''", "rule x: error parsing regexp"},
		{"[[rule]]\nname = \"x\"\npattern = '''a*'''", "matches the empty text"},
		{"[[rule]]\nname = \"jwt\"\npattern = '''a'''", "is taken"},
		{"[[rule]]\nname = \"Bad-Name\"\npattern = '''a'''", "name \"Bad-Name\""},
		{"[[rule]]\nname = \"x\"\npattern = ''", "empty pattern"},
		{"[high_entropy]\nthreshold = 9.0", "threshold 9"},
		{"[high_entropy]\nmin_length = 4", "min_length 4"},
		{"[secret_assignment]\nkeys = [\"a b\"]", `key "a b"`},
		{"enable = 3", "line 1"},
	} {
		_, err := ParseConfig([]byte(c.toml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseConfig(%q): error %v, want one containing %q", c.toml, err, c.want)
		}
	}
}

func TestBuiltinNamesAreMarkerSafe(t *testing.T) {
	for _, ri := range Builtin() {
		if !validName.MatchString(ri.Name) {
			t.Errorf("rule name %q does not fit a marker", ri.Name)
		}
		m := marker(ri.Name, "0123abcd")
		if end := markerEnd(m, 0); end != len(m) {
			t.Errorf("marker %q is not recognised as one", m)
		}
	}
}

// keywordSoup returns n bytes of keywords, secrets' pieces, markers and
// separators, some repeated thousands of times: the texts on which a rule
// dropped for overlapping another's match may fit beside its marker.
func keywordSoup(rng *rand.Rand, n int) string {
	pieces := []string{"-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "\n", `\n`, "AAAA", "://", "u:p@",
		"eyJ", "eyJhbGciOiJIUzI1NiJ9", ".", "sk-", "ghp_", "SK", "Bearer ", "Authorization: Bearer ", "password=", "xox",
		"a", "Z", "0", " ", "/", "=", "_", "-", "[REDACTED:", "[REDACTED:x:01234567]", `"`, "@", "Q9"}
	var b strings.Builder
	for b.Len() < n {
		p := pieces[rng.IntN(len(pieces))]
		reps := 1
		if rng.IntN(10) == 0 {
			reps = rng.IntN(600)
		}
		for range reps {
			b.WriteString(p)
		}
	}
	return b.String()
}

func TestKeywordSoup(t *testing.T) {
	r := newRedactor(t, allOn)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 60; i++ {
		s := keywordSoup(rng, rng.IntN(30000))
		got, ms := r.Text(s)
		last := 0
		for _, m := range ms {
			if m.Start < last || m.End <= m.Start || m.End > len(s) || r.Digest(s[m.Start:m.End]) != m.Digest {
				t.Fatalf("input %d: bad match %+v", i, m)
			}
			last = m.End
		}
		if got != render(s, ms) {
			t.Fatalf("input %d: the output is not the input with the matches' markers", i)
		}
		if again, more := r.Text(got); again != got {
			t.Fatalf("input %d: redacting twice found %v", i, more)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, path := range []string{"testdata/secrets.txt", "testdata/lookalikes.txt"} {
		for _, b := range readCorpus(f, path) {
			f.Add(b.input)
		}
	}
	r := newRedactor(f, allOn)
	f.Fuzz(func(t *testing.T, s string) {
		got, ms := r.Text(s)
		if len(ms) == 0 && got != s {
			t.Fatalf("no match, but the text changed: %q", got)
		}
		last := 0
		for _, m := range ms {
			if m.Start < last || m.End <= m.Start || m.End > len(s) {
				t.Fatalf("bad match %+v after %d", m, last)
			}
			last = m.End
		}
		if again, ms2 := r.Text(got); again != got {
			t.Fatalf("not idempotent:\n in  %q\n once %q\n twice %q (%v)", s, got, again, ms2)
		}
	})
}
