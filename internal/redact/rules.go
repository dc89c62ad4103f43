package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ruleSpec is a rule as written: a pattern, or a finder of its own.
type ruleSpec struct {
	name        string
	optIn       bool
	description string
	keywords    []string
	pattern     string
	// atKeyword: every match starts at a keyword, and the pattern runs
	// anchored there, over the after bytes that follow, more than its
	// longest match; a match that reaches that far is dropped, or, for an
	// unbounded rule, matched again to the end of the text. wordStart: not
	// right after a letter, digit or '_'. Otherwise the pattern runs on the
	// whole text.
	atKeyword, wordStart, unbounded bool
	after                           int
	accept                          func(secret string) bool // nil: every match is a secret
	find                            func(s string, hits []int, out []span) []span
}

type rule struct {
	name                            string
	keywords                        []string
	re                              *regexp.Regexp
	secret                          int // the submatch redacted: the group "secret", or the whole match
	atKeyword, wordStart, unbounded bool
	after                           int
	accept                          func(string) bool
	find                            func(s string, hits []int, out []span) []span
}

func (s ruleSpec) compile() (*rule, error) {
	ru := &rule{name: s.name, keywords: s.keywords, atKeyword: s.atKeyword, wordStart: s.wordStart, unbounded: s.unbounded, after: s.after, accept: s.accept, find: s.find}
	if s.find != nil {
		return ru, nil
	}
	if s.pattern == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	pattern := s.pattern
	if s.atKeyword {
		pattern = `^(?:` + pattern + `)`
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	ru.re = re
	ru.secret = max(re.SubexpIndex("secret"), 0)
	return ru, nil
}

// appendMatches appends the secrets this rule finds in s, given the
// positions of its keywords.
func (ru *rule) appendMatches(out []span, s string, hits []int) []span {
	switch {
	case ru.find != nil:
		return ru.find(s, hits, out)
	case ru.atKeyword:
		return ru.appendAtKeywords(out, s, hits)
	}
	for _, loc := range ru.re.FindAllStringSubmatchIndex(s, -1) {
		a, b := loc[2*ru.secret], loc[2*ru.secret+1]
		if a >= 0 && a < b && (ru.accept == nil || ru.accept(s[a:b])) {
			out = append(out, span{start: a, end: b})
		}
	}
	return out
}

// appendAtKeywords runs the anchored pattern at each hit, skipping hits
// after a word byte (when wordStart) and hits inside the last match. The
// work is the length of each attempt, not of the text.
func (ru *rule) appendAtKeywords(out []span, s string, hits []int) []span {
	next := 0
	for _, p := range hits {
		if p < next || ru.wordStart && p > 0 && isWordByte(s[p-1]) {
			continue
		}
		end := min(len(s), p+ru.after)
		loc := ru.re.FindStringSubmatchIndex(s[p:end])
		if loc != nil && loc[1] == end-p && end < len(s) {
			if !ru.unbounded {
				continue // longer than any secret of the rule
			}
			loc = ru.re.FindStringSubmatchIndex(s[p:]) // it may go on
		}
		if loc == nil {
			continue
		}
		a, b := loc[2*ru.secret], loc[2*ru.secret+1]
		if a < 0 || a == b || ru.accept != nil && !ru.accept(s[p+a:p+b]) {
			continue
		}
		out = append(out, span{start: p + a, end: p + b})
		next = p + loc[1]
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// RuleInfo describes a built-in rule.
type RuleInfo struct {
	Name        string
	Default     bool // on unless disabled; else opt-in
	Description string
}

// Builtin lists the built-in rules, in the order they are tried.
func Builtin() []RuleInfo {
	var out []RuleInfo
	for _, s := range builtinSpecs {
		if s.description != "" {
			out = append(out, RuleInfo{Name: s.name, Default: !s.optIn, Description: s.description})
		}
	}
	return out
}

// The patterns follow the published token formats, checked against the
// gitleaks default rules (config/gitleaks.toml) and trufflehog's detectors;
// see docs/redaction.md. The order is priority: a match that overlaps one
// of an earlier rule is dropped.
var builtinSpecs = []ruleSpec{
	{
		name:        "private_key",
		description: "PEM private-key blocks (PKCS#1, PKCS#8, encrypted, OpenSSH, EC, DSA, PGP), BEGIN line to END line; a block cut short up to where its base64 ends",
		keywords:    []string{"-----BEGIN"},
		find:        findPrivateKeys,
	},
	{
		name:        "aws_access_key_id",
		description: "AWS access key ids: AKIA (long-term), ASIA (temporary), ABIA, ACCA, then 16 of [A-Z0-9]",
		keywords:    []string{"AKIA", "ASIA", "ABIA", "ACCA"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`,
		after:       24,
	},
	{
		name:        "aws_secret_access_key",
		description: "AWS secret access keys (40 base64 characters) after a label: aws_secret_access_key = …, SecretAccessKey: …, AWS_SECRET_KEY=…",
		keywords:    []string{"secret_access_key", "SECRET_ACCESS_KEY", "SecretAccessKey", "secretAccessKey", "secret-access-key", "aws_secret_key", "AWS_SECRET_KEY", "awsSecretKey", "AwsSecretKey"},
		atKeyword:   true,
		pattern:     `(?i)(?:secret_?access_?key|secret-access-key|aws_?secret_?key)\\?["']?[ \t]{0,4}(?:=>|:=|=|:)[ \t]{0,4}\\?["']?(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`,
		after:       80,
	},
	{
		name:        "github_token",
		description: "GitHub tokens: ghp_ (classic personal), gho_ (OAuth), ghu_ (user-to-server), ghs_ (server-to-server, Actions), ghr_ (refresh) with 36+ alphanumerics; github_pat_ fine-grained (22_59)",
		keywords:    []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b`,
		after:       256,
	},
	{
		name:        "gitlab_token",
		description: "GitLab tokens: glpat- (personal, project, group), gldt- (deploy), glrt- (runner), glptt- (trigger), glcbt- (CI job), glft- (feed), glimt-, gloas-, glsoat-, 20+ characters, routable ones too",
		keywords:    []string{"glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glft-", "glimt-", "gloas-", "glsoat-"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `gl(?:pat|dt|rt|ptt|cbt|ft|imt|oas|soat)-[A-Za-z0-9_-]{20,300}(?:\.[0-9a-z]{2}[0-9a-z]{7})?`,
		after:       320,
	},
	{
		name:        "slack_token",
		description: "Slack tokens: xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxo-, xoxe- and app-level xapp-",
		keywords:    []string{"xox", "xapp-"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `(?:xox[abeoprs]-[0-9A-Za-z-]{10,250}|xapp-[0-9]-[0-9A-Za-z-]{20,250})`,
		after:       260,
	},
	{
		name:        "slack_webhook",
		description: "Slack incoming-webhook URLs: the secret path after hooks.slack.com/services/ (or workflows/, triggers/)",
		keywords:    []string{"hooks.slack.com/"},
		atKeyword:   true,
		pattern:     `hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9+/]{20,120})`,
		after:       160,
	},
	{
		name:        "stripe_key",
		description: "Stripe secret and restricted keys: sk_live_, rk_live_, and the test-mode sk_test_, rk_test_ (test keys read test data, and they are redacted too)",
		keywords:    []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_", "sk_prod_", "rk_prod_"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `[rs]k_(?:live|test|prod)_[A-Za-z0-9]{10,247}\b`,
		after:       256,
	},
	{
		name:        "anthropic_key",
		description: "Anthropic keys and OAuth tokens: sk-ant-api03-, sk-ant-admin01-, sk-ant-oat01-, sk-ant-ort01-, …",
		keywords:    []string{"sk-ant-"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `sk-ant-[a-z]{2,10}[0-9]{2}-[A-Za-z0-9_-]{32,400}`,
		after:       440,
	},
	{
		name:        "openai_key",
		description: "OpenAI keys: sk-proj-, sk-svcacct-, sk-admin- (mixed-case base64url), and the legacy sk-…T3BlbkFJ…",
		keywords:    []string{"sk-"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,400}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\b`,
		after:       420,
		accept:      mixedAlphanumeric,
	},
	{
		name:        "sk_api_key",
		description: "other sk- keys of 32 to 128 letters and digits (OpenAI-compatible providers such as DeepSeek), holding both a letter and a digit",
		keywords:    []string{"sk-"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `sk-[A-Za-z0-9]{32,128}\b`,
		after:       140,
		accept:      hasLetterAndDigit,
	},
	{
		name:        "google_api_key",
		description: "Google API keys: AIza and 35 of [0-9A-Za-z_-]",
		keywords:    []string{"AIza"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `(?P<secret>AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)`,
		after:       42,
	},
	{
		name:        "npm_token",
		description: "npm access tokens: npm_ and 36 alphanumerics",
		keywords:    []string{"npm_"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `npm_[A-Za-z0-9]{36}\b`,
		after:       42,
	},
	{
		name:        "pypi_token",
		description: "PyPI upload tokens: pypi-AgEIcHlwaS5vcmc… (a macaroon for pypi.org) or pypi-AgENdGVzdC5weXBpLm9yZw… (test.pypi.org)",
		keywords:    []string{"pypi-AgE"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,}`,
		after:       2048,
		unbounded:   true,
	},
	{
		name:        "twilio_api_key",
		description: "Twilio API key SIDs' secrets: SK and 32 hex digits",
		keywords:    []string{"SK"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `SK[0-9a-fA-F]{32}\b`,
		after:       36,
		accept:      hasLetterAndDigit,
	},
	{
		name:        "sendgrid_key",
		description: "SendGrid API keys: SG.<22>.<43> in base64url",
		keywords:    []string{"SG."},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `(?P<secret>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)`,
		after:       72,
	},
	{
		name:        "jwt",
		description: "JSON Web Tokens: three base64url parts whose header decodes to a JSON object with \"alg\"",
		keywords:    []string{"eyJ"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*`,
		after:       16 << 10,
		unbounded:   true,
		accept:      jwtHeader,
	},
	{
		name:        "url_password",
		description: "the password in a URL's user information, scheme://user:password@host (the user and the host stay)",
		keywords:    []string{"://"},
		find:        findURLPasswords,
	},
	{
		name:        "authorization",
		description: "the credentials of an Authorization (or Proxy-Authorization) header or field: Bearer, Basic, Token, Bot, ApiKey schemes",
		keywords:    caseVariants("authorization"),
		atKeyword:   true,
		wordStart:   true,
		pattern:     `(?i)authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:bearer|basic|token|bot|apikey)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]+=*)`,
		after:       4096,
		unbounded:   true,
		accept:      func(v string) bool { return len(v) >= 8 && notPlaceholder(v) },
	},
	{
		name:        "bearer_token",
		description: "a token of 16+ characters, with a letter and a digit, after \"Bearer \" without an Authorization label",
		keywords:    []string{"Bearer"},
		atKeyword:   true,
		wordStart:   true,
		pattern:     `Bearer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)`,
		after:       4096,
		unbounded:   true,
		accept:      func(v string) bool { return hasLetterAndDigit(v) && notPlaceholder(v) },
	},
	{
		name:        "secret_assignment",
		optIn:       true,
		description: "opt-in: the value (5+ characters) assigned to a key named like a secret: password=…, \"api_key\": \"…\", client_secret: …, GITHUB_TOKEN=… (more keys by config); not names, calls, numbers, placeholders",
	},
	{
		name:        "high_entropy",
		optIn:       true,
		description: "opt-in: tokens of [A-Za-z0-9+/_-] (and '=' padding) at least min_length long, holding a letter and a digit, whose Shannon entropy per byte reaches the threshold; not hashes in hex, UUIDs, ULIDs, base64 data URLs and images, integrity hashes",
	},
}

// assignmentKeys are the key names of secret_assignment. A key matches at
// the end of a longer name (DB_PASSWORD, clientSecret), not before more of
// one (password_file, tokens).
var assignmentKeys = []string{"password", "passwd", "passphrase", "secret", "token", "api[_-]?key", "access[_-]?key", "secret[_-]?key", "private[_-]?key"}

var validKey = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,40}$`)

func assignmentSpec(s ruleSpec, extra []string) ruleSpec {
	keys := slices.Clone(assignmentKeys)
	s.keywords = caseVariants("password", "passwd", "passphrase", "secret", "token",
		"api_key", "api-key", "apikey", "access_key", "access-key", "accesskey",
		"secret_key", "secret-key", "secretkey", "private_key", "private-key", "privatekey")
	s.keywords = append(s.keywords, "apiKey", "accessKey", "secretKey", "privateKey")
	for _, k := range extra {
		keys = append(keys, regexp.QuoteMeta(k))
		s.keywords = append(s.keywords, caseVariants(k)...)
	}
	// A match starts at the key's last word; the value ends where a value
	// ends, not at '(' or '<' (code).
	s.pattern = `(?i)(?:` + strings.Join(keys, "|") + `)\\?["']?[ \t]{0,4}(?:=>|:=|=|:)[ \t]{0,4}\\?["'\x60]?` +
		`(?P<secret>[^\s"'\x60,;\\()<>{}\[\]]{5,})(?:[\s"'\x60,;\\)}\]]|$)`
	s.atKeyword = true
	s.after = 512
	s.accept = assignedValue
	return s
}

// assignedValue refuses the values of secret_assignment that are code or
// placeholders rather than secrets: names (dotted, camelCase), keywords,
// types, numbers.
func assignedValue(v string) bool {
	if !notPlaceholder(v) || strings.Trim(v, "0123456789") == "" || dottedName.MatchString(v) || camelName.MatchString(v) {
		return false
	}
	switch strings.ToLower(v) {
	case "string", "boolean", "number", "object", "bytes", "optional", "required", "undefined", "false",
		"secretstr", "hidden", "redacted", "empty", "prompt", "await", "async", "typeof", "function",
		"lambda", "return", "const", "static", "readonly", "public", "private", "protected", "default":
		return false
	}
	low := strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(v, "_", ""), "-", ""))
	return !strings.HasSuffix(low, "password") && !strings.HasSuffix(low, "token") && !strings.HasSuffix(low, "secret") && !strings.HasSuffix(low, "key")
}

var dottedName = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+$`)

// camelName: letters only, a lower-case one followed by an upper-case one.
var camelName = regexp.MustCompile(`^[A-Za-z_$]*[a-z][A-Z][A-Za-z_$]*$`)

// notPlaceholder refuses variables ($TOKEN, ${PASS}, %PASSWORD%, <token>,
// {{ .Token }}), masks (****, xxxx) and the words themselves.
func notPlaceholder(v string) bool {
	if v == "" || strings.ContainsRune("$%<{", rune(v[0])) || strings.Trim(v, "*xX.•") == "" {
		return false
	}
	switch strings.ToLower(v) {
	case "password", "passwd", "pass", "secret", "token", "apikey", "api_key", "pwd":
		return false
	}
	return true
}

func hasLetterAndDigit(s string) bool {
	letter, digit := false, false
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		letter = letter || c >= 'a' && c <= 'z'
		digit = digit || s[i] >= '0' && s[i] <= '9'
	}
	return letter && digit
}

// mixedAlphanumeric holds an upper-case letter, a lower-case one and a digit.
func mixedAlphanumeric(s string) bool {
	upper, lower, digit := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		upper = upper || c >= 'A' && c <= 'Z'
		lower = lower || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	return upper && lower && digit
}

var (
	pemBegin = regexp.MustCompile(`^-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	pemEnd   = regexp.MustCompile(`^-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
)

// findPrivateKeys finds a private key's block at each BEGIN line: up to the
// END line when the body between holds no "--" and is base64 (pemBody);
// else, for a block cut short, the header lines and base64 lines after the
// BEGIN line. Hand-written rather than one pattern: Go's regexp needs some
// hundred ns a byte for a lazy body, and a key is kilobytes.
func findPrivateKeys(s string, hits []int, out []span) []span {
	next := 0
	for _, p := range hits {
		if p < next {
			continue
		}
		h := pemBegin.FindStringIndex(s[p:min(len(s), p+80)])
		if h == nil {
			continue
		}
		body := p + h[1]
		end := -1
		if i := strings.Index(s[body:min(len(s), body+64<<10)], "--"); i >= 0 && pemBody(s[body:body+i]) {
			if f := pemEnd.FindStringIndex(s[body+i : min(len(s), body+i+80)]); f != nil {
				end = body + i + f[1]
			}
		}
		if end < 0 {
			if end = pemCutShort(s, body); end < 0 || !pemBody(s[body:end]) {
				continue
			}
		}
		out = append(out, span{start: p, end: end})
		next = end
	}
	return out
}

// pemCutShort returns the end of the header lines ("Proc-Type: 4,ENCRYPTED")
// and base64 lines that follow a BEGIN line ending at i, or -1 if there is
// no base64. Lines end in a newline, or in an escaped one (\n) in a text
// that quotes JSON.
func pemCutShort(s string, i int) int {
	for {
		j := afterNewline(s, i)
		if j < 0 || j >= len(s) || !isLetter(s[j]) {
			break
		}
		k := j
		for k < len(s) && (isLetter(s[k]) || s[k] >= '0' && s[k] <= '9' || s[k] == '-') {
			k++
		}
		if k+1 >= len(s) || s[k] != ':' || s[k+1] != ' ' && s[k+1] != '\t' {
			break
		}
		for k < len(s) && s[k] != '\r' && s[k] != '\n' && s[k] != '\\' {
			k++
		}
		i = k
	}
	end := -1
	for {
		j := i
		for {
			if n := afterNewline(s, j); n >= 0 {
				j = n
			} else if j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			} else {
				break
			}
		}
		k := j
		for k < len(s) && isBase64(s[k]) {
			k++
		}
		if j == i || k-j < 4 {
			return end
		}
		i, end = k, k
	}
}

// afterNewline returns the index after a line end at s[i:] (\n, \r\n, or
// the escapes \n and \r\n), or -1.
func afterNewline(s string, i int) int {
	for _, nl := range []string{"\n", "\r\n", `\n`, `\r\n`} {
		if strings.HasPrefix(s[i:], nl) {
			return i + len(nl)
		}
	}
	return -1
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isBase64(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '='
}

// pemBody accepts the body of a private-key block when it is base64: 40
// characters or more, and other characters (besides white space, quotes
// and the backslashes of escaped line ends) at most a tenth of that, so
// that code between a BEGIN string and an END string is not taken for a key.
func pemBody(body string) bool {
	b64, other := 0, 0
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=':
			b64++
		case c == ' ', c == '\t', c == '\r', c == '\n', c == '"', c == '\'', c == '`', c == '\\':
		default:
			other++
		}
	}
	return b64 >= 40 && other*10 <= b64
}

// jwtHeader accepts a token whose first part is base64url of a JSON object
// with a string "alg".
func jwtHeader(tok string) bool {
	h, _, _ := strings.Cut(tok, ".")
	if len(h) > 4096 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return false
	}
	var header struct {
		Alg *string `json:"alg"`
	}
	return json.Unmarshal(raw, &header) == nil && header.Alg != nil && *header.Alg != ""
}

// findURLPasswords finds the password of scheme://user:password@host at
// each "://". The user part ends at the first ':', the password at the last
// '@' before the authority ends, so an unencoded '@' in it is covered.
func findURLPasswords(s string, hits []int, out []span) []span {
	for _, p := range hits {
		if p == 0 || !isSchemeByte(s[p-1]) {
			continue
		}
		start := p + 3
		end := start
		for end < len(s) && end-start < 2048 && !isAuthorityEnd(s[end]) {
			end++
		}
		at := strings.LastIndexByte(s[start:end], '@')
		if at < 0 {
			continue
		}
		colon := strings.IndexByte(s[start:start+at], ':')
		if colon < 0 {
			continue
		}
		a, b := start+colon+1, start+at
		if a < b && notPlaceholder(s[a:b]) {
			out = append(out, span{start: a, end: b})
		}
	}
	return out
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-'
}

func isAuthorityEnd(c byte) bool {
	return c <= ' ' || c == 0x7f || strings.IndexByte("/?#\"'`<>\\[]{}|^", c) >= 0
}
