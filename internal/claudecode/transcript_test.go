package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/history"
)

func transcript(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "claude-code", "transcripts", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readAll(t *testing.T, data []byte) Batch {
	t.Helper()
	b, err := Read(bytes.NewReader(data), int64(len(data)), Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func byID(entries []Entry) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, e := range entries {
		var v map[string]any
		if err := json.Unmarshal(e.Raw, &v); err != nil {
			panic(err)
		}
		m[e.ID] = v
	}
	return m
}

// TestCompactedTranscript reads a real transcript with a tool call, a
// resume and a manual /compact: the branch runs from the first prompt
// through the compaction and its summary to the last line, and the
// compaction is a compaction entry, so it opens a window.
func TestCompactedTranscript(t *testing.T) {
	b := readAll(t, transcript(t, "compacted.jsonl"))
	if b.Skipped != 0 {
		t.Fatalf("skipped %d lines", b.Skipped)
	}
	ents := byID(b.Entries)
	const (
		fact       = "2e9b834e-765a-40c0-b4d9-3263c0ad8162"
		boundary   = "e2a6176f-fbb3-45b6-bb1a-0027c4e70137"
		summary    = "bbdaec3a-ded3-4a37-b57d-e95e4ce770d9"
		caveat     = "e1888fb3-4e2a-49af-ab05-c2021f8f93da"
		compacted  = "5b0a2904-156b-4cb4-b477-b9b8d53f9fde"
		toolUse    = "97aced41-8697-4bb7-92f2-267cf1641cea"
		toolResult = "75dbc679-ab27-4bba-91e1-31c6ebf2c26c"
	)
	idx := func(id string) int { return slices.Index(b.Branch, id) }
	for _, id := range []string{fact, toolUse, toolResult, compacted, boundary, summary} {
		if idx(id) < 0 {
			t.Fatalf("%s is not on the branch", id)
		}
	}
	if !(idx(fact) < idx(compacted) && idx(compacted)+1 == idx(boundary) && idx(boundary)+1 == idx(summary)) {
		t.Fatalf("branch order: fact %d, compacted %d, boundary %d, summary %d", idx(fact), idx(compacted), idx(boundary), idx(summary))
	}
	if got := b.Branch[len(b.Branch)-1]; got != b.Entries[len(b.Entries)-1].ID {
		t.Fatalf("the branch ends at %s, not at the last line", got)
	}
	if c := ents[boundary]; c["type"] != "compaction" || c["parentId"] != compacted || c["trigger"] != "manual" {
		t.Fatalf("boundary: %v", c)
	}
	if s := ents[summary]; s["parentId"] != boundary {
		t.Fatalf("summary's parent: %v", s["parentId"])
	}
	if f := ents[fact]["message"].(map[string]any); f["role"] != "user" || f["content"] != "FACT: the password is swordfish" {
		t.Fatalf("fact: %v", f)
	}
	call := ents[toolUse]["message"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if call["type"] != "toolCall" || call["name"] != "mcp__probe__note" || call["id"] != "toolu_scripted_10" {
		t.Fatalf("tool call: %v", call)
	}
	res := ents[toolResult]["message"].(map[string]any)
	if res["role"] != "toolResult" || res["toolCallId"] != "toolu_scripted_10" {
		t.Fatalf("tool result: %v", res)
	}
	if c := ents[caveat]; c["type"] != "custom_message" {
		t.Fatalf("a meta line: %v", c)
	}
	if b.Cursor.Usage == nil || b.Cursor.Usage.ContextTokens() == 0 {
		t.Fatalf("usage: %+v", b.Cursor.Usage)
	}
}

// TestReadInPiecesIsReadWhole reads a transcript in every split into two
// reads, and in many small ones: the entries and the branch are those of
// one whole read, and each read keeps the branch before it.
func TestReadInPiecesIsReadWhole(t *testing.T) {
	for _, name := range []string{"compacted.jsonl", "with-subagent/session.jsonl", "compact-unpersisted-parent.jsonl", "every-type.jsonl"} {
		data := transcript(t, name)
		whole := readAll(t, data)
		for cut := 0; cut <= len(data); cut += 97 {
			var entries []Entry
			cur := Cursor{}
			for _, end := range []int{cut, len(data)} {
				b, err := Read(bytes.NewReader(data[:end]), int64(end), cur)
				if err != nil {
					t.Fatalf("%s cut %d: %v", name, cut, err)
				}
				if !slices.Equal(b.Branch[:b.Keep], cur.Branch[:b.Keep]) {
					t.Fatalf("%s cut %d: keep %d is not a prefix of the branch before", name, cut, b.Keep)
				}
				entries = append(entries, b.Entries...)
				cur = b.Cursor
			}
			if !slices.Equal(cur.Branch, whole.Branch) {
				t.Fatalf("%s cut %d: branch %d ids, whole %d", name, cut, len(cur.Branch), len(whole.Branch))
			}
			if len(entries) != len(whole.Entries) {
				t.Fatalf("%s cut %d: %d entries, whole %d", name, cut, len(entries), len(whole.Entries))
			}
			for i := range entries {
				if !bytes.Equal(entries[i].Raw, whole.Entries[i].Raw) {
					t.Fatalf("%s cut %d: entry %d differs:\n%s\n%s", name, cut, i, entries[i].Raw, whole.Entries[i].Raw)
				}
			}
		}
	}
}

// TestRewindIsReported: new lines that continue from an entry off the
// branch read before are reported, so the reader starts again.
func TestRewindIsReported(t *testing.T) {
	data := transcript(t, "with-subagent/session.jsonl")
	b := readAll(t, data)
	first := b.Branch[5]
	more := append(bytes.Clone(data), []byte(`{"type":"user","uuid":"x1","parentUuid":"`+b.Branch[len(b.Branch)-1]+`","message":{"role":"user","content":"on"}}`+"\n")...)
	if _, err := Read(bytes.NewReader(more), int64(len(more)), b.Cursor); err != nil {
		t.Fatalf("a line that continues the branch: %v", err)
	}
	cur := b.Cursor
	cur.Branch = slices.Clone(cur.Branch[:3])
	rewound := append(bytes.Clone(data), []byte(`{"type":"user","uuid":"x2","parentUuid":"`+first+`","message":{"role":"user","content":"again"}}`+"\n")...)
	if _, err := Read(bytes.NewReader(rewound), int64(len(rewound)), cur); !errors.Is(err, ErrRewound) {
		t.Fatalf("a line off the branch: %v, want ErrRewound", err)
	}
}

// TestMemorydToolsAreNamedAsInPi: memoryd's tools, as Claude Code names
// them, are named as Pi names them, so they stay hidden as memoryd's own.
func TestMemorydToolsAreNamedAsInPi(t *testing.T) {
	line := `{"type":"assistant","uuid":"a","parentUuid":null,"message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"mcp__memoryd__notes_write_file","input":{"path":"a.md"}}]}}`
	var c Converter
	es, _, err := c.Line([]byte(line))
	if err != nil || len(es) != 1 {
		t.Fatal(es, err)
	}
	if !strings.Contains(string(es[0].Raw), `"name":"notes_write_file"`) || !strings.Contains(string(es[0].Raw), `"thinking":"hm"`) {
		t.Fatalf("%s", es[0].Raw)
	}
}

// TestSeveralToolResultsInOneLine: each result is its own toolResult
// message, chained, and the line's uuid names the last.
func TestSeveralToolResultsInOneLine(t *testing.T) {
	prev := `{"type":"user","uuid":"p","parentUuid":null,"message":{"role":"user","content":"go"}}`
	line := `{"type":"user","uuid":"u","parentUuid":"p","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"one"},{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"two"}]},{"type":"text","text":"and a word"}]}}`
	var c Converter
	if _, _, err := c.Line([]byte(prev)); err != nil {
		t.Fatal(err)
	}
	es, _, err := c.Line([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	var ids, parents []string
	for _, e := range es {
		ids, parents = append(ids, e.ID), append(parents, e.ParentID)
	}
	if !slices.Equal(ids, []string{"u#0", "u#1", "u"}) || !slices.Equal(parents, []string{"p", "u#0", "u#1"}) {
		t.Fatalf("ids %v parents %v", ids, parents)
	}
}

// TestCompactionOfAnEntryNotInTheFile: Claude Code 2.1.197 may name as a
// compaction's logical parent an entry it never wrote (here, after hooks
// that printed nothing). The compaction then continues from the last
// entry written, so the branch still runs from the first prompt through
// the compaction to the last line.
func TestCompactionOfAnEntryNotInTheFile(t *testing.T) {
	b := readAll(t, transcript(t, "compact-unpersisted-parent.jsonl"))
	ents := byID(b.Entries)
	var boundary, fact string
	for _, e := range b.Entries {
		v := ents[e.ID]
		if v["type"] == "compaction" {
			boundary = e.ID
		}
		if m, ok := v["message"].(map[string]any); ok && m["content"] == "FACT: the password is swordfish" {
			fact = e.ID
		}
	}
	bi, fi := slices.Index(b.Branch, boundary), slices.Index(b.Branch, fact)
	if boundary == "" || bi < 0 || fi != 0 || bi < 2 {
		t.Fatalf("boundary %q at %d, fact at %d of %d", boundary, bi, fi, len(b.Branch))
	}
	if ents[boundary]["parentId"] != b.Branch[bi-1] {
		t.Fatalf("the boundary's parent %v is not the entry before it", ents[boundary]["parentId"])
	}
	if got := b.Branch[len(b.Branch)-1]; got != b.Entries[len(b.Entries)-1].ID {
		t.Fatalf("the branch ends at %s, not at the last line", got)
	}
}

// TestEveryEntryType reads a transcript with every line and block type
// seen (docs/claude-code.md, §4) and renders each entry as history does:
// records without a uuid become nothing, attachments and system records
// no item, images stay images, thinking stays out of the text, each tool
// result answers its call, memoryd's own tool keeps its Pi name, the
// compaction opens a window and its summary follows it on the branch.
func TestEveryEntryType(t *testing.T) {
	b := readAll(t, transcript(t, "every-type.jsonl"))
	want := []string{"a1", "u1", "u2", "u3#0", "u3", "u4", "u5", "u6", "u7", "u8", "c1", "s1", "u9"}
	if !slices.Equal(b.Branch, want) {
		t.Fatalf("branch %v, want %v", b.Branch, want)
	}
	if b.Skipped != 0 || len(b.Entries) != len(want) {
		t.Fatalf("%d entries, %d skipped", len(b.Entries), b.Skipped)
	}
	r := map[string]history.Rendered{}
	for _, e := range b.Entries {
		r[e.ID] = history.Render(e.Raw)
	}
	for _, id := range []string{"a1", "u5", "u6", "u8"} {
		if r[id].Item {
			t.Errorf("%s is an item: %+v", id, r[id])
		}
	}
	check := func(id, role, text string, images int) {
		t.Helper()
		got := r[id]
		if !got.Item || got.Role != role || !strings.Contains(got.Text, text) || got.Images != images {
			t.Errorf("%s: %+v, want a %s item with %q and %d images", id, got, role, text, images)
		}
	}
	check("u1", "user", "look at this picture\n[image]", 1)
	check("u2", "assistant", "It is a tiny PNG.", 0)
	check("u3#0", "tool", "README.md\nmain.go", 0)
	check("u3", "tool", `{"path":"/root/notes/a.md"}`, 1)
	check("u4", "assistant", "Done.", 0)
	check("u7", "user", "local-command-caveat", 0)
	check("c1", "user", "Conversation compacted", 0)
	check("s1", "user", "a PNG was described", 0)
	check("u9", "user", "and now?", 0)
	if strings.Contains(r["u2"].Text, "SECRET_THOUGHT") || strings.Contains(r["u2"].Text, "opaque") {
		t.Errorf("thinking in the text: %q", r["u2"].Text)
	}
	if got := r["u2"].Calls; len(got) != 2 || got[0] != (history.Call{ID: "toolu_1", Name: "Bash"}) || got[1] != (history.Call{ID: "toolu_2", Name: "notes_write_file"}) {
		t.Errorf("calls %+v", got)
	}
	if r["u3#0"].ToolCallID != "toolu_1" || r["u3"].ToolCallID != "toolu_2" {
		t.Errorf("tool results answer %q and %q", r["u3#0"].ToolCallID, r["u3"].ToolCallID)
	}
	if !r["c1"].Compaction || r["c1"].Control {
		t.Errorf("the boundary: %+v", r["c1"])
	}
	if len(history.Images(b.Entries[1].Raw)) != 1 {
		t.Error("the user's image is not kept")
	}
	if u := b.Cursor.Usage; u == nil || u.ContextTokens() != 230 {
		t.Errorf("the last usage: %+v", u)
	}
}
