package events

import "testing"

// TestCatalogEntriesHaveRules: every payload of the catalog says whose
// stream it belongs in and what its fields must be (CheckPayload).
func TestCatalogEntriesHaveRules(t *testing.T) {
	for _, e := range Catalog {
		if _, ok := e.New().(ruled); !ok {
			t.Errorf("%s: its payload has no owner and rules methods", e.Type)
		}
	}
}
