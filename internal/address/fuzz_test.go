package address

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseNotePath checks that note path resolution never panics, that
// a resolved path stays in a valid agent's notes root, and that the full
// form of every accepted path is accepted too and resolves back to the
// same note from any agent.
func FuzzParseNotePath(f *testing.F) {
	for _, s := range []string{"checkpoint.md", "a/b/c.md", "/root/notes/x", "/root/agent_x/notes/c.md",
		"../x", "a/./b", "a//b", "/x", "a/", "\x00", "/root/a/notes/b/notes/c", "/root/Agent/notes/x", "😀/é.md"} {
		f.Add("/root", s)
		f.Add("/root/reviewer", s)
	}
	// Paths at the length limit, relative and absolute, from a deep agent.
	deepAgent := "/root" + strings.Repeat("/abcdefghijklmnopqrstuvwxyz", MaxSegments-1)
	f.Add("/root/reviewer", strings.Repeat("a", MaxPathChars))
	f.Add(deepAgent, strings.Repeat("é", MaxPathChars-3)+".md")
	f.Add("/root", deepAgent+"/notes/"+strings.Repeat("x", MaxPathChars))
	f.Add("/root", "/root/notes/"+strings.Repeat("y", MaxPathChars-len("/root/notes/")))
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
		// Responses carry the full form, and a client passes it back
		// unchanged (API §5): from any agent it names the same note.
		for _, from := range []string{current, "/root/other", Root} {
			back, err := ParseNotePath(from, np.Full())
			if err != nil || back != np {
				t.Fatalf("ParseNotePath(%q, %q) = %+v; its full path %q from %s gives %+v, %v",
					current, p, np, np.Full(), from, back, err)
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
