package memory

import "unicode/utf8"

// chars returns the number of code points in s.
func chars(s string) int {
	if isASCII(s) {
		return len(s)
	}
	return utf8.RuneCountInString(s)
}

// isASCII reports whether s is all ASCII, eight bytes at a time.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// sliceChars returns n code points of s from off, clamped to the end.
func sliceChars(s string, off, n int) string {
	if isASCII(s) { // a code point per byte
		off = min(off, len(s))
		if n < 0 || off+n > len(s) {
			return s[off:]
		}
		return s[off : off+n]
	}
	i := 0
	for k := 0; k < off && i < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	if n < 0 { // to the end
		return s[i:]
	}
	j := i
	for k := 0; k < n && j < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[j:])
		j += w
	}
	return s[i:j]
}
