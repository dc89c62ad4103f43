package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/claudecode"
	"github.com/memoryd/memoryd/internal/codex"
	"github.com/memoryd/memoryd/internal/forensics"
)

// TestWriteSessions generates a small machine's session files and checks
// what the search-all rows rely on: every kind in its layout, with
// sub-agents; the needles where the rows expect them and the common one
// nearly everywhere; ids of their own in every session; every file read
// whole by the readers the import uses, each line a record the captured
// files have, with the same fields.
func TestWriteSessions(t *testing.T) {
	tpl, err := loadSessionTemplates(filepath.Join("..", "..", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const total = 6 << 20
	set, err := writeSessions(dir, total, tpl)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.bytes(); got < total*9/10 || got > total*12/10 {
		t.Errorf("%d bytes of session files, want about %d", got, total)
	}
	for i, k := range set.kinds {
		if k.sessions < 4 || k.bytes < total/4 {
			t.Errorf("%s: %d sessions, %d bytes", sessionKindNames[i], k.sessions, k.bytes)
		}
		if i > 0 && k.subAgents == 0 {
			t.Errorf("%s: no sub-agent", sessionKindNames[i])
		}
	}

	files := map[string][]byte{}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files[path], err = os.ReadFile(path)
		}
		return err
	})
	holding := func(needle string) []string {
		var out []string
		for p, b := range files {
			if bytes.Contains(b, []byte(needle)) {
				out = append(out, p)
			}
		}
		slices.Sort(out)
		return out
	}
	if got := holding(allRareNeedle); len(got) != 1 || got[0] != set.rareFile || !strings.Contains(got[0], "/subagents/agent-") {
		t.Errorf("the rare needle is in %q, want one sub-agent's transcript %q", got, set.rareFile)
	}
	if got, want := holding(allKindNeedle), slices.Sorted(slices.Values(set.kindFiles)); !slices.Equal(got, want) ||
		!strings.HasPrefix(set.kindFiles[0], set.kinds[2].dir) || len(want) != 3 {
		t.Errorf("the kind needle is in %q, want %q, the first a Codex rollout", got, want)
	}
	if got := holding(allAbsentNeedle); len(got) != 0 {
		t.Errorf("the absent needle is in %q", got)
	}
	jsonl := 0
	for p := range files {
		if strings.HasSuffix(p, ".jsonl") {
			jsonl++
		}
	}
	if jsonl != set.files() {
		t.Errorf("%d .jsonl files, the set counts %d", jsonl, set.files())
	}
	if got := len(holding(allCommonNeedle)); got < jsonl*9/10 {
		t.Errorf("the common needle is in %d of %d files", got, jsonl)
	}

	// Fields of the captured lines, by record kind: those every captured
	// line of the kind has.
	captured := map[string]map[string]bool{}
	add := func(kind string, keys map[string]bool) {
		if have, ok := captured[kind]; ok {
			for k := range have {
				if !keys[k] {
					delete(have, k)
				}
			}
			return
		}
		captured[kind] = keys
	}
	for _, l := range tpl.cc {
		add(ccKind(l), keysOf(t, l))
	}
	for _, l := range tpl.codex {
		add(codexRecordKind(l), keysOf(t, l))
	}
	ids := map[string]string{} // Claude Code uuids and Codex threads, Pi headers
	for p, b := range files {
		if !strings.HasSuffix(p, ".jsonl") {
			continue
		}
		rel, _ := filepath.Rel(dir, p)
		kind := strings.Split(rel, string(filepath.Separator))[0]
		var entries int
		switch kind {
		case "pi":
			s, err := forensics.ReadSession(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			entries = len(s.Entries)
			var h struct{ ID string }
			json.Unmarshal(b[:bytes.IndexByte(b, '\n')], &h)
			checkUnique(t, ids, h.ID, rel)
		case "claude-code":
			r, err := claudecode.Read(bytes.NewReader(b), int64(len(b)), claudecode.Cursor{})
			if err != nil || r.Skipped > 0 {
				t.Fatalf("%s: %v, %d lines skipped", rel, err, r.Skipped)
			}
			entries = len(r.Entries)
			for _, e := range r.Entries {
				checkUnique(t, ids, e.ID, rel)
			}
		case "codex":
			r, err := codex.Read(bytes.NewReader(b), int64(len(b)), codex.Cursor{})
			if err != nil || len(r.SkippedLines) > 0 {
				t.Fatalf("%s: %v, lines %v skipped", rel, err, r.SkippedLines)
			}
			entries = len(r.Entries)
			m, err := forensics.CodexMeta(p)
			if err != nil {
				t.Fatal(err)
			}
			checkUnique(t, ids, m.ID, rel)
			if got := forensics.CodexThreadID(filepath.Base(p)); got != m.ID {
				t.Errorf("%s: the file names thread %q, its session_meta %q", rel, got, m.ID)
			}
		}
		if entries < 4 { // a prompt, a tool call, its result, the answer
			t.Errorf("%s: %d entries", rel, entries)
		}
		if kind == "pi" {
			continue
		}
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			k := ccKind(l)
			if kind == "codex" {
				k = codexRecordKind(l)
			}
			want, ok := captured[k]
			if !ok {
				t.Errorf("%s: a line of kind %s, which no captured line is: %.200s", rel, k, l)
				continue
			}
			// Generated lines may add what the captured tool calls lacked
			// (a Bash result's toolUseResult); none loses a field, but
			// the MCP call's namespace, which a built-in tool has not.
			for f := range want {
				if !keysOf(t, l)[f] && f != "payload.namespace" {
					t.Fatalf("%s: a %s line lacks %s: %.200s", rel, k, f, l)
				}
			}
		}
	}

	// The same size writes the same bytes.
	again := t.TempDir()
	if _, err := writeSessions(again, total, tpl); err != nil {
		t.Fatal(err)
	}
	for p, b := range files {
		rel, _ := filepath.Rel(dir, p)
		if b2, err := os.ReadFile(filepath.Join(again, rel)); err != nil || !bytes.Equal(b, b2) {
			t.Errorf("%s differs the second time (%v)", rel, err)
			break
		}
	}
}

