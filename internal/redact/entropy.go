package redact

import (
	"fmt"
	"math"
	"strings"
)

const (
	defaultMinLength = 24
	defaultThreshold = 4.2
	// maxEntropyToken bounds the tokens high_entropy looks at: longer runs
	// are data (images, archives, key material caught by other rules), not
	// a credential pasted somewhere.
	maxEntropyToken = 512
)

type entropyRule struct {
	minLength int
	threshold float64
}

func (h HighEntropy) withDefaults() (entropyRule, error) {
	e := entropyRule{minLength: h.MinLength, threshold: h.Threshold}
	if e.minLength == 0 {
		e.minLength = defaultMinLength
	}
	if e.threshold == 0 {
		e.threshold = defaultThreshold
	}
	if e.minLength < 8 || e.minLength > maxEntropyToken {
		return e, fmt.Errorf("redact: high_entropy: min_length %d: want 8 to %d", e.minLength, maxEntropyToken)
	}
	if !(e.threshold > 0 && e.threshold <= 8) {
		return e, fmt.Errorf("redact: high_entropy: threshold %v: want more than 0 and at most 8 bits per byte", e.threshold)
	}
	return e, nil
}

var tokenByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("+/_-", byte(c)) >= 0
	}
	return t
}()

// find scans s for tokens, runs of [A-Za-z0-9+/_-] and any '=' padding,
// and keeps the random-looking ones.
func (e entropyRule) find(s string, _ []int, out []span) []span {
	for i := 0; i < len(s); {
		if !tokenByte[s[i]] {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && tokenByte[s[j]] {
			j++
		}
		for j < len(s) && j-i < maxEntropyToken && s[j] == '=' { // base64 padding
			j++
		}
		if n := j - i; n >= e.minLength && n <= maxEntropyToken && e.secret(s, i, j) {
			out = append(out, span{start: i, end: j})
		}
		i = j
	}
	return out
}

// imagePrefixes begin base64 of PNG, JPEG, GIF, WebP and PDF files.
var imagePrefixes = []string{"iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "JVBERi0"}

// secret reports whether the token s[i:j] is random enough and not one of
// the random-looking things that are not secrets.
func (e entropyRule) secret(s string, i, j int) bool {
	t := s[i:j]
	if !hasLetterAndDigit(t) || isHexHash(t) || isUUID(t) || isULID(t) || idPath(t) {
		return false
	}
	if strings.HasSuffix(s[:i], "base64,") || afterHashLabel(s[:i]) {
		return false // a data: URL; a hash (Go modules' h1:, HPKP's pin-sha256="...")
	}
	if strings.HasPrefix(t, "AAAA") || pathLike(t) || wordiness(t) > 0.5 || separators(t)*10 > len(t) {
		return false // binary data that starts with zero bytes (SSH public keys); a path; a name
	}
	for _, p := range imagePrefixes {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	for _, p := range []string{"sha1-", "sha256-", "sha384-", "sha512-"} {
		if strings.HasPrefix(t, p) {
			return false // subresource integrity, package-lock.json
		}
	}
	return shannon(strings.TrimRight(t, "=")) >= e.threshold
}

// shannon returns the entropy of the byte distribution of s, in bits per
// byte: log2(n) - sum(c log2 c)/n over the counts c of its n bytes.
func shannon(s string) float64 {
	if len(s) > maxEntropyToken {
		s = s[:maxEntropyToken]
	}
	var counts [256]uint16
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	sum := 0.0
	for _, c := range counts {
		sum += cLog2c[c]
	}
	return cLog2c[len(s)]/float64(len(s)) - sum/float64(len(s))
}

// cLog2c[c] is c·log2(c).
var cLog2c = func() (t [maxEntropyToken + 1]float64) {
	for c := 2; c <= maxEntropyToken; c++ {
		t[c] = float64(c) * math.Log2(float64(c))
	}
	return t
}()

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isHexHash: MD5, SHA-1 (git), SHA-256 and SHA-512 digests in hex.
func isHexHash(s string) bool {
	switch len(s) {
	case 32, 40, 64, 128:
		return isHex(s)
	}
	return false
}

func isUUID(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	return isHex(s[:8]) && isHex(s[9:13]) && isHex(s[14:18]) && isHex(s[19:23]) && isHex(s[24:])
}

// isULID: 26 characters of Crockford's base32 (either case), the first at most 7.
func isULID(s string) bool {
	if len(s) != 26 || s[0] < '0' || s[0] > '7' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' && c != 'i' && c != 'l' && c != 'o' && c != 'u') {
			return false
		}
	}
	return true
}

// pathLike reports whether t has two or more '/'-separated parts made of
// lower-case letters only, as paths do (.../release/build/...) and random
// base64 almost never does.
func pathLike(t string) bool {
	words := 0
	for part := range strings.SplitSeq(t, "/") {
		if len(part) >= 2 && strings.Trim(part, "abcdefghijklmnopqrstuvwxyz") == "" {
			words++
		}
	}
	return words >= 2
}

// wordiness is the share of t's bytes in runs of four or more letters of
// one case, a capital and lower-case letters counting as one run: names
// (ossl_check_PKCS12_type, BetaMemoryTool2025InsertCommand) score 0.6 and
// more, random base64 0.18 on average (above 0.5 for under 3% of tokens of
// 24 bytes), random lower-case base36 about 0.47.
func wordiness(t string) float64 {
	in := 0
	for i := 0; i < len(t); {
		j := i
		if t[j] >= 'A' && t[j] <= 'Z' {
			for j < len(t) && t[j] >= 'A' && t[j] <= 'Z' {
				j++
			}
			if j-i == 1 {
				for j < len(t) && t[j] >= 'a' && t[j] <= 'z' {
					j++
				}
			}
		} else {
			for j < len(t) && t[j] >= 'a' && t[j] <= 'z' {
				j++
			}
		}
		if j == i {
			i++
			continue
		}
		if j-i >= 4 {
			in += j - i
		}
		i = j
	}
	return float64(in) / float64(len(t))
}

// separators counts the '_' and '-' of t: names have one every few bytes,
// random base64url one in 32.
func separators(t string) int {
	return strings.Count(t, "_") + strings.Count(t, "-")
}

// idPath reports whether t is ids joined by '/': parts that are ULIDs,
// UUIDs or hex hashes, with lower-case words between them (a memoryd
// stream, 01M8V34Q8191A4G75BP18T8WSZ/root).
func idPath(t string) bool {
	ids := 0
	for part := range strings.SplitSeq(t, "/") {
		switch {
		case isULID(part) || isUUID(part) || isHexHash(part):
			ids++
		case strings.Trim(part, "abcdefghijklmnopqrstuvwxyz") != "":
			return false
		}
	}
	return ids > 0
}

// afterHashLabel reports whether before ends in a label that announces a
// hash: h1:, sha256=, sha512:, md5=, with a quote or not.
func afterHashLabel(before string) bool {
	before = strings.TrimSuffix(strings.TrimSuffix(before, `"`), `\`)
	if len(before) == 0 || !strings.ContainsRune(":=", rune(before[len(before)-1])) {
		return false
	}
	label := strings.ToLower(before[max(0, len(before)-8) : len(before)-1])
	for _, l := range []string{"h1", "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "digest"} {
		if strings.HasSuffix(label, l) {
			return true
		}
	}
	return false
}
