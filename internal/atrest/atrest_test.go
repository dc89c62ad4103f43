package atrest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func testSealer(t *testing.T, fill byte) *Sealer {
	t.Helper()
	s, err := New(bytes.Repeat([]byte{fill}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseKey(t *testing.T) {
	if _, err := ParseKey(" " + strings.Repeat("ab", 32) + "\n"); err != nil {
		t.Fatalf("a 64-digit hex key: %v", err)
	}
	for _, bad := range []string{"", "abc", strings.Repeat("ab", 31), strings.Repeat("zz", 32), strings.Repeat("ab", 33)} {
		if _, err := ParseKey(bad); !errors.Is(err, ErrKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrKey", bad, err)
		}
	}
}

func TestSealOpen(t *testing.T) {
	s := testSealer(t, 1)
	for _, plain := range [][]byte{{}, []byte("x"), []byte("the secret of the note\x00\xff"), bytes.Repeat([]byte("abc"), 10000)} {
		sealed := s.Seal("t.c", plain)
		if len(sealed) != len(plain)+Overhead {
			t.Errorf("sealed %d bytes into %d, want +%d", len(plain), len(sealed), Overhead)
		}
		if len(plain) > 4 && bytes.Contains(sealed, plain) {
			t.Errorf("the sealed bytes hold the plain text")
		}
		if again := s.Seal("t.c", plain); !bytes.Equal(again, sealed) {
			t.Errorf("sealing is not deterministic")
		}
		if other := s.Seal("t.d", plain); bytes.Equal(other, sealed) {
			t.Errorf("two places seal a value alike")
		}
		got, err := s.Open("t.c", sealed)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("Open = %q, %v; want %q", got, err, plain)
		}
		if _, err := s.Open("t.d", sealed); !errors.Is(err, ErrOpen) {
			t.Errorf("a value moved to another place opened: %v", err)
		}
		if _, err := testSealer(t, 2).Open("t.c", sealed); !errors.Is(err, ErrOpen) {
			t.Errorf("another key opened a value: %v", err)
		}
		damaged := bytes.Clone(sealed)
		damaged[len(damaged)-1] ^= 1
		if _, err := s.Open("t.c", damaged); !errors.Is(err, ErrOpen) {
			t.Errorf("a damaged value opened: %v", err)
		}
		str := s.SealString("t.c", plain)
		if got, err := s.OpenString("t.c", str); err != nil || !bytes.Equal(got, plain) {
			t.Errorf("OpenString = %q, %v", got, err)
		}
	}
	if _, err := s.Open("t.c", []byte("short")); !errors.Is(err, ErrOpen) {
		t.Errorf("a short value opened: %v", err)
	}
	if _, err := s.OpenString("t.c", "plain text"); !errors.Is(err, ErrOpen) {
		t.Errorf("a plain string opened: %v", err)
	}
}

func TestSealJSON(t *testing.T) {
	s := testSealer(t, 3)
	cases := []struct {
		data string
		kept map[string]any // what json_extract still reads
		same bool           // stored unchanged
	}{
		{data: `{"erased_by":42}`, same: true},
		{data: `{}`, same: true},
		{data: `{"task_id":"01J","agent":"/root","path":"/root/notes/a.md","text":"secret words","call_id":"c1"}`, kept: map[string]any{"path": "/root/notes/a.md"}},
		{data: `{"agent":"/root","keep":3,"length":7,"entries":["e1","e2"]}`, kept: map[string]any{"keep": 3.0, "length": 7.0}},
		{data: `{"task_id":"t","budget":{"context_window":null,"notes_max_file_bytes":100},"session_file":"/home/u/s.jsonl"}`, kept: map[string]any{"budget": map[string]any{"context_window": nil, "notes_max_file_bytes": 100.0}}},
		{data: `{"text":"a \"~sealed\":\"x\"} inside"}`},
	}
	for _, c := range cases {
		sealed, err := s.SealJSON("events.data", []byte(c.data))
		if err != nil {
			t.Fatalf("SealJSON(%s): %v", c.data, err)
		}
		if c.same != (string(sealed) == c.data) {
			t.Errorf("SealJSON(%s) = %s", c.data, sealed)
		}
		var got map[string]any
		if err := json.Unmarshal(sealed, &got); err != nil {
			t.Fatalf("SealJSON(%s) is not JSON: %s", c.data, sealed)
		}
		for k, v := range c.kept {
			if b1, _ := json.Marshal(got[k]); string(b1) != mustJSON(t, v) {
				t.Errorf("SealJSON(%s): %s = %s, want %s", c.data, k, b1, mustJSON(t, v))
			}
		}
		if !c.same && (strings.Contains(string(sealed), "secret") || strings.Contains(string(sealed), "/home/u")) {
			t.Errorf("SealJSON(%s) shows a string: %s", c.data, sealed)
		}
		opened, err := s.OpenJSON("events.data", sealed)
		if err != nil || string(opened) != c.data {
			t.Errorf("OpenJSON(SealJSON(%s)) = %s, %v", c.data, opened, err)
		}
	}
	for _, bad := range []string{`[1,2]`, `"x"`, `{`, `null`} {
		if _, err := s.SealJSON("events.data", []byte(bad)); err == nil {
			t.Errorf("SealJSON(%s) succeeded", bad)
		}
	}
	if _, err := s.OpenJSON("events.data", []byte(`{"~sealed":"AAAA"}`)); !errors.Is(err, ErrOpen) {
		t.Errorf("a forged envelope opened: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTrigramHashKeyed(t *testing.T) {
	a, b := testSealer(t, 4), testSealer(t, 5)
	differ := 0
	for i := range 256 {
		if a.TrigramHash(byte(i), 'b', 'c') != b.TrigramHash(byte(i), 'b', 'c') {
			differ++
		}
	}
	if differ < 250 {
		t.Errorf("two keys hash %d of 256 trigrams alike", 256-differ)
	}
}

func BenchmarkSeal(b *testing.B) {
	s, _ := New(make([]byte, KeySize))
	plain := bytes.Repeat([]byte("history text "), 5000)
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		s.Seal("history_chunks.data", plain)
	}
}

func BenchmarkOpen(b *testing.B) {
	s, _ := New(make([]byte, KeySize))
	sealed := s.Seal("history_chunks.data", bytes.Repeat([]byte("history text "), 5000))
	b.SetBytes(int64(len(sealed)))
	for b.Loop() {
		if _, err := s.Open("history_chunks.data", sealed); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzSealJSON: any JSON object opens to itself, byte for byte, and what
// SealJSON keeps readable is valid JSON whose members it keeps are the
// payload's own; anything else is refused, not sealed.
func FuzzSealJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"erased_by":1}`, `{"path":"a.md","text":"x"}`, `{"a":{"b":[1,"s"]},"keep":2}`,
		`{"text":"\"~sealed\":\"x\"}"}`, `{"budget":{"x":null},"p":"\u00e9"}`, `{"a":1,"a":"dup"}`, ` { "sp" : "x" } `} {
		f.Add(s)
	}
	s, err := New(make([]byte, KeySize))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data string) {
		sealed, err := s.SealJSON("events.data", []byte(data))
		if err != nil {
			return
		}
		var kept map[string]json.RawMessage
		if err := json.Unmarshal(sealed, &kept); err != nil {
			t.Fatalf("SealJSON(%q) = %q, not a JSON object: %v", data, sealed, err)
		}
		opened, err := s.OpenJSON("events.data", sealed)
		if err != nil || !bytes.Equal(opened, []byte(data)) {
			t.Fatalf("OpenJSON(SealJSON(%q)) = %q, %v", data, opened, err)
		}
		// What is kept beside the sealed payload is exactly its members
		// that hold no string, and path, as a decoder sees them.
		var orig map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &orig); err != nil {
			t.Fatalf("SealJSON took %q, which is not a JSON object", data)
		}
		if _, enveloped := kept["~sealed"]; !enveloped {
			for k, v := range orig {
				if k == "path" || holdsStringRef(v) {
					t.Fatalf("SealJSON(%q) kept it whole, but %s holds a string", data, k)
				}
			}
			return
		}
		for k, v := range orig {
			kv, ok := kept[k]
			if want := k == "path" || !holdsStringRef(v); want != ok || ok && !bytes.Equal(kv, v) {
				t.Fatalf("SealJSON(%q) = %q: member %s kept %v (%q), want %v", data, sealed, k, ok, kv, want)
			}
		}
		for k := range kept {
			if _, ok := orig[k]; !ok && k != "~sealed" {
				t.Fatalf("SealJSON(%q) = %q adds the member %s", data, sealed, k)
			}
		}
	})
}

// holdsStringRef is a decoder's answer to whether a JSON value holds a
// string, not counting member names: the reference for topLevel's scan.
func holdsStringRef(raw []byte) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return true
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

func BenchmarkSealJSON(b *testing.B) {
	s, _ := New(make([]byte, KeySize))
	entry := `{"type":"message","id":"e1","parentId":null,"message":{"role":"toolResult","content":[{"type":"text","text":"` + strings.Repeat("output line of a tool ", 400) + `"}]}}`
	data := []byte(`{"task_id":"01JTASK","agent":"/root","entry_id":"e1","entry":` + entry + `}`)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := s.SealJSON("events.data", data); err != nil {
			b.Fatal(err)
		}
	}
}
