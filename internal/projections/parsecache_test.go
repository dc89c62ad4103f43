package projections

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
)

// TestParseCacheClones checks that a cached decode gives every caller its
// own copy: mutating everything a result points to changes nothing the
// next caller gets. It fails when a reference field is added to the
// cached types without being cloned.
func TestParseCacheClones(t *testing.T) {
	// want is raw decoded without the cache.
	check := func(t *testing.T, raw string, decode func(string) (any, error), want any) {
		first, err := decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(first, want) {
			t.Fatalf("decode(%s) = %+v, want %+v", raw, first, want)
		}
		second, _ := decode(raw)
		v := reflect.ValueOf(&second).Elem().Elem()
		for i := range v.NumField() {
			f := v.Field(i)
			switch f.Kind() {
			case reflect.Pointer:
				if f.IsNil() {
					t.Fatalf("field %s is nil in the test value: give it a value", v.Type().Field(i).Name)
				}
				other := reflect.ValueOf(first).Field(i)
				if f.Pointer() == other.Pointer() {
					t.Fatalf("field %s is shared between two decodes", v.Type().Field(i).Name)
				}
			case reflect.Slice, reflect.Map, reflect.Interface:
				t.Fatalf("field %s (%s) is not cloned by the cache", v.Type().Field(i).Name, f.Kind())
			}
		}
	}
	t.Run("state", func(t *testing.T) {
		raw := `{"window_id":"w2","window_number":2,"manual":{"request_id":"r","window_id":"w2","phase":"awaiting"},"tokens_used":10,"context_window":100}`
		want, err := decodeState([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if want.Manual == nil || want.TokensUsed == nil || want.WindowID != "w2" {
			t.Fatalf("decodeState(%s) = %+v", raw, want)
		}
		check(t, raw, func(s string) (any, error) { return states.decode(s) }, want)
	})
	t.Run("budget", func(t *testing.T) {
		raw := `{"context_window":1000,"notes_max_file_bytes":5}`
		var want events.Budget
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		check(t, raw, func(s string) (any, error) { return budgets.decode(s) }, want)
	})
	t.Run("bound", func(t *testing.T) {
		for i := range parseCacheSize + 10 {
			if _, err := budgets.decode(`{"notes_max_file_bytes":` + strconv.Itoa(i) + `}`); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := budgets.decode(`{`); err == nil {
			t.Fatal("invalid JSON decoded")
		}
		budgets.mu.Lock()
		n := len(budgets.m)
		budgets.mu.Unlock()
		if n > parseCacheSize {
			t.Fatalf("cache holds %d entries, bound %d", n, parseCacheSize)
		}
	})
}
