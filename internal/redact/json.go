package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/memoryd/memoryd/internal/jsonenc"
)

// ErrInvalidJSON is returned by JSON for a document it cannot redact.
var ErrInvalidJSON = errors.New("redact: not a valid JSON document")

// JSON redacts every string of the JSON document raw, object keys included,
// and reports whether anything changed. Only the strings that change are
// re-encoded (as encoding/json encodes them, without HTML escaping); every
// other byte stays as it was, and when nothing changes raw itself is
// returned. The document is checked (ErrInvalidJSON) only when something
// in it changes: callers pass JSON they have decoded or checked already.
func (r *Redactor) JSON(raw []byte) ([]byte, bool, error) {
	// A read-only view for the keyword scan; nothing keeps it.
	h := r.scan(unsafe.String(unsafe.SliceData(raw), len(raw)))
	everyString := slices.ContainsFunc(r.rules, func(ru *rule) bool { return len(ru.keywords) == 0 })
	var positions []int
	for _, pos := range h.byRule {
		positions = append(positions, pos...)
	}
	if !everyString && len(positions) == 0 && !hidingEscape(raw) {
		return raw, false, nil
	}
	slices.Sort(positions)
	var out []byte
	last, k := 0, 0
	for i := 0; i < len(raw); {
		q := bytes.IndexByte(raw[i:], '"')
		if q < 0 {
			break
		}
		a := i + q
		b := stringEnd(raw, a)
		if b < 0 {
			break // unterminated: a broken document
		}
		for k < len(positions) && positions[k] <= a {
			k++
		}
		if everyString || k < len(positions) && positions[k] < b || hidingEscape(raw[a+1:b]) {
			s, ok := unquote(raw[a+1 : b])
			if !ok {
				return raw, false, ErrInvalidJSON
			}
			if red, ms := r.Text(s); len(ms) > 0 {
				out = append(out, raw[last:a]...)
				out = jsonenc.AppendString(out, red)
				last = b + 1
			}
		}
		i = b + 1
	}
	if out == nil {
		return raw, false, nil
	}
	if !json.Valid(raw) {
		return raw, false, ErrInvalidJSON
	}
	return append(out, raw[last:]...), true, nil
}

// hidingEscape reports whether b has an escape that may spell a keyword's
// byte (\u0041, \/), so that a keyword of the string does not show in b.
func hidingEscape(b []byte) bool {
	return bytes.Contains(b, []byte(`\u`)) || bytes.Contains(b, []byte(`\/`))
}

// stringEnd returns the index of the quote that closes the string opened
// at raw[a], or -1 if there is none.
func stringEnd(raw []byte, a int) int {
	for p := a + 1; ; {
		j := bytes.IndexByte(raw[p:], '"')
		if j < 0 {
			return -1
		}
		e := p + j
		n := 0
		for e-1-n > a && raw[e-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return e
		}
		p = e + 1
	}
}

// unquote decodes the body of a JSON string as encoding/json does: invalid
// UTF-8 and lone surrogates become U+FFFD, so that redaction sees what a
// reader of the document sees. ok is false for a malformed body.
func unquote(b []byte) (s string, ok bool) {
	if bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		for _, c := range b {
			if c < 0x20 {
				return "", false
			}
		}
		return string(b), true
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '\\':
			if i+1 >= len(b) {
				return "", false
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := hex4(b[i+2:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if d := utf16.DecodeRune(r, hex4(b[i+2:])); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			out = utf8.AppendRune(out, r) // U+FFFD for a bad byte
			i += size
		}
	}
	return string(out), true
}

// hex4 decodes four hex digits at the start of b, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
