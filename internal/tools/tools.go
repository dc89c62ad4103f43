// Package tools defines memoryd's model-facing tools. Their names,
// descriptions, execution modes, argument schemas and result schemas sit
// in one embedded file, specs.json, the single source for the server and
// its clients; results.go holds the Go type of each result's details.
package tools

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Tool names.
const (
	HistoryListWindows     = "history_list_windows"
	HistoryListItems       = "history_list_items"
	HistoryReadItem        = "history_read_item"
	HistorySearchContents  = "history_search_contents"
	NotesListFilesByPrefix = "notes_list_files_by_prefix"
	NotesReadFile          = "notes_read_file"
	NotesSearchContents    = "notes_search_contents"
	NotesAppendToFile      = "notes_append_to_file"
	NotesWriteFile         = "notes_write_file"
	GetContextRemaining    = "get_context_remaining"
	NewContext             = "new_context"
)

//go:embed specs.json
var specsJSON []byte

// Spec describes one tool as the model is shown it.
type Spec struct {
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	ExecutionMode string          `json:"execution_mode"`
	Parameters    json.RawMessage `json:"parameters"`
	// Result is the JSON Schema of the details of the tool's result.
	Result json.RawMessage `json:"result"`
}

var specs []Spec

func init() {
	if err := json.Unmarshal(specsJSON, &specs); err != nil {
		panic("tools: specs.json: " + err.Error())
	}
}

// compiledSchemas are the tools' argument and result schemas, compiled.
type compiledSchemas struct {
	args, results map[string]*jsonschema.Schema
}

// schemas compiles the schemas on first use, not at start: the verbs
// that never validate (a hook, memoryd mcp, version) start without it.
var schemas = sync.OnceValue(func() compiledSchemas {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	out := compiledSchemas{args: map[string]*jsonschema.Schema{}, results: map[string]*jsonschema.Schema{}}
	for _, s := range specs {
		out.args[s.Name] = compile(c, s.Name, "", s.Parameters)
		out.results[s.Name] = compile(c, s.Name, ".result", s.Result)
	}
	return out
})

// Prepare compiles the schemas now, so that the first call does not wait
// for it. A service calls it as it starts.
func Prepare() { schemas() }

// compile compiles one schema of tool; a schema that does not compile is
// a defect of specs.json.
func compile(c *jsonschema.Compiler, tool, suffix string, schema json.RawMessage) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		panic("tools: schema of " + tool + suffix + ": " + err.Error())
	}
	url := "memoryd:///tools/" + tool + suffix + ".json"
	if err := c.AddResource(url, doc); err != nil {
		panic("tools: schema of " + tool + suffix + ": " + err.Error())
	}
	sch, err := c.Compile(url)
	if err != nil {
		panic("tools: schema of " + tool + suffix + ": " + err.Error())
	}
	return sch
}

// Specs returns the tool specs in their fixed order.
func Specs() []Spec { return slices.Clone(specs) }

// CodexName is the name the design gives a tool in Codex, whose tools
// are namespaced: history.list_windows, notes.write_file; the two that
// belong to no namespace keep their names.
func CodexName(name string) string {
	for _, ns := range []string{"history", "notes"} {
		if rest, ok := strings.CutPrefix(name, ns+"_"); ok {
			return ns + "." + rest
		}
	}
	return name
}

// Known reports whether name is one of the tools.
func Known(name string) bool {
	return slices.ContainsFunc(specs, func(s Spec) bool { return s.Name == name })
}

// Writes reports whether the tool appends events, as the notes writes and
// new_context do. The other tools only read.
func Writes(name string) bool {
	switch name {
	case NotesAppendToFile, NotesWriteFile, NewContext:
		return true
	}
	return false
}

// ArgumentError is a call's arguments failing the tool's schema. Its
// message names the tool and the field, in one sentence a model can act on.
type ArgumentError struct {
	Tool    string
	Field   string
	Message string
}

func (e *ArgumentError) Error() string { return e.Message }

// Validate checks args, a JSON object or empty for none, against the
// schema of tool. It returns an *ArgumentError for bad arguments.
func Validate(tool string, args json.RawMessage) error {
	_, err := parse(tool, args)
	return err
}

