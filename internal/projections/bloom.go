package projections

import "encoding/binary"

// bloomBits is the size of a sealed chunk's Bloom filter of the byte
// trigrams of its text, with one hash per trigram. A needle of at least
// three bytes can only occur in a chunk whose filter has the bit of every
// trigram of the needle, so a search skips the other chunks unread. The
// filter is a pure function of the text, so a rebuild writes the same bytes.
const (
	bloomBitsLog = 14
	bloomBits    = 1 << bloomBitsLog
	bloomBytes   = bloomBits / 8
)

// trigramBit is the filter bit of the trigram a, b, c, by Fibonacci hashing.
func trigramBit(a, b, c byte) uint32 {
	t := uint32(a) | uint32(b)<<8 | uint32(c)<<16
	return (t * 0x9E3779B1) >> (32 - bloomBitsLog)
}

// trigramBloom returns the filter of data with the trigram hash bit
// (trigramHashOf).
func trigramBloom(bit func(a, b, c byte) uint32, data []byte) []byte {
	f := make([]byte, bloomBytes)
	for i := 0; i+3 <= len(data); i++ {
		bit := bit(data[i], data[i+1], data[i+2])
		f[bit>>3] |= 1 << (bit & 7)
	}
	return f
}

// bloomProbes returns the filter bits of needle's trigrams as
// little-endian uint16s. A needle under three bytes has none and passes
// every chunk.
func bloomProbes(bit func(a, b, c byte) uint32, needle []byte) []byte {
	out := []byte{}
	seen := map[uint32]bool{}
	for i := 0; i+3 <= len(needle); i++ {
		bit := bit(needle[i], needle[i+1], needle[i+2])
		if !seen[bit] {
			seen[bit] = true
			out = binary.LittleEndian.AppendUint16(out, uint16(bit))
		}
	}
	return out
}

// bloomHas reports whether every probe bit is set in filter. Anything
// malformed passes, since the filter only ever skips and never decides a
// match. PostgreSQL's memoryd_bloom_has in migrations/postgres is the same.
func bloomHas(filter, probes []byte) bool {
	if len(filter) != bloomBytes {
		return true
	}
	for i := 0; i+2 <= len(probes); i += 2 {
		bit := binary.LittleEndian.Uint16(probes[i:])
		if bit < bloomBits && filter[bit>>3]&(1<<(bit&7)) == 0 {
			return false
		}
	}
	return true
}
