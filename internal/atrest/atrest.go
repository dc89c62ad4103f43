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

// topLevel returns a JSON object's members sorted by name (the last of a
// name written twice), their values as written, each clear when it holds
// no string (a top-level path is clear too). One pass over the bytes,
// which json.Valid checked, that stops decoding nothing.
func topLevel(data []byte) ([]member, error) {
	notObject := fmt.Errorf("atrest: a payload is not a JSON object")
	if !json.Valid(data) {
		return nil, notObject
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, notObject
	}
	var out []member
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		end := scanString(data, i)
		name := string(data[i+1 : end-1])
		if bytes.IndexByte(data[i:end], '\\') >= 0 {
			if err := json.Unmarshal(data[i:end], &name); err != nil {
				return nil, notObject
			}
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		vend, str := scanValue(data, i)
		out = append(out, member{name: name, value: data[i:vend], clear: name == "path" || !str})
		if i = skipSpace(data, vend); data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	slices.SortStableFunc(out, func(a, b member) int { return strings.Compare(a.name, b.name) })
	dedup := out[:0]
	for k, m := range out {
		if k+1 < len(out) && out[k+1].name == m.name {
			continue // a later one of the name wins, as in json.Unmarshal
		}
		dedup = append(dedup, m)
	}
	return dedup, nil
}

// The scanners below walk valid JSON (json.Valid checked it): each takes
// the index of a token and returns the index after it.

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the string that starts at d[i].
func scanString(d []byte, i int) int {
	for i++; d[i] != '"'; i++ {
		if d[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// scanValue returns the index after the value that starts at d[i], and
// whether it holds a string (not counting member names).
func scanValue(d []byte, i int) (int, bool) {
	switch d[i] {
	case '"':
		return scanString(d, i), true
	case '{', '[':
		object, str := d[i] == '{', false
		i = skipSpace(d, i+1)
		for d[i] != '}' && d[i] != ']' {
			if object {
				i = skipSpace(d, skipSpace(d, scanString(d, i))+1) // the name and its colon
			}
			var s bool
			i, s = scanValue(d, i)
			str = str || s
			if i = skipSpace(d, i); d[i] == ',' {
				i = skipSpace(d, i+1)
			}
		}
		return i + 1, str
	default: // a number, true, false or null
		for i < len(d) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(d[i])) {
			i++
		}
		return i, false
	}
}
