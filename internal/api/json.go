package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// encode writes v as JSON with the status. An encoding error can only be
// logged by the caller's middleware: the header is already sent.
func encode(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"code":"internal","message":"internal error","details":{}}}`+"\n")
		return
	}
	writeJSON(w, status, buf.Bytes())
}

// writeJSON writes an encoded JSON body. Its length is known, so the
// response goes out in one piece rather than chunked.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// maxJSONDepth bounds the nesting of request bodies.
const maxJSONDepth = 100

// decode reads the request body as exactly one JSON value into v,
// refusing a wrong content type, invalid UTF-8, duplicate object keys,
// nesting deeper than maxJSONDepth, numbers out of range, unknown fields
// (field names are matched exactly) and trailing data.
func decode(r *http.Request, v any) error {
	if err := checkJSONContentType(r); err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return decodeError(io.EOF)
	}
	// checkJSON refuses unknown fields and data after the value, so the
	// plain (and faster) json.Unmarshal decodes what is left.
	if err := checkJSON(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return decodeError(err)
	}
	return nil
}

// checkJSON refuses what encoding/json would accept silently: invalid
// UTF-8 (it would become U+FFFD), duplicate keys (the last would win),
// deep nesting, numbers past the float64 range (1e999999) and, in the
// objects that decode into a struct of target (the type decoded into),
// keys that are not exactly a field's name: encoding/json matches them
// case-insensitively ("Agent", "tas\u212a_id"), so a key and its case
// variant would be a duplicate that escapes the check, the last winning.
func checkJSON(body []byte, target reflect.Type) error {
	if !utf8.Valid(body) {
		return httpErr(errBadRequest, "the request body is not valid UTF-8")
	}
	type frame struct {
		object bool
		keys   map[string]struct{}
		key    bool         // the next string token is a key
		typ    reflect.Type // what this object or array decodes into; nil: anything
		value  reflect.Type // what the next value in it decodes into
	}
	var stack []frame
	root := shape(target)
	z := tokenizer{b: body}
	values := 0 // complete values at the top level
	for {
		kind, raw, err := z.next()
		if err != nil {
			return err
		}
		top := len(stack) - 1
		if top < 0 && kind != tokEOF && kind != tokClose {
			if values++; values > 1 {
				return errTrailingData
			}
		}
		switch kind {
		case tokEOF:
			return nil
		case tokOpen:
			if len(stack) >= maxJSONDepth {
				return httpErr(errBadRequest, fmt.Sprintf("the request body nests deeper than %d levels", maxJSONDepth))
			}
			if top >= 0 && stack[top].object {
				stack[top].key = true
			}
			f := frame{object: raw[0] == '{', key: raw[0] == '{'}
			into := root
			if top >= 0 {
				into = stack[top].value
			}
			if k := kindOf(into); f.object && (k == reflect.Struct || k == reflect.Map) || !f.object && (k == reflect.Slice || k == reflect.Array) {
				f.typ = into
				if k != reflect.Struct {
					f.value = shape(into.Elem())
				}
			}
			stack = append(stack, f)
			continue
		case tokClose:
			if top < 0 || stack[top].object != (raw[0] == '}') {
				return errNotJSON
			}
			stack = stack[:top]
			continue
		case tokString:
			if top >= 0 && stack[top].object && stack[top].key {
				t, err := unquote(raw)
				if err != nil {
					return err
				}
				if stack[top].keys == nil {
					stack[top].keys = map[string]struct{}{}
				}
				if _, dup := stack[top].keys[t]; dup {
					return httpErr(errBadRequest, fmt.Sprintf("the request body has the key %q twice in one object", t))
				}
				stack[top].keys[t] = struct{}{}
				stack[top].key = false
				if st := stack[top].typ; kindOf(st) == reflect.Struct {
					ft, ok, near := structField(st, t)
					if !ok && near != "" {
						return httpErr(errBadRequest, fmt.Sprintf("unknown field %q (field names are case-sensitive: %q)", t, near))
					}
					if !ok {
						return httpErr(errBadRequest, fmt.Sprintf("unknown field %q", t))
					}
					stack[top].value = shape(ft)
				}
				continue
			}
		case tokNumber:
			// No JSON writer of a client (JSON.stringify, encoding/json)
			// makes a number past the float64 range; reading one would
			// cost a big-number parse of each field for nothing. Only a
			// long number or one with an exponent can be out of range.
			if len(raw) > 15 || bytes.ContainsAny(raw, "eE") {
				if f, err := strconv.ParseFloat(string(raw), 64); err != nil && math.IsInf(f, 0) {
					n := string(raw)
					if len(n) > 24 {
						n = n[:24] + "…"
					}
					return httpErr(errBadRequest, fmt.Sprintf("the request body has the number %s, which is out of range", n))
				}
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].key = true // a value was read: a key comes next
		}
	}
}

var (
	errNotJSON      = httpErr(errBadRequest, "the request body is not valid JSON")
	errTrailingData = httpErr(errBadRequest, "the request body has data after its JSON value")
)

// The tokens checkJSON reads.
const (
	tokEOF = iota
	tokOpen
	tokClose
	tokString
	tokNumber
	tokLiteral
)

// tokenizer splits a JSON text into tokens without allocating, skipping
// the separators (':' and ','). It checks only what it must to split
// correctly; the syntax is checked in full by the decoding that follows
// checkJSON.
type tokenizer struct {
	b []byte
	i int
}

// next returns the next token and its bytes (a string with its quotes).
func (z *tokenizer) next() (int, []byte, error) {
	for z.i < len(z.b) {
		switch c := z.b[z.i]; c {
		case ' ', '\t', '\n', '\r', ':', ',':
			z.i++
		case '{', '[':
			z.i++
			return tokOpen, z.b[z.i-1 : z.i], nil
		case '}', ']':
			z.i++
			return tokClose, z.b[z.i-1 : z.i], nil
		case '"':
			start := z.i
			for z.i++; z.i < len(z.b); z.i++ {
				switch z.b[z.i] {
				case '\\':
					z.i++ // the escaped byte
				case '"':
					z.i++
					return tokString, z.b[start:z.i], nil
				}
			}
			return 0, nil, errNotJSON
		default:
			start := z.i
			kind := tokLiteral
			if c == '-' || c >= '0' && c <= '9' {
				kind = tokNumber
			} else if c < 'a' || c > 'z' {
				return 0, nil, errNotJSON
			}
			for z.i < len(z.b) && strings.IndexByte(" \t\n\r,:{}[]\"", z.b[z.i]) < 0 {
				z.i++
			}
			return kind, z.b[start:z.i], nil
		}
	}
	return tokEOF, nil, nil
}

// unquote returns the value of a JSON string token.
func unquote(raw []byte) (string, error) {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", errNotJSON
	}
	return s, nil
}

// shape returns the type whose JSON shape checkJSON follows for a value
// decoded into t: t without pointers, or nil when anything goes there
// (raw JSON, an interface, a type with its own UnmarshalJSON).
func shape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func kindOf(t reflect.Type) reflect.Kind {
	if t == nil {
		return reflect.Invalid
	}
	return t.Kind()
}

// structField returns the type of the field of struct t that the JSON key
// name decodes into, matching the name exactly; when there is none, near
// is a field name that differs only in case. A struct with embedded
// fields is not followed (every key is accepted).
func structField(t reflect.Type, name string) (typ reflect.Type, ok bool, near string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, true, ""
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || tag == "-" {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type, true, ""
		}
		if strings.EqualFold(tag, name) {
			near = tag
		}
	}
	return nil, false, near
}

func checkJSONContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return httpErr(errUnsupportedMedia, "the request body must be application/json")
	}
	return nil
}

func decodeError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return httpErr(errBodyTooLarge, fmt.Sprintf("the request body is over the %d byte limit", mbe.Limit))
	case errors.Is(err, io.EOF):
		return httpErr(errBadRequest, "the request body is empty; send a JSON object")
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return httpErr(errBadRequest, "the request body is not valid JSON")
	case errors.As(err, &te):
		if te.Field == "" {
			return httpErr(errBadRequest, fmt.Sprintf("the request body must be a JSON object, not %s", te.Value))
		}
		return httpErr(errBadRequest, fmt.Sprintf("field %s must not be %s", te.Field, te.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return httpErr(errBadRequest, "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return httpErr(errBadRequest, "the request body could not be decoded")
}
