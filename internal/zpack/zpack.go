// Package zpack compresses stored values with zstd (default level, no
// dictionary) and tells them from values stored plain by the zstd frame's
// magic number, which no UTF-8 text or JSON begins with: rows written
// before compression read as they are.
package zpack

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// magic begins every zstd frame. 0xFD is never a byte of UTF-8.
var magic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxSize bounds what Unpack decompresses: far above any stored value.
const maxSize = 1 << 30

// The encoder and decoder are shared: EncodeAll and DecodeAll may be
// called concurrently and keep their state in pools of their own. One
// goroutine per call keeps the output the same for the same input, as
// a rebuild needs.
var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxSize))
)

// ErrCorrupt means a value that begins as a zstd frame does not decode.
var ErrCorrupt = errors.New("a compressed value does not decode")

// Pack returns b compressed in one zstd frame.
func Pack(b []byte) []byte {
	return encoder.EncodeAll(b, make([]byte, 0, len(b)/3+64))
}

// Packed reports whether b is a zstd frame, as Pack makes.
func Packed(b []byte) bool { return bytes.HasPrefix(b, magic) }

// Unpack returns b decompressed when it is a zstd frame, else b as it is.
func Unpack(b []byte) ([]byte, error) {
	if !Packed(b) {
		return b, nil
	}
	out, err := decoder.DecodeAll(b, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return out, nil
}
