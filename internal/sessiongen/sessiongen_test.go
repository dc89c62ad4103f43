package sessiongen

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkTree checks that a session's entries form a tree (unique ids,
// known earlier parents) and that its branch is a root-to-leaf path.
func checkTree(t *testing.T, name string, s Session) {
	t.Helper()
	parents := map[string]string{}
	for i, e := range s.Entries {
		var h struct {
			Type, ID, Timestamp string
			ParentID            *string
		}
		if err := json.Unmarshal(e, &h); err != nil {
			t.Fatalf("%s: entries[%d]: %v", name, i, err)
		}
		if h.Type == "" || h.ID == "" || h.Timestamp == "" {
			t.Fatalf("%s: entries[%d] lacks type, id or timestamp: %s", name, i, e)
		}
		if _, dup := parents[h.ID]; dup {
			t.Fatalf("%s: duplicate id %s", name, h.ID)
		}
		p := ""
		if h.ParentID != nil {
			p = *h.ParentID
			if _, ok := parents[p]; !ok {
				t.Fatalf("%s: %s has unknown parent %s", name, h.ID, p)
			}
		}
		parents[h.ID] = p
	}
	if len(s.Branch) == 0 {
		t.Fatalf("%s: empty branch", name)
	}
	if parents[s.Branch[0]] != "" {
		t.Fatalf("%s: branch does not start at a root", name)
	}
	for i := 1; i < len(s.Branch); i++ {
		if parents[s.Branch[i]] != s.Branch[i-1] {
			t.Fatalf("%s: branch[%d] %s is not a child of %s", name, i, s.Branch[i], s.Branch[i-1])
		}
	}
	for mark, id := range s.Marks {
		if _, ok := parents[id]; !ok && name != "BranchA" { // A shares the tree's marks
			t.Fatalf("%s: mark %s names unknown entry %q", name, mark, id)
		}
	}
}

func TestScenarios(t *testing.T) {
	a, b := BranchSwitch()
	for name, s := range map[string]Session{
		"Tools": Tools(), "Images": Images(), "Compactions": Compactions(), "BranchA": a, "BranchB": b,
		"Controls": Controls(), "EmptyMessages": EmptyMessages(), "Unicode": Unicode(), "Large": Large(1 << 20),
	} {
		checkTree(t, name, s)
		if name != "BranchA" && s.Branch[len(s.Branch)-1] != lastID(t, s) {
			t.Errorf("%s: branch does not end at the last entry", name)
		}
	}
	if a.Branch[1] != b.Branch[1] || a.Branch[2] == b.Branch[2] {
		t.Errorf("branches A %v and B %v do not share exactly a two-entry prefix", a.Branch, b.Branch)
	}
	if !strings.Contains(string(Tools().Entries[0]), `"role":"user"`) {
		t.Errorf("first Tools entry is not a user message: %s", Tools().Entries[0])
	}
}

func lastID(t *testing.T, s Session) string {
	var h struct{ ID string }
	if err := json.Unmarshal(s.Entries[len(s.Entries)-1], &h); err != nil {
		t.Fatal(err)
	}
	return h.ID
}

func TestDeterministic(t *testing.T) {
	var x, y bytes.Buffer
	if err := Tools().WriteJSONL(&x); err != nil {
		t.Fatal(err)
	}
	if err := Tools().WriteJSONL(&y); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.Bytes(), y.Bytes()) {
		t.Fatal("Tools() differs between calls")
	}
	l1, l2 := Large(256<<10), Large(256<<10)
	if !slices.EqualFunc(l1.Entries, l2.Entries, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Fatal("Large differs between calls")
	}
}

func TestReadRoundTrip(t *testing.T) {
	_, tree := BranchSwitch()
	var buf bytes.Buffer
	if err := tree.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, append([]byte("\n"), buf.Bytes()...), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Header, tree.Header) || len(got.Entries) != len(tree.Entries) || !slices.Equal(got.Branch, tree.Branch) {
		t.Fatalf("read back: header %s, %d entries, branch %v; want %d entries, branch %v",
			got.Header, len(got.Entries), got.Branch, len(tree.Entries), tree.Branch)
	}
	aPath, err := Path(got.Entries, tree.Marks["a_only"])
	if err != nil {
		t.Fatal(err)
	}
	a, _ := BranchSwitch()
	if !slices.Equal(aPath, a.Branch) {
		t.Fatalf("Path to A's leaf = %v, want %v", aPath, a.Branch)
	}
	for _, bad := range []string{
		`{"type":"message","id":"a","parentId":"zz"}`,
		`{"type":"message","id":"a","parentId":null}` + "\n" + `{"type":"message","id":"a","parentId":null}`,
		`[1]`,
		`{"type":"message","parentId":null}`,
	} {
		if _, err := Read(strings.NewReader(bad)); err == nil {
			t.Errorf("Read(%q) succeeded", bad)
		}
	}
}

func TestBatches(t *testing.T) {
	s := Large(2 << 20)
	batches := Batches(s.Entries, 256<<10)
	n := 0
	for _, b := range batches {
		size := 0
		for _, e := range b {
			size += len(e)
		}
		if size > 256<<10 && len(b) > 1 {
			t.Fatalf("batch of %d bytes", size)
		}
		n += len(b)
	}
	if n != len(s.Entries) || len(batches) < 8 {
		t.Fatalf("%d batches of %d entries, want all %d entries in ≥8 batches", len(batches), n, len(s.Entries))
	}
}

func TestLargeSizeAndNeedles(t *testing.T) {
	start := time.Now()
	const size = 8 << 20
	s := Large(size)
	elapsed := time.Since(start)
	if got := s.Bytes(); got < size || got > size+size/8 {
		t.Fatalf("Large(%d) has %d bytes", size, got)
	}
	rare := 0
	for _, e := range s.Entries {
		if bytes.Contains(e, []byte(LargeRareNeedle)) {
			rare++
		}
	}
	if rare != 1 {
		t.Fatalf("rare needle in %d entries, want 1", rare)
	}
	if s.Marks["rare"] == "" || s.Marks["big"] == "" {
		t.Fatalf("marks %v", s.Marks)
	}
	t.Logf("Large(%d): %d entries in %v", size, len(s.Entries), elapsed)
}
