// Package redact finds secrets in text and replaces each with a marker that
// names the rule that matched and a short digest of the secret:
//
//	[REDACTED:github_token:3f2a9c1d]
//
// memoryd redacts every history entry and note before it is appended, so the
// log never holds the secret and a replay of the log is exact. The same
// secret always gets the same marker, so a model can still tell that
// something was there and which secret it was. Markers match no rule, so
// redacting twice is redacting once, and a text that no rule matches comes
// back unchanged, byte for byte.
//
// The rules are listed by Builtin and described in docs/redaction.md. Most
// are on by default; the looser ones are opt-in (Config.Enable), and users
// may add their own (Config.Rules, ParseConfig). A Redactor is immutable and
// safe for concurrent use; it does no I/O.
package redact

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Config chooses the rules. Its zero value is the default rules alone, with
// unkeyed digests.
type Config struct {
	// Enable turns on opt-in rules by name.
	Enable []string `toml:"enable"`
	// Disable turns off default rules by name.
	Disable []string `toml:"disable"`
	// Rules are the user's own rules, tried after the default rules and
	// before the opt-in ones.
	Rules []UserRule `toml:"rule"`
	// HighEntropy tunes the opt-in rule high_entropy.
	HighEntropy HighEntropy `toml:"high_entropy"`
	// SecretAssignment tunes the opt-in rule secret_assignment.
	SecretAssignment SecretAssignment `toml:"secret_assignment"`
	// DigestKey keys the markers' digests: HMAC-SHA256 under this key, or
	// plain SHA-256 when it is empty. It never comes from a config file.
	DigestKey []byte `toml:"-"`
}

// UserRule is a rule of the user's: every match of Pattern (RE2 syntax) is
// redacted, or only its group named "secret" when it has one. When Keywords
// are given, the pattern runs only on texts holding one of them
// (case-sensitive), and every match must contain one.
type UserRule struct {
	Name     string   `toml:"name"`
	Pattern  string   `toml:"pattern"`
	Keywords []string `toml:"keywords"`
}

// HighEntropy tunes the rule high_entropy; zero fields take the defaults.
type HighEntropy struct {
	// MinLength is the shortest token considered, in bytes (default 24).
	MinLength int `toml:"min_length"`
	// Threshold is the least Shannon entropy, in bits per byte, of a token
	// that is redacted (default 4.2).
	Threshold float64 `toml:"threshold"`
}

// SecretAssignment tunes the rule secret_assignment.
type SecretAssignment struct {
	// Keys are more key names, beside the built-in ones (password, token,
	// api_key, ...); letters, digits, '_', '-' and '.' only.
	Keys []string `toml:"keys"`
}

// Match is one redacted secret.
type Match struct {
	Kind   string // the rule's name, as in the marker
	Digest string // 8 hex digits, as in the marker
	Start  int    // byte offsets of the secret in the input
	End    int
}

// Marker returns the text that replaced the secret.
func (m Match) Marker() string { return marker(m.Kind, m.Digest) }

const markerPrefix = "[REDACTED:"

func marker(kind, digest string) string { return markerPrefix + kind + ":" + digest + "]" }

// Redactor redacts texts and JSON documents by a fixed set of rules.
type Redactor struct {
	rules   []*rule
	anchors []*anchorGroup // every rule's keywords, grouped by their rarest byte
	key     []byte
}

// span is a candidate secret: bytes [start, end) of the text, found by rules[rule].
type span struct {
	start, end int
	rule       int
}

