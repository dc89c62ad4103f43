package events

import (
	"os"
	"strings"
	"testing"
)

// TestCatalogDocumented fails when an event type of the catalog is missing
// from docs/events.md.
func TestCatalogDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Catalog {
		if !strings.Contains(string(doc), "`"+e.Type+"`") {
			t.Errorf("docs/events.md does not document %s", e.Type)
		}
	}
}
