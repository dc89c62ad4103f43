// Package atrest encrypts what memoryd stores, for a database encrypted at
// rest (docs/encryption.md): the payloads of events and the texts of the
// projections are sealed with a key kept outside the database, so that a
// copied database file, its WAL or a backup reveals no note or history
// text.
//
// Sealing is deterministic: the nonce is a keyed hash of the value and of
// where it is stored (an SIV construction over AES-256-GCM), so the same
// value sealed twice gives the same bytes. A rebuild of the projections
// then writes the rows it replaces, byte for byte, and an erasure's
// tombstones compare as they do on a plain database. The price is that
// equal values in one column are seen to be equal.
package atrest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// KeySize is the size of a key in bytes; its text is KeySize*2 hex digits.
const KeySize = 32

// Scheme names the sealing in the database's at_rest row; a database that
// names another refuses to open.
const Scheme = "aes256gcm-siv-hmac-sha256/1"

var (
	// ErrKey means a key's text is not KeySize bytes in hex.
	ErrKey = errors.New("an encryption key is 64 hexadecimal digits (32 bytes), such as `openssl rand -hex 32` prints")
	// ErrOpen means a sealed value did not open: the key is not the one
	// it was sealed with, or the bytes were changed.
	ErrOpen = errors.New("a sealed value does not open with this key (a wrong key, or damaged data)")
)

const (
	version   = 1
	nonceSize = 12
	// Overhead is what sealing adds to a value's length in bytes.
	Overhead = 1 + nonceSize + 16
	// sealedKey is the member of an event's payload that holds the sealed
	// payload (SealJSON). No event type has a member of that name.
	sealedKey = "~sealed"
	// stringPrefix starts a value SealString sealed.
	stringPrefix = "~s1:"
)

// Sealer seals and opens values with one key. It is safe for concurrent use.
type Sealer struct {
	aead    cipher.AEAD
	siv     []byte // the key of the nonces' HMAC
	check   string
	trigram [3][256]uint32
}

// ParseKey returns the key that text (hex, surrounding space ignored) holds.
func ParseKey(text string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(text))
	if err != nil || len(b) != KeySize {
		return nil, ErrKey
	}
	return b, nil
}

// New returns the sealer of key, which must be KeySize bytes. Its subkeys,
// for encryption, nonces, the key check and the search filters, are
// derived from key by HMAC-SHA256 with distinct labels.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, ErrKey
	}
	block, err := aes.NewCipher(derive(key, "memoryd at-rest encryption"))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s := &Sealer{aead: aead, siv: derive(key, "memoryd at-rest nonce"), check: hex.EncodeToString(derive(key, "memoryd at-rest key check")[:16])}
	// The trigram tables: 3×256 keyed 32-bit words, from an HMAC counter
	// stream.
	tables := derive(key, "memoryd at-rest trigram filter")
	var stream []byte
	for i := uint32(0); len(stream) < 3*256*4; i++ {
		m := hmac.New(sha256.New, tables)
		m.Write(binary.BigEndian.AppendUint32(nil, i))
		stream = m.Sum(stream)
	}
	for t := range s.trigram {
		for b := range s.trigram[t] {
			s.trigram[t][b] = binary.LittleEndian.Uint32(stream[(t*256+b)*4:])
		}
	}
	return s, nil
}

func derive(key []byte, label string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// Check is the key's check value, stored in the database so that a wrong
// key is refused at open rather than at the first read. It reveals nothing
// of the key.
func (s *Sealer) Check() string { return s.check }

// TrigramHash is a keyed hash of the trigram a, b, c (tabulation hashing
// with keyed tables), for the search filters of a sealed database: a filter
// built with it says nothing of the text to whoever lacks the key.
func (s *Sealer) TrigramHash(a, b, c byte) uint32 {
	return s.trigram[0][a] ^ s.trigram[1][b] ^ s.trigram[2][c]
}

// Seal returns plain sealed for the place tag names (a table and column):
// a version byte, the nonce and AES-GCM's ciphertext with tag as its
// additional data, so a value moved to another column does not open.
func (s *Sealer) Seal(tag string, plain []byte) []byte {
	m := hmac.New(sha256.New, s.siv)
	m.Write([]byte(tag))
	m.Write([]byte{0})
	m.Write(plain)
	nonce := m.Sum(nil)[:nonceSize]
	out := make([]byte, 1+nonceSize, Overhead+len(plain))
	out[0] = version
	copy(out[1:], nonce)
	return s.aead.Seal(out, nonce, plain, []byte(tag))
}

// Open returns the value Seal sealed for tag.
func (s *Sealer) Open(tag string, sealed []byte) ([]byte, error) {
	if len(sealed) < Overhead || sealed[0] != version {
		return nil, ErrOpen
	}
	plain, err := s.aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], []byte(tag))
	if err != nil {
		return nil, ErrOpen
	}
	if plain == nil {
		plain = []byte{}
	}
	return plain, nil
}

