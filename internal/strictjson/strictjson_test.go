package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type ref struct {
	TaskID string `json:"task_id"`
	Agent  string `json:"agent"`
}

type payload struct {
	ref
	Path  string          `json:"path"`
	Raw   json.RawMessage `json:"raw"`
	Inner *struct {
		N int64 `json:"n"`
	} `json:"inner"`
	List []ref  `json:"list"`
	Skip string `json:"-"`
}

// TestCheckRules: each rule refuses what encoding/json would accept
// silently, at any depth, and Describe names it.
func TestCheckRules(t *testing.T) {
	into := reflect.TypeFor[payload]()
	deep := strings.Repeat("[", 101) + strings.Repeat("]", 101)
	for _, tc := range []struct {
		name, text string
		rule       error
		describe   string
	}{
		{"duplicate key", `{"path":"a","path":"b"}`, ErrDuplicateKey, `the text has the key "path" twice in one object`},
		{"duplicate key in raw JSON", `{"raw":{"x":{"y":1,"y":2}}}`, ErrDuplicateKey, `the text has the key "y" twice in one object`},
		{"duplicate key of an embedded struct", `{"agent":"/root","agent":"/x"}`, ErrDuplicateKey, `the text has the key "agent" twice in one object`},
		{"invalid UTF-8", "{\"path\":\"\xff\"}", ErrInvalidUTF8, "the text is not valid UTF-8"},
		{"unknown field", `{"colour":"red"}`, ErrUnknownField, `unknown field "colour"`},
		{"unknown field in a struct below", `{"inner":{"n":1,"m":2}}`, ErrUnknownField, `unknown field "m"`},
		{"unknown field in a slice of structs", `{"list":[{"task_id":"t"},{"agnet":"/root"}]}`, ErrUnknownField, `unknown field "agnet"`},
		{"case variant", `{"Path":"a"}`, ErrUnknownField, `unknown field "Path" (field names are case-sensitive: "path")`},
		{"case variant of a promoted field", `{"tas\u212a_id":"t"}`, ErrUnknownField, "unknown field \"tas\u212a_id\" (field names are case-sensitive: \"task_id\")"},
		{"a field named -", `{"Skip":"x"}`, ErrUnknownField, `unknown field "Skip"`},
		{"number out of range", `{"inner":{"n":1e999999}}`, ErrNumberRange, "the text has the number 1e999999, which is out of range"},
		{"long number out of range", `{"raw":-1` + strings.Repeat("0", 400) + `}`, ErrNumberRange, "the text has the number -10000000000000000000000…, which is out of range"},
		{"too deep", `{"raw":` + deep + `}`, ErrTooDeep, "the text nests deeper than 100 levels"},
		{"trailing data", `{} {}`, ErrTrailingData, "the text has data after its JSON value"},
		{"unclosed string", `{"path":"a`, ErrSyntax, "the text is not valid JSON"},
		{"mismatched close", `{"path":"a"]`, ErrSyntax, "the text is not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.text), into, MaxDepth)
			var se *Error
			if !errors.Is(err, tc.rule) || !errors.As(err, &se) {
				t.Fatalf("Check(%q) = %v, want %v", tc.text, err, tc.rule)
			}
			if got := se.Describe("the text"); got != tc.describe {
				t.Errorf("Describe = %q, want %q", got, tc.describe)
			}
		})
	}
	for _, ok := range []string{
		`{"task_id":"t","agent":"/root","path":"a","raw":{"Any":[1,{"k":null}]},"inner":{"n":2},"list":[]}`,
		`{"raw":1e308,"inner":null}`, "{\"path\":\"\u00e9\\u00e9\"}", ` {} `, ``,
		`{"raw":` + strings.Repeat("[", 99) + strings.Repeat("]", 99) + `}`,
	} {
		if err := Check([]byte(ok), into, MaxDepth); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	// Without a type, any key goes; the other rules hold.
	if err := Check([]byte(`{"colour":{"a":1,"b":2}}`), nil, MaxDepth); err != nil {
		t.Errorf("Check without a type: %v", err)
	}
	if err := Check([]byte(`{"colour":{"a":1,"a":2}}`), nil, MaxDepth); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("Check without a type of a duplicate key: %v", err)
	}
}

// TestCheckAgreesWithEncodingJSON: what Check accepts into a struct, a
// strict json.Decoder (unknown fields refused) accepts and decodes.
func TestCheckAgreesWithEncodingJSON(t *testing.T) {
	into := reflect.TypeFor[payload]()
	for _, text := range []string{
		`{"task_id":"t","agent":"/root"}`, `{"path":"a","inner":{"n":3}}`, `{"list":[{"agent":"/x"}]}`,
	} {
		if err := Check([]byte(text), into, MaxDepth); err != nil {
			t.Fatalf("Check(%q): %v", text, err)
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		var p payload
		if err := dec.Decode(&p); err != nil {
			t.Errorf("json.Decoder refuses %q, which Check accepts: %v", text, err)
		}
	}
}

// TestCheckStrings: a string ends at its first quote that is not escaped,
// however long the string and however many escapes it has.
func TestCheckStrings(t *testing.T) {
	into := reflect.TypeFor[payload]()
	escapes := `{"path":"` + strings.Repeat(`\n\"\\`, 200_000) + `"}`
	for text, want := range map[string]error{
		`{"path":"a\"b"}`:             nil,
		`{"path":"a\\"}`:              nil,
		`{"path":"a\\\"}`:             ErrSyntax,
		`{"path":"\"`:                 ErrSyntax,
		`{"path":"abc\`:               ErrSyntax,
		`{"a\"b":1,"a\"b":2}`:         ErrUnknownField,
		`{"raw":{"a\"b":1,"a\"b":2}}`: ErrDuplicateKey,
		`{"raw":{"a\\":1,"a\\":2}}`:   ErrDuplicateKey,
		`{"raw":"}{\"","path":"x"}`:   nil,
		escapes:                       nil,
		escapes + `,"path":1}`:        ErrTrailingData,
	} {
		err := Check([]byte(text), into, MaxDepth)
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("Check(%.40q) = %v, want %v", text, err, want)
		}
	}
}
