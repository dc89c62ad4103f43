package address

import (
	"errors"
	"strings"
	"testing"
)

// deep returns /root followed by n child segments s1..sn.
func deep(n int) string {
	var b strings.Builder
	b.WriteString(Root)
	for i := 1; i <= n; i++ {
		b.WriteString("/s")
		b.WriteByte(byte('a' + i%26))
	}
	return b.String()
}

// checkErr checks that err wraps ErrInvalid and mentions want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("succeeded, want an error mentioning %q", want)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error %q does not wrap ErrInvalid", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not mention %q", err, want)
	}
}

func TestParseAgent(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		err        string // "" for valid
	}{
		{"root", "/root", ""},
		{"child", "/root/reviewer", ""},
		{"grandchild", "/root/reviewer/checker", ""},
		{"automatic child", "/root/agent_0123456789ab", ""},
		{"digits and underscore", "/root/_1_/a2", ""},
		{"16 segments with root", deep(MaxSegments - 1), ""},
		{"17 segments", deep(MaxSegments), "more than 16 segments"},
		{"empty", "", "must be /root"},
		{"relative", "root", "must be /root"},
		{"relative child", "reviewer", "must be /root"},
		{"slash", "/", "must be /root"},
		{"other root", "/morpheus", "must be /root"},
		{"root prefix", "/rootx", "must be /root"},
		{"uppercase root", "/Root", "must be /root"},
		{"double slash before root", "//root", "must be /root"},
		{"trailing slash", "/root/", "empty segment"},
		{"trailing slash of a child", "/root/a/", "empty segment"},
		{"empty segment", "/root//a", "empty segment"},
		{"dot", "/root/.", `"."`},
		{"dot dot", "/root/..", `".."`},
		{"dot dot inside", "/root/a/../b", `".."`},
		{"uppercase", "/root/Agent", "[a-z0-9_]+"},
		{"hyphen", "/root/a-b", "[a-z0-9_]+"},
		{"space", "/root/a b", "[a-z0-9_]+"},
		{"non-ASCII", "/root/é", "[a-z0-9_]+"},
		{"NUL", "/root/a\x00", "[a-z0-9_]+"},
		{"invalid UTF-8", "/root/\xff", "[a-z0-9_]+"},
		{"root as child", "/root/root", "reserved"},
		{"root as grandchild", "/root/a/root", "reserved"},
		{"notes as child", "/root/notes", "reserved"},
		{"notes as grandchild", "/root/a/notes", "reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAgent(tc.addr)
			if tc.err != "" {
				checkErr(t, err, tc.err)
				return
			}
			if err != nil || got != tc.addr {
				t.Fatalf("ParseAgent(%q) = %q, %v; want it unchanged", tc.addr, got, err)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name, current, in, want, err string
	}{
		{"empty is the current agent", "/root/reviewer", "", "/root/reviewer", ""},
		{"relative under root", "/root", "reviewer", "/root/reviewer", ""},
		{"relative under a child (H22)", "/root/reviewer", "checker", "/root/reviewer/checker", ""},
		{"relative with several segments", "/root", "a/b", "/root/a/b", ""},
		{"absolute as given", "/root/reviewer", "/root/other", "/root/other", ""},
		{"absolute root", "/root/reviewer", "/root", "/root", ""},
		{"absolute deep", "/root", "/root/reviewer/checker", "/root/reviewer/checker", ""},
		{"relative to 16 segments", deep(MaxSegments - 2), "last", deep(MaxSegments-2) + "/last", ""},
		{"relative past 16 segments", deep(MaxSegments - 1), "one_more", "", "more than 16 segments"},
		{"relative dot dot", "/root/reviewer", "../x", "", `".."`},
		{"relative dot", "/root/reviewer", "./x", "", `"."`},
		{"relative uppercase", "/root", "Checker", "", "[a-z0-9_]+"},
		{"relative root", "/root", "root", "", "reserved"},
		{"relative trailing slash", "/root", "a/", "", "empty segment"},
		{"absolute uppercase", "/root", "/root/Agent", "", "[a-z0-9_]+"},
		{"absolute root child", "/root", "/root/root", "", "reserved"},
		{"absolute dot dot", "/root", "/root/a/../b", "", `".."`},
		{"morpheus", "/root", "/morpheus", "", "must be /root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.current, tc.in)
			if tc.err != "" {
				checkErr(t, err, tc.err)
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Resolve(%q, %q) = %q, %v; want %q", tc.current, tc.in, got, err, tc.want)
			}
		})
	}
}