// SealString seals plain as text, for a column of text: a prefix and the
// sealed bytes in base64.
func (s *Sealer) SealString(tag string, plain []byte) string {
	return stringPrefix + base64.RawStdEncoding.EncodeToString(s.Seal(tag, plain))
}

// OpenString returns the value SealString sealed.
func (s *Sealer) OpenString(tag, sealed string) ([]byte, error) {
	b64, ok := strings.CutPrefix(sealed, stringPrefix)
	if !ok {
		return nil, ErrOpen
	}
	raw, err := base64.RawStdEncoding.DecodeString(b64)
	if err != nil {
		return nil, ErrOpen
	}
	return s.Open(tag, raw)
}

// SealJSON seals an event's payload, a JSON object, so that what the
// log's SQL reads of it stays readable: the payload's top-level members
// that hold no string (numbers, booleans, an object of numbers such as a
// budget) and a top-level "path" are kept as they are, sorted by name,
// and the whole payload follows, sealed, in the member "~sealed". A
// payload that holds no string at all, such as an erasure's tombstone, is
// returned unchanged. OpenJSON returns the payload byte for byte.
func (s *Sealer) SealJSON(tag string, data []byte) ([]byte, error) {
	members, err := topLevel(data)
	if err != nil {
		return nil, err
	}
	for i := range members {
		members[i].clear = members[i].name == "path" || !holdsString(members[i].value)
	}
	if allClear(members) {
		return data, nil
	}
	out := make([]byte, 0, len(data)*4/3+64)
	out = append(out, '{')
	for _, m := range members {
		if !m.clear {
			continue
		}
		name, err := json.Marshal(m.name)
		if err != nil {
			return nil, err
		}
		out = append(out, name...)
		out = append(out, ':')
		out = append(out, m.value...)
		out = append(out, ',')
	}
	out = append(out, `"`+sealedKey+`":"`...)
	out = base64.RawStdEncoding.AppendEncode(out, s.Seal(tag, data))
	out = append(out, `"}`...)
	return out, nil
}

// OpenJSON returns the payload SealJSON sealed. A payload without the
// sealed member is returned unchanged: SealJSON kept it whole.
func (s *Sealer) OpenJSON(tag string, data []byte) ([]byte, error) {
	marker := []byte(`"` + sealedKey + `":"`)
	// A quote inside a JSON string is escaped, so the marker's bytes
	// occur only as the member SealJSON writes last.
	i := bytes.LastIndex(data, marker)
	if i < 0 {
		return data, nil
	}
	b64 := data[i+len(marker):]
	if !bytes.HasSuffix(b64, []byte(`"}`)) {
		return nil, ErrOpen
	}
	raw, err := base64.RawStdEncoding.AppendDecode(nil, b64[:len(b64)-2])
	if err != nil {
		return nil, ErrOpen
	}
	return s.Open(tag, raw)
}

// member is one top-level member of a JSON object, its value as raw bytes.
type member struct {
	name  string
	value []byte
	clear bool // kept as it is beside the sealed payload
}

// holdsString reports whether a JSON value holds a string (not counting
// an object's member names).
func holdsString(raw []byte) bool {
	if bytes.IndexByte(raw, '"') < 0 {
		return false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return true
		case []any:
			return slices.ContainsFunc(v, walk)
		case map[string]any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// allClear reports whether every member holds no string: the payload
// reveals no text, and is kept whole.
func allClear(ms []member) bool {
	for _, m := range ms {
		if m.name == "path" || !m.clear {
			return false
		}
	}
	return true
}

// topLevel returns a JSON object's members sorted by name, their values
// as written.
func topLevel(data []byte) ([]member, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("atrest: a payload is not a JSON object")
	}
	out := make([]member, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, member{name: k, value: m[k]})
	}
	return out, nil
}
