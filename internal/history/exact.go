package history

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Pi writes each key of an entry in one spelling and reads it back so, and
// "ID" or "Id" is not "id". encoding/json matches the keys of an object to
// struct fields case-insensitively, and "ID" after "id" would even win.
// So an entry with a key that is a case variant of a field's is decoded by
// exact keys instead, with decodeExact. Other keys, case variants included,
// stay unread in the raw entry. Entries without one, all that Pi writes,
// decode through encoding/json's struct decoding.

// fieldKeys are the keys the entries' types decode, by their
// ASCII-lowercase forms.
var fieldKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"type", "id", "parentId", "message", "summary", "customType", "content", // entry
		"role", "toolCallId", "toolName", "command", "output", "exitCode", "cancelled", "truncated", // message
		"text", "data", "mimeType", "name", "arguments", // block
	} {
		m[string(bytes.ToLower([]byte(k)))] = k
	}
	return m
}()

// hasVariantKey reports whether the JSON value raw has, at any depth, a key
// that encoding/json would take for a field's key without being it.
func hasVariantKey(raw []byte) bool {
	var stackBuf [16]bool // true for an object
	stack := stackBuf[:0]
	key := false // the next string is a key
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			stack, key = append(stack, true), true
		case '[':
			stack, key = append(stack, false), false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			key = false
		case ',':
			key = len(stack) > 0 && stack[len(stack)-1]
		case ':':
			key = false
		case '"':
			end, closed := stringEnd(raw, i+1)
			if !closed {
				return false // invalid JSON, which both decoders refuse
			}
			// A key in a value no type decodes, such as tool-call
			// arguments, counts too.
			if key && variantKey(raw[i:end]) {
				return true
			}
			i = end - 1
		}
	}
	return false
}

// stringEnd returns the index just past the closing quote of the string
// whose content starts at start, and whether it is closed at all.
func stringEnd(raw []byte, start int) (end int, closed bool) {
	for i := start; ; {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			return len(raw), false
		}
		q := i + j
		backslashes := 0
		for k := q - 1; k >= start && raw[k] == '\\'; k-- {
			backslashes++
		}
		if backslashes%2 == 0 { // not an escaped quote
			return q + 1, true
		}
		i = q + 1
	}
}

// variantKey reports whether the quoted key token is a case variant of a
// field's key.
func variantKey(token []byte) bool {
	k := token[1 : len(token)-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		var s string
		if json.Unmarshal(token, &s) != nil {
			return false
		}
		k = []byte(s)
	}
	ascii := true
	for _, c := range k {
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii { // U+017F "ſ" folds to "s", and U+212A "K" to "k"
		for _, f := range fieldKeys {
			if bytes.EqualFold(k, []byte(f)) {
				return true // not equal, since f is ASCII and k is not
			}
		}
		return false
	}
	var lower [16]byte
	if len(k) > len(lower) {
		return false // longer than every field's key
	}
	for i, c := range k {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	f, ok := fieldKeys[string(lower[:len(k)])]
	return ok && f != string(k)
}

// field is one member an object decodes by exact key, and where to.
type field struct {
	key  string
	into any
}

// decodeExact fills each field from the member of the JSON object b whose
// key is exactly the field's. It fails where encoding/json's struct
// decoding fails, and a null b sets nothing.
func decodeExact(b []byte, fields ...field) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	for _, f := range fields {
		if v, ok := members[f.key]; ok {
			if err := json.Unmarshal(v, f.into); err != nil {
				return err
			}
		}
	}
	return nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// Head is an entry's type, id and parent, which place it in its session.
type Head struct {
	Type     string  `json:"type"`
	ID       string  `json:"id"`
	ParentID *string `json:"parentId"` // nil when absent or null
}

// ReadHead decodes the head of a raw entry, matching its keys exactly.
// An entry whose only id key is "ID" has no id.
func ReadHead(raw []byte) (Head, error) {
	var h Head
	if !hasVariantKey(raw) {
		err := json.Unmarshal(raw, &h)
		return h, err
	}
	err := decodeExact(raw, field{"type", &h.Type}, field{"id", &h.ID}, field{"parentId", &h.ParentID})
	return h, err
}

// decodeEntry decodes the part of an entry rendering reads, by exact keys
// when exact is set.
func decodeEntry(raw []byte, exact bool) (entry, error) {
	var e entry
	if !exact {
		err := json.Unmarshal(raw, &e)
		return e, err
	}
	var msg json.RawMessage
	if err := decodeExact(raw, field{"type", &e.Type}, field{"id", &e.ID}, field{"message", &msg},
		field{"summary", &e.Summary}, field{"customType", &e.CustomType}, field{"content", &e.Content}); err != nil {
		return e, err
	}
	if msg == nil || isNull(msg) {
		return e, nil
	}
	m := &message{}
	if err := decodeExact(msg, field{"role", &m.Role}, field{"content", &m.Content}, field{"toolCallId", &m.ToolCallID},
		field{"toolName", &m.ToolName}, field{"customType", &m.CustomType}, field{"command", &m.Command},
		field{"output", &m.Output}, field{"exitCode", &m.ExitCode}, field{"cancelled", &m.Cancelled},
		field{"truncated", &m.Truncated}, field{"summary", &m.Summary}); err != nil {
		return e, err
	}
	e.Message = m
	return e, nil
}

// decodeBlocks decodes a JSON array of content blocks, by exact keys when
// exact is set.
func decodeBlocks(raw json.RawMessage, exact bool) ([]block, error) {
	var blocks []block
	if !exact {
		err := json.Unmarshal(raw, &blocks)
		return blocks, err
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, err
	}
	blocks = make([]block, len(elems))
	for i, el := range elems {
		b := &blocks[i]
		if err := decodeExact(el, field{"type", &b.Type}, field{"text", &b.Text}, field{"data", &b.Data},
			field{"mimeType", &b.MimeType}, field{"id", &b.ID}, field{"name", &b.Name}, field{"arguments", &b.Arguments}); err != nil {
			return nil, err
		}
	}
	return blocks, nil
}
