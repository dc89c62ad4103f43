// Package jsonenc holds hand-written encoders that produce exactly the
// bytes encoding/json produces, for the hot paths where its reflection and
// byte-at-a-time escaping show. The fuzz tests compare both encoders with
// encoding/json.
package jsonenc

import (
	"bytes"
	"io"
	"math/bits"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// specialBytes flags the bytes of w that need attention, which are control
// bytes, '"', '\\' and the bytes of multi-byte UTF-8 sequences. w holds eight
// bytes of a string, the first in the low byte. The result is 0 when there is
// none, else its lowest set bit is in the first such byte. Bytes above it
// may be flagged wrongly, since borrows run upwards.
func specialBytes(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (w - 0x20*ones) & ^w & highs
	q := w ^ ('"' * ones)
	b := w ^ ('\\' * ones)
	return w&highs | control | (q-ones)&^q&highs | (b-ones)&^b&highs
}

// AppendString appends s to dst as encoding/json encodes a string with HTML
// escaping off. Runs of plain ASCII are skipped eight bytes at a time.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) { // skip to the first byte that needs attention
			_ = s[i+7]
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			m := specialBytes(w)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// indexHTML is bytes.IndexAny(b, "<>&") by three vectorised IndexByte
// scans, each bounded by the nearest hit so far.
func indexHTML(b []byte) int {
	i := -1
	for _, c := range []byte{'<', '>', '&'} {
		if j := bytes.IndexByte(b, c); j >= 0 {
			i, b = j, b[:j]
		}
	}
	return i
}

// WriteHTMLEscaped writes JSON b, encoded with HTML escaping off, to w as
// encoding/json writes it with HTML escaping on. Write errors are not
// reported, since w is meant to be a hash or a buffer.
func WriteHTMLEscaped(w io.Writer, b []byte) {
	for {
		i := indexHTML(b)
		if i < 0 {
			w.Write(b)
			return
		}
		w.Write(b[:i])
		switch b[i] {
		case '<':
			io.WriteString(w, `\u003c`)
		case '>':
			io.WriteString(w, `\u003e`)
		default:
			io.WriteString(w, `\u0026`)
		}
		b = b[i+1:]
	}
}
