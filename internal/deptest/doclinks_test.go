package deptest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// mdLink is an inline Markdown link or image: [text](target) or
	// [text](target "title").
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// mdRefLink is a reference definition: [label]: target.
	mdRefLink = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s+(\S+)`)
	// codeSpan is inline code, where brackets are not links.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// heading is an ATX heading.
	heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// markdownFiles returns the repository's Markdown files (module-relative),
// outside folders that are not the repository's own text.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "dist", "tmp":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutCode is a Markdown text without its fenced blocks and, when
// spans, its code spans.
func withoutCode(text string, spans bool) string {
	var b strings.Builder
	fenced := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			b.WriteString("\n")
			continue
		}
		if fenced {
			b.WriteString("\n")
			continue
		}
		if spans {
			line = codeSpan.ReplaceAllString(line, "``")
		}
		b.WriteString(line)
	}
	return b.String()
}

// anchors returns the fragment ids GitHub gives the headings of a
// Markdown text: lower case, punctuation dropped, spaces as hyphens, and
// -1, -2, … after ids already taken.
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(withoutCode(text, false), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.ReplaceAll(m[1], "`", "")) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
				b.WriteRune(r)
			}
		}
		id := b.String()
		for n, base := 1, id; ids[id]; n++ {
			id = base + "-" + strconv.Itoa(n)
		}
		ids[id] = true
	}
	return ids
}

// TestDocLinksResolve: every relative link of the repository's Markdown
// files names a file or folder of the repository, and a fragment names a
// heading of the Markdown file it points into. Links to other sites are
// not followed. A document cited but not in the repository (once
// seed-behaviour.md) fails here.
func TestDocLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..")
	files := markdownFiles(t, root)
	if len(files) < 5 {
		t.Fatalf("found %d Markdown files under %s: %v", len(files), root, files)
	}
	texts := map[string]string{}
	read := func(rel string) string {
		if s, ok := texts[rel]; ok {
			return s
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		texts[rel] = string(b)
		return texts[rel]
	}
	checked := 0
	for _, file := range files {
		text := withoutCode(read(file), true)
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range mdRefLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(strings.Trim(target, "<>"), "#")
			dest := file // a bare #fragment is in the file itself
			if path != "" {
				if filepath.IsAbs(path) {
					t.Errorf("%s: link %q is an absolute path", file, target)
					continue
				}
				dest = filepath.Clean(filepath.Join(filepath.Dir(file), filepath.FromSlash(path)))
				if strings.HasPrefix(dest, "..") {
					t.Errorf("%s: link %q points outside the repository", file, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s: link %q: %s is not in the repository", file, target, filepath.ToSlash(dest))
					continue
				}
			}
			if frag == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: link %q has a fragment into a file that is not Markdown", file, target)
				continue
			}
			if !anchors(read(dest))[strings.ToLower(frag)] {
				t.Errorf("%s: link %q: %s has no heading #%s", file, target, filepath.ToSlash(dest), frag)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link checked: the link pattern finds nothing")
	}
}
