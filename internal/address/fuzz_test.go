package address

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseNotePath checks that note path resolution never panics, that
// a resolved path stays in a valid agent's notes root, and that its full
// form resolves back to the same note from any agent.
func FuzzParseNotePath(f *testing.F) {
	for _, s := range []string{"checkpoint.md", "a/b/c.md", "/root/notes/x", "/root/agent_x/notes/c.md",
		"../x", "a/./b", "a//b", "/x", "a/", "\x00", "/root/a/notes/b/notes/c", "/root/Agent/notes/x", "😀/é.md"} {
		f.Add("/root", s)
		f.Add("/root/reviewer", s)
	}
	f.Fuzz(func(t *testing.T, current, p string) {
		if _, err := ParseAgent(current); err != nil {
			return
		}
		np, err := ParseNotePath(current, p)
		if err != nil {
			return
		}
		if _, err := ParseAgent(np.Agent); err != nil {
			t.Fatalf("ParseNotePath(%q, %q) gave invalid agent %q", current, p, np.Agent)
		}
		if np.Path == "" || strings.HasPrefix(np.Path, "/") || strings.HasSuffix(np.Path, "/") || !utf8.ValidString(np.Path) {
			t.Fatalf("ParseNotePath(%q, %q) gave bad path %q", current, p, np.Path)
		}
		for _, seg := range strings.Split(np.Path, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("ParseNotePath(%q, %q) kept segment %q", current, p, seg)
			}
		}
		if len(np.Full()) <= MaxPathChars*4 { // a full form over the limit is refused, not mis-resolved
			back, err := ParseNotePath("/root/other", np.Full())
			if err == nil && back != np {
				t.Fatalf("full path %q resolves to %+v, want %+v", np.Full(), back, np)
			}
		}
	})
}

// FuzzResolve checks agent name resolution never panics and only returns
// valid addresses.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"", "checker", "/root", "/root/a/b", "/root/root", "/morpheus", "a/../b", "A", "notes"} {
		f.Add("/root/reviewer", s)
	}
	f.Fuzz(func(t *testing.T, current, name string) {
		if _, err := ParseAgent(current); err != nil {
			return
		}
		got, err := Resolve(current, name)
		if err != nil {
			return
		}
		if _, err := ParseAgent(got); err != nil {
			t.Fatalf("Resolve(%q, %q) = %q, invalid: %v", current, name, got, err)
		}
	})
}

// FuzzParsePrefix checks prefix resolution never panics and names a valid
// agent.
func FuzzParsePrefix(f *testing.F) {
	for _, s := range []string{"", "check", "a/", "/root/agent_x/notes/chk", "/root/agent_x/notes", "/root/x/no", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, prefix string) {
		np, err := ParsePrefix("/root", prefix)
		if err != nil {
			return
		}
		if _, err := ParseAgent(np.Agent); err != nil {
			t.Fatalf("ParsePrefix(%q) gave invalid agent %q", prefix, np.Agent)
		}
	})
}