func TestChild(t *testing.T) {
	for _, tc := range []struct {
		name, parent, child, want, err string
	}{
		{"under root", "/root", "reviewer", "/root/reviewer", ""},
		{"under a child", "/root/reviewer", "checker", "/root/reviewer/checker", ""},
		{"several segments", "/root", "a/b", "/root/a/b", ""},
		{"automatic name", "/root", "agent_0123456789ab", "/root/agent_0123456789ab", ""},
		{"at 16 segments", deep(MaxSegments - 2), "z", deep(MaxSegments-2) + "/z", ""},
		{"past 16 segments", deep(MaxSegments - 1), "z", "", "more than 16 segments"},
		{"empty", "/root", "", "", "relative name"},
		{"absolute", "/root", "/root/x", "", "relative name"},
		{"root", "/root", "root", "", "reserved"},
		{"notes", "/root", "notes", "", "reserved"},
		{"uppercase", "/root", "Reviewer", "", "[a-z0-9_]+"},
		{"dot dot", "/root/a", "..", "", `".."`},
		{"trailing slash", "/root", "a/", "", "empty segment"},
		{"bad parent", "/morpheus", "a", "", "must be /root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Child(tc.parent, tc.child)
			if tc.err != "" {
				checkErr(t, err, tc.err)
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Child(%q, %q) = %q, %v; want %q", tc.parent, tc.child, got, err, tc.want)
			}
		})
	}
}