// keysOf is the top-level and payload fields of a line.
func keysOf(t *testing.T, line []byte) map[string]bool {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%v: %.200s", err, line)
	}
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(m["payload"], &p) == nil {
		for k := range p {
			out["payload."+k] = true
		}
	}
	return out
}

// ccKind names a transcript line's record kind: type, subtype or
// attachment type, content block type, sub-agent or not.
func ccKind(line []byte) string {
	var l struct {
		Type       string `json:"type"`
		Subtype    string `json:"subtype"`
		Operation  string `json:"operation"`
		AgentID    string `json:"agentId"`
		Attachment struct {
			Type string `json:"type"`
		} `json:"attachment"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		IsCompactSummary bool `json:"isCompactSummary"`
	}
	json.Unmarshal(line, &l)
	k := l.Type + "/" + l.Subtype + l.Attachment.Type + l.Operation
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(l.Message.Content, &blocks) == nil && len(blocks) > 0 {
		k += "/" + blocks[0].Type
		if blocks[0].Type == "thinking" {
			k = strings.TrimSuffix(k, "thinking") + "tool_use" // a thinking block has a tool call's line
		}
	}
	if l.AgentID != "" {
		k += "/sub"
	}
	if l.IsCompactSummary {
		k += "/summary"
	}
	return k
}

// codexRecordKind names a rollout line's record kind: type, payload type,
// an event's item type.
func codexRecordKind(line []byte) string {
	var l struct {
		Type    string `json:"type"`
		Payload struct {
			Type string `json:"type"`
			Role string `json:"role"`
		} `json:"payload"`
	}
	json.Unmarshal(line, &l)
	return l.Type + "/" + l.Payload.Type + "/" + l.Payload.Role
}

func checkUnique(t *testing.T, seen map[string]string, id, file string) {
	t.Helper()
	if id == "" {
		t.Errorf("%s: an empty id", file)
		return
	}
	if other, ok := seen[id]; ok {
		t.Errorf("id %s in %s and %s", id, other, file)
	}
	seen[id] = file
}
