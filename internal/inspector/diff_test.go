package inspector

import (
	"strings"
	"testing"
)

func TestLineDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"", "", ""},
		{"a\nb\n", "a\nb\n", "=a =b"},
		{"a\nb\nc\n", "a\nc\n", "=a -b =c"},
		{"a\nc\n", "a\nb\nc\n", "=a +b =c"},
		{"x\n", "y\n", "-x +y"},
		{"a\nb\nc\nd\n", "b\nx\nd\ne\n", "-a =b -c +x =d +e"},
	} {
		var got []string
		for _, l := range lineDiff(c.a, c.b) {
			got = append(got, l.Op+l.Text)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("diff %q → %q: %q, want %q", c.a, c.b, g, c.want)
		}
	}
}