// Decode parses args once, checks them against the schema of tool and
// stores them in the struct v points to, by its fields' json names. It
// returns an *ArgumentError for bad arguments, the same as Validate.
func Decode(tool string, args json.RawMessage, v any) error {
	doc, err := parse(tool, args)
	if err != nil {
		return err
	}
	if err := fill(reflect.ValueOf(v).Elem(), doc.(map[string]any)); err != nil {
		return &ArgumentError{Tool: tool, Message: tool + ": arguments do not match the schema"}
	}
	return nil
}

// parse decodes args and validates them against the schema of tool.
func parse(tool string, args json.RawMessage) (any, error) {
	sch, ok := schemas().args[tool]
	if !ok {
		return nil, fmt.Errorf("tools: unknown tool %q", tool)
	}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return nil, &ArgumentError{Tool: tool, Message: tool + ": arguments are not valid JSON"}
	}
	err = sch.Validate(doc)
	if err == nil {
		return doc, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, &ArgumentError{Tool: tool, Message: tool + ": arguments do not match the schema"}
	}
	return nil, describe(tool, leaf(ve))
}

// fill stores the validated object doc in the struct dst. A value the
// schema let through fits its field, but for a number a field's own
// UnmarshalJSON refuses.
func fill(dst reflect.Value, doc map[string]any) error {
	t := dst.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		v, ok := doc[name]
		if !ok || v == nil || name == "" || name == "-" {
			continue
		}
		f := dst.Field(i)
		if f.Kind() == reflect.Pointer {
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		}
		if err := set(f, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// set stores one decoded JSON value in f.
func set(f reflect.Value, v any) error {
	if f.Addr().Type().Implements(unmarshalerType) {
		var raw []byte
		if n, ok := v.(json.Number); ok {
			raw = []byte(n)
		} else {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			raw = b
		}
		return f.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw)
	}
	switch x := v.(type) {
	case string:
		if f.Kind() == reflect.String {
			f.SetString(x)
			return nil
		}
	case bool:
		if f.Kind() == reflect.Bool {
			f.SetBool(x)
			return nil
		}
	}
	// Anything else, such as numbers into plain integers, arrays and
	// objects, takes the long way.
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, f.Addr().Interface())
}

// ValidateResult checks details, the JSON of a result's details, against
// the result schema of tool.
func ValidateResult(tool string, details []byte) error {
	sch, ok := schemas().results[tool]
	if !ok {
		return fmt.Errorf("tools: unknown tool %q", tool)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(details))
	if err != nil {
		return fmt.Errorf("tools: %s: details are not JSON: %w", tool, err)
	}
	return sch.Validate(doc)
}

// leaf returns the first innermost cause of a validation error.
func leaf(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve
}

var printer = message.NewPrinter(language.English)

func describe(tool string, ve *jsonschema.ValidationError) *ArgumentError {
	field := strings.Join(ve.InstanceLocation, ".")
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		names := slices.Sorted(slices.Values(k.Properties))
		return &ArgumentError{Tool: tool, Field: names[0],
			Message: fmt.Sprintf("%s does not take the field %q; use only the fields of its schema", tool, names[0])}
	case *kind.Required:
		return &ArgumentError{Tool: tool, Field: k.Missing[0],
			Message: fmt.Sprintf("%s requires %s", tool, k.Missing[0])}
	case *kind.Type:
		if field == "" {
			return &ArgumentError{Tool: tool, Message: fmt.Sprintf("%s arguments must be a JSON object", tool)}
		}
		return &ArgumentError{Tool: tool, Field: field,
			Message: fmt.Sprintf("%s: %s must be %s, not %s", tool, field, strings.Join(k.Want, " or "), k.Got)}
	case *kind.Minimum:
		return &ArgumentError{Tool: tool, Field: field,
			Message: fmt.Sprintf("%s: %s must be at least %s", tool, field, k.Want.RatString())}
	case *kind.MinLength:
		return &ArgumentError{Tool: tool, Field: field,
			Message: fmt.Sprintf("%s: %s must not be empty", tool, field)}
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			if w != nil {
				want = append(want, fmt.Sprint(w))
			}
		}
		return &ArgumentError{Tool: tool, Field: field,
			Message: fmt.Sprintf("%s: %s must be one of %s", tool, field, strings.Join(want, ", "))}
	}
	if field == "" {
		return &ArgumentError{Tool: tool, Message: fmt.Sprintf("%s arguments: %s", tool, ve.ErrorKind.LocalizedString(printer))}
	}
	return &ArgumentError{Tool: tool, Field: field,
		Message: fmt.Sprintf("%s: %s: %s", tool, field, ve.ErrorKind.LocalizedString(printer))}
}
