package memory

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/sessiongen"
	"github.com/memoryd/memoryd/internal/tools"
)

// Search is literal: a needle holding a LIKE or GLOB metacharacter (%, _,
// *, ?, [, ], \) is found exactly where it occurs as written and nowhere
// else. Each metacharacter has a decoy line that a pattern would match
// ("50 percent" for %, "snakeXcase" for _, "main.go" for *.go, "index 0"
// for [0], ...), and a few needles occur nowhere at all.

// literalLines are the texts searched: notes lines and history items.
var literalLines = []string{
	"100% done", "50 percent",
	"snake_case name", "snakeXcase name",
	"glob *.go files", "glob main.go files",
	"really?", "reallyy",
	"index [0] here", "index 0 here",
	"close ] bracket", "open [ bracket",
	`back\slash`, "backslash",
	`esc \% pct`, "esc % pct",
	"class [abc] text", "class b text",
	"neg [!a] here", "neg b here",
	"star*question?", "plain words only",
}

var literalNeedles = []string{
	"%", "_", "*", "?", "[", "]", `\`,
	"0%", "e_c", "*.go", "y?", "[0]", "[abc]", "[!a]", `\%`, `\s`, "*?", "_case", "% d",
	"[]", "[^a]", "%_", "%%", "__", `\\`, "[a-c]", "?*", // nowhere
}

// occurrences returns the code-point offsets of the non-overlapping
// occurrences of needle in s, left to right.
func occurrences(s, needle string) []int {
	var out []int
	for i := 0; ; {
		j := strings.Index(s[i:], needle)
		if j < 0 {
			return out
		}
		out = append(out, utf8.RuneCountInString(s[:i+j]))
		i += j + len(needle)
	}
}

func TestNotesSearchIsLiteral(t *testing.T) {
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/sessions/literal-notes.jsonl")
	// Three lines a file; file names with metacharacters too.
	type file struct {
		path  string
		lines []string
	}
	var files []file
	names := []string{"a%.md", "a_.md", "ax.md", "b*.md", "b?.md", "c[1].md", "c1.md", `d\.md`}
	for i := 0; i*3 < len(literalLines); i++ {
		f := file{path: fmt.Sprintf("f%02d.md", i), lines: literalLines[i*3 : min(i*3+3, len(literalLines))]}
		if i < len(names) {
			f.path = names[i]
		}
		files = append(files, f)
		mustCall(t, s, cc, "notes_write_file", hargs(t, "path", f.path, "text", strings.Join(f.lines, "\n")))
	}
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.path, b.path) })

	type match struct {
		Line int    `json:"line"`
		Text string `json:"text"`
	}
	for _, needle := range literalNeedles {
		var want []string
		for _, f := range files {
			for i, l := range f.lines {
				if strings.Contains(l, needle) {
					want = append(want, fmt.Sprintf("/root/notes/%s:%d:%s", f.path, i+1, l))
				}
			}
		}
		res := mustCall(t, s, cc, "notes_search_contents", hargs(t, "query", needle, "max_files", 500, "max_matches_per_file", 100))
		d := res.Details.(tools.NotesSearchContentsDetails)
		var got []string
		for _, f := range d.Files {
			for _, m := range f.Matches {
				got = append(got, fmt.Sprintf("%s:%d:%s", f.Path, m.Line, m.Text))
			}
		}
		if !slices.Equal(got, want) || d.Omitted != 0 {
			t.Errorf("notes_search_contents %q = %q (omitted %d), want %q", needle, got, d.Omitted, want)
		}
	}

	// A path_prefix with metacharacters is a literal prefix too.
	for _, tc := range []struct{ prefix, query string }{
		{"a%", "e"}, {"a_", "e"}, {"b*", "e"}, {"b?", "e"}, {"c[1]", "e"}, {`d\`, "e"}, {"%", "e"}, {"_", "e"},
	} {
		var want []string
		for _, f := range files {
			if strings.HasPrefix(f.path, tc.prefix) && slices.ContainsFunc(f.lines, func(l string) bool { return strings.Contains(l, tc.query) }) {
				want = append(want, "/root/notes/"+f.path)
			}
		}
		d := mustCall(t, s, cc, "notes_search_contents", hargs(t, "query", tc.query, "path_prefix", tc.prefix)).Details.(tools.NotesSearchContentsDetails)
		var got []string
		for _, f := range d.Files {
			got = append(got, f.Path)
		}
		if !slices.Equal(got, want) {
			t.Errorf("notes_search_contents %q under %q = %q, want %q", tc.query, tc.prefix, got, want)
		}
		l := detailsMap(t, mustCall(t, s, cc, "notes_list_files_by_prefix", hargs(t, "prefix", tc.prefix)))
		var listed []string
		for _, f := range files {
			if strings.HasPrefix(f.path, tc.prefix) {
				listed = append(listed, "/root/notes/"+f.path)
			}
		}
		if got := filePaths(t, l); !slices.Equal(got, listed) && !(len(got) == 0 && len(listed) == 0) {
			t.Errorf("notes_list_files_by_prefix %q = %q, want %q", tc.prefix, got, listed)
		}
	}
}

func TestHistorySearchIsLiteral(t *testing.T) {
	s := mustOpenService(t)
	cc := histAttach(t, s, "/sessions/literal-history.jsonl", nil)
	// The lines twice: once in what becomes a sealed 64 KiB chunk (searched
	// through its Bloom filter in SQLite), once in the open chunk, with
	// filler between that holds no metacharacter.
	b := sessiongen.NewBuilder(7)
	texts := map[string]string{}
	var order []string
	add := func(text string) {
		id := b.UserText(text)
		texts[id] = text
		order = append(order, id)
	}
	for _, l := range literalLines {
		add(l)
	}
	for i := range 40 {
		add(fmt.Sprintf("filler %02d ", i) + strings.Repeat("plain filler words and digits 0123456789 ", 50))
	}
	for _, l := range literalLines {
		add("again " + l)
	}
	histSync(t, s, cc, b.Session())
	var sealed int
	if err := s.Store().Reader().QueryRow("SELECT count(*) FROM history_chunks").Scan(&sealed); err != nil || sealed == 0 {
		t.Fatalf("%d sealed chunks (%v): the filler should have sealed one", sealed, err)
	}
	if d := mustCall(t, s, cc, "history_list_items", hargs(t, "limit", 200)).Details.(tools.HistoryListItemsDetails); d.NReturned+d.Omitted != len(order) {
		t.Fatalf("%d+%d items listed, %d synced", d.NReturned, d.Omitted, len(order))
	}

	for _, needle := range literalNeedles {
		var want []string
		for _, id := range order {
			if strings.Contains(texts[id], needle) {
				want = append(want, id)
			}
		}
		res := mustCall(t, s, cc, "history_search_contents", hargs(t, "query", needle, "limit", 200))
		d := res.Details.(tools.HistorySearchContentsDetails)
		var got []string
		for _, r := range d.Results {
			got = append(got, r.ItemID)
			text := []rune(texts[r.ItemID])
			var starts []int
			for _, rg := range r.Regions {
				for _, m := range rg.Matches {
					if m.End > len(text) || string(text[m.Start:m.End]) != needle {
						t.Errorf("search %q: match %d..%d of %q is not the needle", needle, m.Start, m.End, string(text))
						continue
					}
					starts = append(starts, m.Start)
				}
			}
			if want := occurrences(texts[r.ItemID], needle); !slices.Equal(starts, want) {
				t.Errorf("search %q in %q: matches at %v, want %v", needle, texts[r.ItemID], starts, want)
			}
		}
		if !slices.Equal(got, want) || d.Omitted != 0 {
			t.Errorf("history_search_contents %q = %q (omitted %d), want %q", needle, got, d.Omitted, want)
		}
	}
}
