package events

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestCatalogDocumented fails when an event type of the catalog is missing
// from docs/events.md, or when its row there does not name every JSON
// field of its payload (the task_id and agent every lifecycle payload
// embeds are described once, above the table).
func TestCatalogDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			if typ, _, ok := strings.Cut(rest, "`"); ok {
				rows[typ] = line
			}
		}
	}
	for _, e := range Catalog {
		if !strings.Contains(string(doc), "`"+e.Type+"`") {
			t.Errorf("docs/events.md does not document %s", e.Type)
			continue
		}
		row, ok := rows[e.Type]
		if !ok {
			t.Errorf("docs/events.md has no table row for %s", e.Type)
			continue
		}
		for _, f := range payloadFields(reflect.TypeOf(e.New()).Elem()) {
			if !strings.Contains(row, "`"+f+"`") {
				t.Errorf("docs/events.md: the row of %s does not name its payload field %s", e.Type, f)
			}
		}
	}
	for typ := range rows {
		if _, ok := Lookup(typ); !ok && strings.Contains(typ, ".") {
			t.Errorf("docs/events.md documents %s, which is not in the catalog", typ)
		}
	}
}

// payloadFields returns the JSON names of a payload struct's own fields
// (not those of an embedded AgentRef).
func payloadFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type == reflect.TypeOf(AgentRef{}) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
	}
	return out
}
