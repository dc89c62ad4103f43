package zpack

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestPackUnpack(t *testing.T) {
	for _, s := range []string{"", "x", `{"type":"message"}`, strings.Repeat("hé llo wörld ", 10000)} {
		p := Pack([]byte(s))
		if !Packed(p) {
			t.Fatalf("Pack(%.20q) is not a frame", s)
		}
		if again := Pack([]byte(s)); !bytes.Equal(again, p) {
			t.Fatalf("Pack(%.20q) differs between calls", s)
		}
		got, err := Unpack(p)
		if err != nil || string(got) != s {
			t.Fatalf("Unpack(Pack(%.20q)) = %.20q, %v", s, got, err)
		}
		if plain, err := Unpack([]byte(s)); err != nil || string(plain) != s {
			t.Fatalf("Unpack of plain %.20q = %.20q, %v", s, plain, err)
		}
	}
	if len(Pack([]byte(strings.Repeat("abc", 10000)))) > 1000 {
		t.Fatal("a repeated text does not compress")
	}
	bad := append(append([]byte(nil), magic...), 1, 2, 3)
	if _, err := Unpack(bad); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Unpack of a broken frame: %v", err)
	}
}