func TestParseNotePath(t *testing.T) {
	const cur = "/root/agent_x"
	long := strings.Repeat("a", MaxPathChars-3) + ".md"
	for _, tc := range []struct {
		name, in string
		agent, p string // the result when valid
		err      string
	}{
		{name: "relative", in: "checkpoint.md", agent: cur, p: "checkpoint.md"},
		{name: "relative nested", in: "a/b/c.md", agent: cur, p: "a/b/c.md"},
		{name: "relative named notes", in: "notes/x.md", agent: cur, p: "notes/x.md"},
		{name: "unicode", in: "日本/メモ 😀.md", agent: cur, p: "日本/メモ 😀.md"},
		{name: "spaces and quotes", in: "a \"b\"\n.md", agent: cur, p: "a \"b\"\n.md"},
		{name: "dots inside names", in: "a..b/.hidden/x.", agent: cur, p: "a..b/.hidden/x."},
		{name: "own root absolute", in: "/root/agent_x/notes/c.md", agent: cur, p: "c.md"},
		{name: "root's notes", in: "/root/notes/c.md", agent: "/root", p: "c.md"},
		{name: "other agent's notes", in: "/root/reviewer/checker/notes/d/c.md", agent: "/root/reviewer/checker", p: "d/c.md"},
		{name: "first notes segment splits", in: "/root/a/notes/b/notes/c", agent: "/root/a", p: "b/notes/c"},
		{name: "512 chars", in: long, agent: cur, p: long},
		{name: "512 code points of 4 bytes", in: strings.Repeat("😀", MaxPathChars), agent: cur, p: strings.Repeat("😀", MaxPathChars)},
		{name: "deepest agent", in: deep(MaxSegments-1) + "/notes/x", agent: deep(MaxSegments - 1), p: "x"},
		// The limit counts the path below the notes root, so the full path
		// of a 512-char note is accepted too (it is what responses carry).
		{name: "512 chars below an absolute root", in: "/root/notes/" + long, agent: "/root", p: long},
		{name: "512 chars below a deep agent's root", in: deep(MaxSegments-1) + "/notes/" + long, agent: deep(MaxSegments - 1), p: long},

		{name: "empty", in: "", err: "empty"},
		{name: "../x", in: "../x", err: `".."`},
		{name: "a/./b", in: "a/./b", err: `"."`},
		{name: "a//b", in: "a//b", err: "empty segment"},
		{name: "trailing slash", in: "a/", err: "empty segment"},
		{name: "dot", in: ".", err: `"."`},
		{name: "dot dot", in: "..", err: `".."`},
		{name: "x/..", in: "x/..", err: `".."`},
		{name: "/x", in: "/x", err: "/root/.../notes/<path>"},
		{name: "slash", in: "/", err: "/root/.../notes/<path>"},
		{name: "agent without notes", in: "/root/agent_x/c.md", err: "/root/.../notes/<path>"},
		{name: "notes root without file", in: "/root/notes/", err: "names no file"},
		{name: "notes root without slash", in: "/root/notes", err: "/root/.../notes/<path>"},
		{name: "absolute dot dot", in: "/root/notes/../x", err: `".."`},
		{name: "absolute double slash", in: "/root/notes//x", err: "empty segment"},
		{name: "absolute trailing slash", in: "/root/notes/d/", err: "empty segment"},
		{name: "NUL", in: "a\x00b", err: "NUL"},
		{name: "absolute NUL", in: "/root/notes/a\x00", err: "NUL"},
		{name: "invalid UTF-8", in: "a\xffb", err: "UTF-8"},
		{name: "513 chars", in: long + "x", err: "513 characters"},
		{name: "513 code points", in: strings.Repeat("é", MaxPathChars+1), err: "513 characters"},
		{name: "513 chars below an absolute root", in: "/root/notes/" + strings.Repeat("a", MaxPathChars+1), err: "513 characters long below its notes root"},
		{name: "uppercase agent", in: "/root/Agent/notes/c.md", err: "[a-z0-9_]+"},
		{name: "root as child", in: "/root/root/notes/c.md", err: "reserved"},
		{name: "dot dot agent", in: "/root/a/../b/notes/c.md", err: `".."`},
		{name: "morpheus", in: "/morpheus", err: "/root/.../notes/<path>"},
		{name: "morpheus notes", in: "/morpheus/notes/c.md", err: "must be /root"},
		{name: "too deep agent", in: deep(MaxSegments) + "/notes/x", err: "more than 16 segments"},
		{name: "empty agent segment", in: "/root//notes/x", err: "empty segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNotePath(cur, tc.in)
			if tc.err != "" {
				checkErr(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatalf("ParseNotePath(%q): %v", tc.in, err)
			}
			if got != (NotePath{Agent: tc.agent, Path: tc.p}) {
				t.Fatalf("ParseNotePath(%q) = %+v, want {%s %s}", tc.in, got, tc.agent, tc.p)
			}
			full := got.Full()
			if full != tc.agent+"/notes/"+tc.p {
				t.Errorf("Full() = %q", full)
			}
			// The full path names the same note from any caller.
			if back, err := ParseNotePath("/root/elsewhere", full); err != nil || back != got {
				t.Errorf("ParseNotePath(%q) = %+v, %v; want %+v", full, back, err, got)
			}
		})
	}
}

