// Package strictjson refuses JSON that encoding/json accepts silently.
//
// It refuses invalid UTF-8, which would become U+FFFD, duplicate object
// keys, where the last would win, deep nesting, numbers past the float64
// range and data after the value. In the objects that decode into a struct
// it refuses keys that are not exactly a field's name. encoding/json matches
// them case-insensitively, so "Agent" and "tas\u212a_id" would be duplicates
// that escape the key check. The API checks request bodies with it, and an
// import checks every event it is given.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxDepth is the nesting memoryd accepts in a request body. An event
// payload holds no more of a request than its body did, so it bounds payloads too.
const MaxDepth = 100

// The rules of a strict JSON text. Every error Check returns is an *Error
// that wraps one of them.
var (
	ErrInvalidUTF8  = errors.New("invalid UTF-8")
	ErrSyntax       = errors.New("invalid JSON")
	ErrTrailingData = errors.New("data after the value")
	ErrTooDeep      = errors.New("nested too deep")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrUnknownField = errors.New("unknown field")
	ErrNumberRange  = errors.New("number out of range")
)

// Error is a text breaking one rule.
type Error struct {
	Rule     error  // one of the Err variables of this package
	Key      string // the key, for ErrDuplicateKey and ErrUnknownField
	Near     string // for ErrUnknownField, a field name that differs from Key only in case
	Number   string // for ErrNumberRange, the number cut at shownDigits characters
	MaxDepth int    // the limit, for ErrTooDeep
}

// shownDigits is how much of an out-of-range number an error quotes.
const shownDigits = 24

func (e *Error) Error() string { return e.Describe("the JSON text") }

func (e *Error) Unwrap() error { return e.Rule }

// Describe says what is wrong with the text, calling it subject.
// The messages quote no more of the text than a key or a cut number.
func (e *Error) Describe(subject string) string {
	switch e.Rule {
	case ErrInvalidUTF8:
		return subject + " is not valid UTF-8"
	case ErrTrailingData:
		return subject + " has data after its JSON value"
	case ErrTooDeep:
		return fmt.Sprintf("%s nests deeper than %d levels", subject, e.MaxDepth)
	case ErrDuplicateKey:
		return fmt.Sprintf("%s has the key %q twice in one object", subject, e.Key)
	case ErrUnknownField:
		if e.Near != "" {
			return fmt.Sprintf("unknown field %q (field names are case-sensitive: %q)", e.Key, e.Near)
		}
		return fmt.Sprintf("unknown field %q", e.Key)
	case ErrNumberRange:
		return fmt.Sprintf("%s has the number %s, which is out of range", subject, e.Number)
	}
	return subject + " is not valid JSON"
}

var errSyntax = &Error{Rule: ErrSyntax}

// Check refuses data unless it is one JSON value that breaks none of the
// package's rules, nesting at most maxDepth levels. Keys must match the
// fields of into, the type data is decoded into; a nil into accepts any value.
func Check(data []byte, into reflect.Type, maxDepth int) error {
	if !utf8.Valid(data) {
		return &Error{Rule: ErrInvalidUTF8}
	}
	type frame struct {
		object bool
		keys   map[string]struct{}
		key    bool         // the next string token is a key
		typ    reflect.Type // what this object or array decodes into; nil for anything
		value  reflect.Type // what the next value in it decodes into
	}
	var stack []frame
	root := shape(into)
	// The full syntax is left to the decoding that follows.
	z := tokenizer{b: data}
	values := 0 // complete values at the top level
	for {
		kind, raw, err := z.next()
		if err != nil {
			return err
		}
		top := len(stack) - 1
		if top < 0 && kind != tokEOF && kind != tokClose {
			if values++; values > 1 {
				return &Error{Rule: ErrTrailingData}
			}
		}
		switch kind {
		case tokEOF:
			return nil
		case tokOpen:
			if len(stack) >= maxDepth {
				return &Error{Rule: ErrTooDeep, MaxDepth: maxDepth}
			}
			if top >= 0 && stack[top].object {
				stack[top].key = true
			}
			f := frame{object: raw[0] == '{', key: raw[0] == '{'}
			t := root
			if top >= 0 {
				t = stack[top].value
			}
			if k := kindOf(t); f.object && (k == reflect.Struct || k == reflect.Map) || !f.object && (k == reflect.Slice || k == reflect.Array) {
				f.typ = t
				if k != reflect.Struct {
					f.value = shape(t.Elem())
				}
			}
			stack = append(stack, f)
			continue
		case tokClose:
			if top < 0 || stack[top].object != (raw[0] == '}') {
				return errSyntax
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
					return &Error{Rule: ErrDuplicateKey, Key: t}
				}
				stack[top].keys[t] = struct{}{}
				stack[top].key = false
				if st := stack[top].typ; kindOf(st) == reflect.Struct {
					ft, ok := fieldsOf(st)[t]
					if !ok {
						_, _, near := structField(st, t)
						return &Error{Rule: ErrUnknownField, Key: t, Near: near}
					}
					stack[top].value = shape(ft)
				}
				continue
			}
		case tokNumber:
			// No client's JSON writer, such as JSON.stringify or encoding/json,
			// makes a number past the float64 range; reading one would
			// cost a big-number parse of each field for nothing. Only a
			// long number or one with an exponent can be out of range.
			if len(raw) > 15 || bytes.ContainsAny(raw, "eE") {
				if f, err := strconv.ParseFloat(string(raw), 64); err != nil && math.IsInf(f, 0) {
					n := string(raw)
					if len(n) > shownDigits {
						n = n[:shownDigits] + "…"
					}
					return &Error{Rule: ErrNumberRange, Number: n}
				}
			}
		}
		if top >= 0 && stack[top].object {
			stack[top].key = true // a value was read, so a key comes next
		}
	}
}

