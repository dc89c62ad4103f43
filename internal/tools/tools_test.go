package tools

import "testing"

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