// New builds a Redactor. It refuses unknown rule names, bad patterns and
// settings out of range.
func New(c Config) (*Redactor, error) {
	known := map[string]bool{}
	for _, s := range builtinSpecs {
		known[s.name] = s.optIn
	}
	enable, disable := map[string]bool{}, map[string]bool{}
	for _, n := range c.Enable {
		if _, ok := known[n]; !ok {
			return nil, fmt.Errorf("redact: enable: no rule is named %q", n)
		}
		enable[n] = true
	}
	for _, n := range c.Disable {
		if _, ok := known[n]; !ok {
			return nil, fmt.Errorf("redact: disable: no rule is named %q", n)
		}
		if enable[n] {
			return nil, fmt.Errorf("redact: rule %q is both enabled and disabled", n)
		}
		disable[n] = true
	}
	entropy, err := c.HighEntropy.withDefaults()
	if err != nil {
		return nil, err
	}
	for _, k := range c.SecretAssignment.Keys {
		if !validKey.MatchString(k) {
			return nil, fmt.Errorf("redact: secret_assignment: key %q: want 1 to 40 letters, digits, '_', '-' or '.'", k)
		}
	}
	user, err := userRules(c.Rules, known)
	if err != nil {
		return nil, err
	}
	// The default rules, then the user's, then the opt-in ones, which are
	// looser: the order is priority.
	r := &Redactor{key: slices.Clone(c.DigestKey)}
	for _, s := range builtinSpecs {
		if disable[s.name] || (s.optIn && !enable[s.name]) {
			continue
		}
		if s.optIn && user != nil {
			r.rules, user = append(r.rules, user...), nil
		}
		switch s.name {
		case "secret_assignment":
			s = assignmentSpec(s, c.SecretAssignment.Keys)
		case "high_entropy":
			s.find = entropy.find
		}
		ru, err := s.compile()
		if err != nil {
			return nil, fmt.Errorf("redact: built-in rule %s: %w", s.name, err)
		}
		r.rules = append(r.rules, ru)
	}
	r.rules = append(r.rules, user...)
	r.index()
	return r, nil
}

func userRules(rules []UserRule, builtin map[string]bool) ([]*rule, error) {
	var out []*rule
	names := map[string]bool{}
	for i, u := range rules {
		if !validName.MatchString(u.Name) {
			return nil, fmt.Errorf("redact: rule %d: name %q: want a lower-case letter, then lower-case letters, digits or '_' (at most 40)", i+1, u.Name)
		}
		if _, ok := builtin[u.Name]; ok || names[u.Name] {
			return nil, fmt.Errorf("redact: rule %d: the name %q is taken", i+1, u.Name)
		}
		names[u.Name] = true
		for _, k := range u.Keywords {
			if k == "" {
				return nil, fmt.Errorf("redact: rule %s: empty keyword", u.Name)
			}
		}
		ru, err := ruleSpec{name: u.Name, pattern: u.Pattern, keywords: u.Keywords}.compile()
		if err != nil {
			return nil, fmt.Errorf("redact: rule %s: %w", u.Name, err)
		}
		if ru.re.MatchString("") {
			return nil, fmt.Errorf("redact: rule %s: the pattern matches the empty text", u.Name)
		}
		out = append(out, ru)
	}
	return out, nil
}

var validName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// Rules returns the names of the rules this Redactor runs, in order.
func (r *Redactor) Rules() []string {
	var out []string
	for _, ru := range r.rules {
		if !slices.Contains(out, ru.name) {
			out = append(out, ru.name)
		}
	}
	return out
}

// Text returns s with every secret replaced by its marker, and the secrets
// found, in the order they appear. When there is none it returns s itself.
// Redacting the result again changes nothing: a marker can end a token, so a
// pass that redacted something is followed by another on its result (a
// match dropped for overlapping a better one may fit beside its marker),
// until one finds nothing.
func (r *Redactor) Text(s string) (string, []Match) {
	spans := r.find(s)
	if len(spans) == 0 {
		return s, nil
	}
	h := r.hasher()
	matches := make([]Match, 0, len(spans))
	for _, sp := range spans {
		matches = append(matches, Match{Kind: r.rules[sp.rule].name, Digest: digest(h, s[sp.start:sp.end]), Start: sp.start, End: sp.end})
	}
	out := render(s, matches)
	for pass := 1; pass < maxPasses; pass++ {
		more := r.find(out)
		if len(more) == 0 {
			break
		}
		before := matches[:len(matches):len(matches)]
		for _, sp := range more {
			a := inputOffset(before, sp.start)
			matches = append(matches, Match{Kind: r.rules[sp.rule].name, Digest: digest(h, out[sp.start:sp.end]), Start: a, End: a + sp.end - sp.start})
		}
		slices.SortFunc(matches, func(a, b Match) int { return cmp.Compare(a.Start, b.Start) })
		out = render(s, matches)
	}
	return out, matches
}