// The tokens Check reads.
const (
	tokEOF = iota
	tokOpen
	tokClose
	tokString
	tokNumber
	tokLiteral
)

// tokenizer splits a JSON text into tokens without allocating.
// It skips the separators and checks only what it must to split correctly.
type tokenizer struct {
	b []byte
	i int
}

// next returns the next token and its bytes. A string's bytes include its quotes.
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
			// The closing quote is the first one not escaped. Both are
			// found with IndexByte, so that a long string costs a fast
			// scan, and each byte is looked at a bounded number of times.
			start, i := z.i, z.i+1
			for {
				q := bytes.IndexByte(z.b[i:], '"')
				if q < 0 {
					return 0, nil, errSyntax
				}
				quote := i + q
				for i <= quote {
					e := bytes.IndexByte(z.b[i:quote], '\\')
					if e < 0 {
						z.i = quote + 1
						return tokString, z.b[start:z.i], nil
					}
					i += e + 2 // past the backslash and the byte it escapes
				}
				// i is past an escaped quote, so look for the next one.
			}
		default:
			start := z.i
			kind := tokLiteral
			if c == '-' || c >= '0' && c <= '9' {
				kind = tokNumber
			} else if c < 'a' || c > 'z' {
				return 0, nil, errSyntax
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
		return "", errSyntax
	}
	return s, nil
}

// shape returns the type whose JSON shape Check follows for a value decoded
// into t. It is t without pointers, or nil when any value goes there.
func shape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Raw JSON, an interface or a type with its own UnmarshalJSON takes any value.
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

// fieldTypes caches fieldsOf, a struct type's fields by JSON name.
var fieldTypes sync.Map // reflect.Type → map[string]reflect.Type

// fieldsOf returns the fields of struct t by their JSON name, each with
// the type its value decodes into, as structField finds them.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldTypes.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		var embedded []reflect.Type
		for i := range t.NumField() {
			f := t.Field(i)
			name, et := jsonName(f)
			if et != nil {
				embedded = append(embedded, et)
			} else if _, taken := m[name]; name != "" && !taken {
				m[name] = f.Type
			}
		}
		for _, et := range embedded {
			add(et)
		}
	}
	add(t)
	fieldTypes.Store(t, m)
	return m
}

// jsonName returns the JSON name of field f, or "" when it has none.
// For an embedded struct whose fields are promoted, it returns that struct.
func jsonName(f reflect.StructField) (string, reflect.Type) {
	tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if tag == "-" {
		return "", nil
	}
	if f.Anonymous && tag == "" {
		et := f.Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() == reflect.Struct {
			return "", et
		}
	}
	if !f.IsExported() {
		return "", nil
	}
	if tag == "" {
		tag = f.Name
	}
	return tag, nil
}

// structField returns the type of the field of struct t whose JSON name is
// exactly name. When there is none, near is a field name that differs only
// in case.
func structField(t reflect.Type, name string) (typ reflect.Type, ok bool, near string) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag, et := jsonName(f)
		if et != nil {
			embedded = append(embedded, et)
			continue
		}
		if tag == "" {
			continue
		}
		if tag == name {
			return f.Type, true, ""
		}
		if strings.EqualFold(tag, name) {
			near = tag
		}
	}
	// Fields of an embedded struct without a JSON name count as t's own, as
	// encoding/json promotes them, after t's own fields. The payloads
	// checked have no name twice.
	for _, et := range embedded {
		if ft, ok, n := structField(et, name); ok {
			return ft, true, ""
		} else if n != "" && near == "" {
			near = n
		}
	}
	return nil, false, near
}
