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

// TestCatalogPayloadsNameTheirType: each payload of the catalog names its
// own entry's type, so that NewPending's type is the catalog's.
func TestCatalogPayloadsNameTheirType(t *testing.T) {
	for _, e := range Catalog {
		p, ok := e.New().(Payload)
		if !ok {
			t.Errorf("%s: its payload is not a Payload", e.Type)
			continue
		}
		if got := p.EventType(); got != e.Type {
			t.Errorf("%s: its payload says %s", e.Type, got)
		}
	}
}