func TestParsePrefix(t *testing.T) {
	const cur = "/root/agent_x"
	for _, tc := range []struct {
		name, in string
		agent, p string
		err      string
	}{
		{name: "empty is the own root", in: "", agent: cur, p: ""},
		{name: "plain prefix", in: "check", agent: cur, p: "check"},
		{name: "directory prefix", in: "a/", agent: cur, p: "a/"},
		{name: "plain string, not a path", in: "a//b..", agent: cur, p: "a//b.."},
		{name: "relative dot dot cannot leave the root", in: "../", agent: cur, p: "../"},
		{name: "own root", in: "/root/agent_x/notes/", agent: cur, p: ""},
		{name: "root's notes root", in: "/root/notes/", agent: "/root", p: ""},
		{name: "notes root without slash", in: "/root/notes", agent: "/root", p: ""},
		{name: "other agent's root without slash", in: "/root/reviewer/checker/notes", agent: "/root/reviewer/checker", p: ""},
		{name: "cross-agent prefix", in: "/root/agent_y/notes/chk", agent: "/root/agent_y", p: "chk"},
		{name: "prefix named notes", in: "/root/notes/notes", agent: "/root", p: "notes"},
		{name: "nested notes segment", in: "/root/a/notes/b/notes/", agent: "/root/a", p: "b/notes/"},
		{name: "512 chars", in: strings.Repeat("p", MaxPathChars), agent: cur, p: strings.Repeat("p", MaxPathChars)},
		{name: "512 chars below an absolute root", in: "/root/agent_y/notes/" + strings.Repeat("p", MaxPathChars), agent: "/root/agent_y", p: strings.Repeat("p", MaxPathChars)},

		{name: "/x", in: "/x", err: "notes root"},
		{name: "agent without notes", in: "/root/agent_y", err: "notes root"},
		{name: "agent with slash", in: "/root/agent_y/", err: "notes root"},
		{name: "root alone", in: "/root", err: "notes root"},
		{name: "uppercase agent", in: "/root/Agent/notes/", err: "notes root"},
		{name: "root as child", in: "/root/root/notes/", err: "notes root"},
		{name: "dot dot agent", in: "/root/a/../b/notes/", err: "notes root"},
		{name: "morpheus", in: "/morpheus", err: "notes root"},
		{name: "morpheus notes", in: "/morpheus/notes/", err: "notes root"},
		{name: "too deep agent", in: deep(MaxSegments) + "/notes/", err: "notes root"},
		{name: "NUL", in: "a\x00", err: "NUL"},
		{name: "invalid UTF-8", in: "\xfe", err: "UTF-8"},
		{name: "513 chars", in: strings.Repeat("p", MaxPathChars+1), err: "513 characters"},
		{name: "513 chars below an absolute root", in: "/root/notes/" + strings.Repeat("p", MaxPathChars+1), err: "513 characters long below its notes root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePrefix(cur, tc.in)
			if tc.err != "" {
				checkErr(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatalf("ParsePrefix(%q): %v", tc.in, err)
			}
			if got != (NotePath{Agent: tc.agent, Path: tc.p}) {
				t.Fatalf("ParsePrefix(%q) = %+v, want {%s %s}", tc.in, got, tc.agent, tc.p)
			}
		})
	}
}

func TestFullAndNotesRoot(t *testing.T) {
	if got := Full("/root/reviewer", "a/b.md"); got != "/root/reviewer/notes/a/b.md" {
		t.Errorf("Full = %q", got)
	}
	if got := NotesRoot("/root"); got != "/root/notes/" {
		t.Errorf("NotesRoot = %q", got)
	}
	// A full path's prefix form is the notes root: listing by it lists all.
	np, err := ParsePrefix("/root", NotesRoot("/root/reviewer"))
	if err != nil || np != (NotePath{Agent: "/root/reviewer"}) {
		t.Errorf("ParsePrefix(NotesRoot) = %+v, %v", np, err)
	}
}

// TestLongInputsAreNotEchoed: an error quotes at most shownChars code
// points of what it refuses, whatever check refuses it.
func TestLongInputsAreNotEchoed(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"empty segment", func() error { _, err := ParseNotePath(Root, "a//"+long); return err }()},
		{"dot segment", func() error { _, err := ParseNotePath(Root, "../"+long); return err }()},
		{"bad full path", func() error { _, err := ParseNotePath(Root, "/"+long); return err }()},
		{"bad prefix", func() error { _, err := ParsePrefix(Root, "/"+long); return err }()},
		{"bad agent", func() error { _, err := ParseAgent("/root/" + strings.ToUpper(long)); return err }()},
	} {
		if tc.err == nil {
			t.Fatalf("%s: accepted", tc.name)
		}
		if n := len(tc.err.Error()); n > 400 {
			t.Errorf("%s: a %d-byte error for a 100,000-byte input", tc.name, n)
		}
	}
}
