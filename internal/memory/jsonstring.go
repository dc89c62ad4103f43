package memory

import (
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// Tool results are mostly text (a note, an item, search hits), and the
// text is often in a result twice (the content the model sees and the
// details). encoding/json escapes strings a byte at a time; the encoders
// here produce exactly its bytes (HTML escaping off, as ToolResult.JSON
// sets) but skip runs of plain ASCII eight bytes at a time. The tests
// compare them with encoding/json (TestToolResultJSONIsEncodingJSON and
// FuzzAppendJSONString).

const hexDigits = "0123456789abcdef"

// specialBytes flags the bytes of w (eight bytes of a string, the first
// in the low byte) that need attention: control bytes (< 0x20), '"',
// '\\' and bytes of multi-byte UTF-8 sequences (>= 0x80). The result is 0
// when there is none; otherwise its lowest set bit is in the first such
// byte (bytes above it may be flagged wrongly: borrows run upwards).
func specialBytes(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	control := (w - 0x20*ones) & ^w & highs
	q := w ^ ('"' * ones)
	b := w ^ ('\\' * ones)
	return w&highs | control | (q-ones)&^q&highs | (b-ones)&^b&highs
}

// appendJSONString appends s to dst as encoding/json encodes a string
// with HTML escaping off: '"', '\\' and control bytes escaped (\b, \f,
// \n, \r, \t short, others as \u00XX), invalid UTF-8 as \ufffd, U+2028
// and U+2029 as \u2028 and \u2029, everything else as it is.
func appendJSONString(dst []byte, s string) []byte {
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

// appendJSON appends d as encoding/json encodes it (its fields in order).
// A field added to readNoteDetails must be added here too:
// TestToolResultJSONIsEncodingJSON fails until it is.
func (d *readNoteDetails) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"path":`...)
	dst = appendJSONString(dst, d.Path)
	dst = append(dst, `,"text":`...)
	dst = appendJSONString(dst, d.Text)
	for _, f := range []struct {
		key string
		v   int
	}{
		{`,"start_line":`, d.StartLine}, {`,"stop_line":`, d.StopLine}, {`,"total_lines":`, d.TotalLines},
		{`,"offset_chars":`, d.OffsetChars}, {`,"end_chars":`, d.EndChars}, {`,"total_chars":`, d.TotalChars},
	} {
		dst = strconv.AppendInt(append(dst, f.key...), int64(f.v), 10)
	}
	dst = append(dst, `,"next_offset_chars":`...)
	if d.NextOffsetChars == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, int64(*d.NextOffsetChars), 10)
	}
	return append(dst, '}')
}