// maxPasses bounds Text's passes. Each pass turns bytes of the text into
// markers, so there is an end; two passes are the most any test has needed.
const maxPasses = 8

// render returns s with the secrets of matches, sorted, replaced by markers.
func render(s string, matches []Match) string {
	var b strings.Builder
	b.Grow(len(s) + 24*len(matches))
	last := 0
	for _, m := range matches {
		b.WriteString(s[last:m.Start])
		b.WriteString(m.Marker())
		last = m.End
	}
	b.WriteString(s[last:])
	return b.String()
}

// inputOffset maps an offset of render(s, matches), outside the markers,
// back to s.
func inputOffset(matches []Match, x int) int {
	delta := 0
	for _, m := range matches {
		if x < m.Start+delta {
			break
		}
		delta += len(markerPrefix) + len(m.Kind) + 1 + len(m.Digest) + 1 - (m.End - m.Start)
	}
	return x - delta
}

// Digest returns the digest that a marker for secret carries.
func (r *Redactor) Digest(secret string) string { return digest(r.hasher(), secret) }

func (r *Redactor) hasher() hash.Hash {
	if len(r.key) == 0 {
		return sha256.New()
	}
	return hmac.New(sha256.New, r.key)
}

func digest(h hash.Hash, secret string) string {
	h.Reset()
	io.WriteString(h, secret)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:4])
}

// find returns the secrets of s, sorted. Rules are taken in order: a
// match that overlaps one of an earlier rule, or a marker already in s, is
// dropped, so a specific rule wins over a generic one that covers more.
func (r *Redactor) find(s string) []span {
	h := r.scan(s)
	var taken []span // sorted by start, not overlapping
	for _, p := range h.markers {
		if end := markerEnd(s, p); end > 0 && (len(taken) == 0 || taken[len(taken)-1].end <= p) {
			taken = append(taken, span{start: p, end: end, rule: -1})
		}
	}
	var cands []span
	for i, ru := range r.rules {
		var pos []int
		if h.byRule != nil {
			pos = h.byRule[i]
		}
		if len(ru.keywords) > 0 && len(pos) == 0 {
			continue
		}
		cands = ru.appendMatches(cands[:0], s, pos)
		if len(cands) == 0 {
			continue
		}
		slices.SortFunc(cands, func(a, b span) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end)) })
		n := len(taken)
		last := 0
		for _, c := range cands {
			if c.start < last || c.start >= c.end || overlapsAny(c, taken[:n]) {
				continue
			}
			c.rule = i
			taken = append(taken, c)
			last = c.end
		}
		if len(taken) > n && n > 0 {
			slices.SortFunc(taken, func(a, b span) int { return cmp.Compare(a.start, b.start) })
		}
	}
	out := taken[:0]
	for _, t := range taken {
		if t.rule >= 0 {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// overlapsAny reports whether c overlaps a span of sorted, which is sorted
// by start and free of overlaps.
func overlapsAny(c span, sorted []span) bool {
	i, _ := slices.BinarySearchFunc(sorted, c.start, func(t span, start int) int { return cmp.Compare(t.start, start) })
	return i > 0 && sorted[i-1].end > c.start || i < len(sorted) && sorted[i].start < c.end
}

// markerEnd returns the end of the marker at s[pos:], or 0 if there is none.
func markerEnd(s string, pos int) int {
	i := pos + len(markerPrefix)
	if i >= len(s) || s[i] < 'a' || s[i] > 'z' {
		return 0
	}
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
		i++
	}
	if i+10 > len(s) || s[i] != ':' || s[i+9] != ']' {
		return 0
	}
	for _, c := range []byte(s[i+1 : i+9]) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0
		}
	}
	return i + 10
}
