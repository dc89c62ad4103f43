package tools

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// detailsOf is the Go type of each tool's result details.
var detailsOf = map[string]any{
	HistoryListWindows:     HistoryListWindowsDetails{},
	HistoryListItems:       HistoryListItemsDetails{},
	HistoryReadItem:        HistoryReadItemDetails{},
	HistorySearchContents:  HistorySearchContentsDetails{},
	NotesListFilesByPrefix: NotesListFilesByPrefixDetails{},
	NotesReadFile:          NotesReadFileDetails{},
	NotesSearchContents:    NotesSearchContentsDetails{},
	NotesAppendToFile:      NoteWriteDetails{},
	NotesWriteFile:         NoteWriteDetails{},
	GetContextRemaining:    GetContextRemainingDetails{},
	NewContext:             NewContextDetails{},
}

// TestDetailsMatchSchemas holds each tool's details type to the result
// schema in specs.json: the same fields, each required unless omitempty,
// of the schema's type, nullable exactly when it is a pointer.
func TestDetailsMatchSchemas(t *testing.T) {
	if len(detailsOf) != len(Specs()) {
		t.Fatalf("%d details types for %d tools", len(detailsOf), len(Specs()))
	}
	for _, s := range Specs() {
		d, ok := detailsOf[s.Name]
		if !ok {
			t.Errorf("%s: no details type", s.Name)
			continue
		}
		var schema map[string]any
		if err := json.Unmarshal(s.Result, &schema); err != nil {
			t.Fatalf("%s: result schema: %v", s.Name, err)
		}
		matchType(t, s.Name, reflect.TypeOf(d), schema)
	}
}

// matchType reports where the Go type typ and the schema differ.
func matchType(t *testing.T, where string, typ reflect.Type, schema map[string]any) {
	t.Helper()
	types := schemaTypes(schema)
	nullable := slices.Contains(types, "null")
	if typ.Kind() == reflect.Pointer {
		if !nullable {
			t.Errorf("%s: a pointer, but the schema does not allow null", where)
		}
		typ = typ.Elem()
	} else if nullable {
		t.Errorf("%s: the schema allows null, but %s is not a pointer", where, typ)
	}
	if c, ok := schema["const"]; ok {
		if c != true || typ.Kind() != reflect.Bool {
			t.Errorf("%s: const %v for %s", where, c, typ)
		}
		return
	}
	if e, ok := schema["enum"]; ok {
		if typ.Kind() != reflect.String {
			t.Errorf("%s: enum %v for %s", where, e, typ)
		}
		return
	}
	want := map[reflect.Kind]string{
		reflect.String: "string", reflect.Bool: "boolean", reflect.Int: "integer", reflect.Int64: "integer",
		reflect.Slice: "array", reflect.Struct: "object",
	}[typ.Kind()]
	if want == "" || !slices.Contains(types, want) {
		t.Errorf("%s: %s against schema type %v", where, typ, types)
		return
	}
	switch typ.Kind() {
	case reflect.Slice:
		items, _ := schema["items"].(map[string]any)
		matchType(t, where+"[]", typ.Elem(), items)
	case reflect.Struct:
		matchObject(t, where, typ, schema)
	}
}

// matchObject holds a struct to an object schema, field by field.
func matchObject(t *testing.T, where string, typ reflect.Type, schema map[string]any) {
	t.Helper()
	if schema["additionalProperties"] != false {
		t.Errorf("%s: the schema allows additional properties", where)
	}
	props, _ := schema["properties"].(map[string]any)
	var required []string
	for _, r := range schema["required"].([]any) {
		required = append(required, r.(string))
	}
	seen := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		seen[name] = true
		ps, ok := props[name].(map[string]any)
		if !ok {
			t.Errorf("%s.%s: not in the schema", where, name)
			continue
		}
		if omit := strings.Contains(opts, "omitempty"); omit == slices.Contains(required, name) {
			t.Errorf("%s.%s: omitempty %v, but required %v", where, name, omit, !omit)
		}
		matchType(t, where+"."+name, f.Type, ps)
	}
	for name := range props {
		if !seen[name] {
			t.Errorf("%s.%s: in the schema, not in %s", where, name, typ)
		}
	}
}

func schemaTypes(schema map[string]any) []string {
	switch v := schema["type"].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func TestValidateResult(t *testing.T) {
	good := `{"path":"/root/notes/a.md","bytes":3,"created":true,"revision":1}`
	if err := ValidateResult(NotesWriteFile, []byte(good)); err != nil {
		t.Errorf("a write's details: %v", err)
	}
	for _, bad := range []string{
		`{"path":"/root/notes/a.md","bytes":3,"created":true}`,
		`{"path":"/root/notes/a.md","bytes":3,"created":true,"revision":1,"extra":0}`,
		`{"path":"/root/notes/a.md","bytes":-1,"created":true,"revision":1}`,
	} {
		if err := ValidateResult(NotesWriteFile, []byte(bad)); err == nil {
			t.Errorf("%s passed the result schema", bad)
		}
	}
	if err := ValidateResult("nope", []byte(good)); err == nil {
		t.Error("an unknown tool's result passed")
	}
}
