package tools

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestWrites: exactly the notes writes and new_context change state; the
// offline call verb and the read-audit check rely on it.
func TestWrites(t *testing.T) {
	want := map[string]bool{NotesAppendToFile: true, NotesWriteFile: true, NewContext: true}
	for _, s := range Specs() {
		if Writes(s.Name) != want[s.Name] {
			t.Errorf("Writes(%q) = %v, want %v", s.Name, Writes(s.Name), want[s.Name])
		}
	}
	if Writes("no_such_tool") {
		t.Error("an unknown tool writes")
	}
}

// countArg is a number argument with its own decoding, as memory's are.
type countArg int64

func (c *countArg) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*c = countArg(n)
	return nil
}

// TestDecode: one parse fills every kind of field the arguments have, and
// leaves absent and null ones unset.
func TestDecode(t *testing.T) {
	var a struct {
		AgentName   *string   `json:"agent_name"`
		WindowID    string    `json:"window_id"`
		ItemID      string    `json:"item_id"`
		OffsetChars *countArg `json:"offset_chars"`
		LimitChars  *countArg `json:"limit_chars"`
	}
	err := Decode(HistoryReadItem, json.RawMessage(`{"agent_name":"reviewer","window_id":"w2","item_id":"e1","offset_chars":12,"limit_chars":null}`), &a)
	if err != nil {
		t.Fatal(err)
	}
	if a.AgentName == nil || *a.AgentName != "reviewer" || a.WindowID != "w2" || a.ItemID != "e1" ||
		a.OffsetChars == nil || *a.OffsetChars != 12 || a.LimitChars != nil {
		t.Errorf("decoded %+v", a)
	}
	var b struct {
		Limit       *countArg `json:"limit"`
		RecentFirst *bool     `json:"recent_first"`
	}
	if err := Decode(HistoryListWindows, nil, &b); err != nil || b.Limit != nil || b.RecentFirst != nil {
		t.Errorf("no arguments: %+v, %v", b, err)
	}
	if err := Decode(HistoryListWindows, json.RawMessage(`{"recent_first":true,"limit":2}`), &b); err != nil ||
		b.RecentFirst == nil || !*b.RecentFirst || b.Limit == nil || *b.Limit != 2 {
		t.Errorf("recent_first and limit: %+v, %v", b, err)
	}
}

// TestDecodeErrsAsValidate: Decode refuses exactly what Validate refuses,
// with the same error.
func TestDecodeErrsAsValidate(t *testing.T) {
	var a struct {
		Path string `json:"path"`
		Text string `json:"text"`
	}
	for _, args := range []string{`{}`, `{"path":""}`, `{"path":"a","text":1}`, `{"path":"a","text":"b","c":0}`, `[]`, `{`, `{"path":"a","text":"b"}`} {
		verr, derr := Validate(NotesWriteFile, json.RawMessage(args)), Decode(NotesWriteFile, json.RawMessage(args), &a)
		if fmt.Sprint(verr) != fmt.Sprint(derr) {
			t.Errorf("%s: Validate %v, Decode %v", args, verr, derr)
		}
	}
}
