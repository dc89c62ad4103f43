package history

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestEntryKeysMatchExactly: the keys of a Pi entry are its fields only
// when spelt exactly so. encoding/json would take "ID" (after "id", it
// wins), "Id", "\u0049D", "meſſage" (long s) or "Text" for the fields
// they fold to.
func TestEntryKeysMatchExactly(t *testing.T) {
	for _, c := range []struct {
		name, raw string
		want      Head
	}{
		{"ID after id", `{"type":"message","id":"dk","ID":"other"}`, Head{Type: "message", ID: "dk"}},
		{"ID before id", `{"ID":"other","type":"message","id":"dk"}`, Head{Type: "message", ID: "dk"}},
		{"Id alone", `{"type":"message","Id":"zzz"}`, Head{Type: "message"}},
		{"escaped ID", `{"type":"message","\u0049D":"zzz","id":"dk"}`, Head{Type: "message", ID: "dk"}},
		{"TYPE", `{"TYPE":"message","id":"dk"}`, Head{ID: "dk"}},
		{"parentID", `{"type":"message","id":"dk","parentID":"p"}`, Head{Type: "message", ID: "dk"}},
		{"exact keys", `{"type":"message","id":"dk","parentId":"p"}`, Head{Type: "message", ID: "dk", ParentID: ptr("p")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadHead([]byte(c.raw))
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("ReadHead(%s) = %+v, %v; want %+v", c.raw, got, err, c.want)
			}
		})
	}

	for _, c := range []struct {
		name, raw string
		item      bool
		text      string
	}{
		{"long s in message", `{"type":"message","id":"a","me\u017f\u017fage":{"role":"user","content":"hidden"}}`, false, ""},
		{"Message", `{"type":"message","id":"a","Message":{"role":"user","content":"hidden"}}`, false, ""},
		{"Content after content", `{"type":"message","id":"a","message":{"role":"user","content":"shown","Content":"hidden"}}`, true, "shown"},
		{"Role", `{"type":"message","id":"a","message":{"Role":"user","content":"hidden"}}`, false, ""},
		{"Text after text", `{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"shown","Text":"hidden"}]}}`, true, "shown"},
		{"Summary", `{"type":"compaction","id":"a","Summary":"hidden"}`, true, "[empty summary]"},
		// A case variant inside tool-call arguments is kept as written.
		{"Name in arguments", `{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{"Name":"x","name":"y"}}]}}`,
			true, `[tool_call bash] {"Name":"x","name":"y"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Render([]byte(c.raw))
			if r.Item != c.item || r.Text != c.text {
				t.Errorf("Render(%s) = item %v text %q; want item %v text %q", c.raw, r.Item, r.Text, c.item, c.text)
			}
		})
	}

	sess, err := ReadSession(strings.NewReader(`{"type":"session","id":"s"}
{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}
{"type":"message","id":"b","ID":"z","parentId":"a","message":{"role":"user","content":"y"}}
`))
	if err != nil || !reflect.DeepEqual(sess.Branch, []string{"a", "b"}) {
		t.Errorf("ReadSession: branch %v, %v; want [a b]", sess.Branch, err)
	}
	if _, err := ReadSession(strings.NewReader(`{"type":"message","Id":"a"}` + "\n")); err == nil || !strings.Contains(err.Error(), "without type or id") {
		t.Errorf("ReadSession of an entry whose only id key is Id: %v, want it refused", err)
	}
}

func ptr(s string) *string { return &s }

// FuzzExactDecodingAgrees: an entry with no case variant of a field's
// key renders the same through encoding/json's struct decoding and
// through decoding by exact keys (the path entries with one take), and
// its head decodes the same.
func FuzzExactDecodingAgrees(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"a","message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"b","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"t"},{"type":"toolCall","id":"c","name":"bash","arguments":{"cmd":"ls"}}]}}`,
		`{"type":"message","id":"c","message":{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"image","data":"aGk=","mimeType":"image/png"},null]}}`,
		`{"type":"compaction","id":"d","summary":"<context_window_reset/>\nCurrent context window id: w2"}`,
		`{"type":"custom_message","id":"e","customType":"pi-token-budget:fallback","content":null}`,
		`{"type":"message","id":"f","message":{"role":"bashExecution","command":"ls","output":"x","exitCode":2.5}}`,
		`{"type":"message","id":"g","message":null}`, `{"type":"message","id":"h","message":{"role":5}}`,
		`{"type":"message","message":{"role":"user","content":[{"type":"text","text":1}]}}`,
		`[]`, `null`, `"s"`, `{"type":"message","id":"i","message":{"role":"assistant","content":[{"type":"text","text":"a"}],"content":"b"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if hasVariantKey(raw) {
			return
		}
		if a, b := render(raw, false), render(raw, true); !reflect.DeepEqual(a, b) {
			t.Fatalf("%s renders %+v by struct decoding, %+v by exact keys", raw, a, b)
		}
		var a, b Head
		errA := json.Unmarshal(raw, &a)
		errB := decodeExact(raw, field{"type", &b.Type}, field{"id", &b.ID}, field{"parentId", &b.ParentID})
		if (errA == nil) != (errB == nil) || errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: head %+v (%v) by struct decoding, %+v (%v) by exact keys", raw, a, errA, b, errB)
		}
	})
}
