package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestJSONCleanIsUnchanged(t *testing.T) {
	r := newRedactor(t, allOn)
	for _, doc := range []string{
		`{}`, `[]`, `"plain"`, `null`, `12`,
		`{"url":"https://example.com/a?b=c","sha":"` + strings.Repeat("ab12", 10) + `","n":1.5e3,"nested":[{"k":"sk-learn"}]}`,
		// Escapes and spacing stay as they were.
		"{ \"a\" :\t\"caf\\u00e9 \\/ \\n\" ,\n \"b\": [ true , false ] }",
	} {
		raw := []byte(doc)
		out, changed, err := r.JSON(raw)
		if err != nil || changed || &out[0] != &raw[0] || len(out) != len(raw) {
			t.Errorf("JSON(%s) = %s, %v, %v: want the same slice back", doc, out, changed, err)
		}
	}
}

func TestJSONRedactsStringsOnly(t *testing.T) {
	r := newRedactor(t, Config{})
	tok := "ghp_" + strings.Repeat("Ab1Cd2Ef3G", 4)[:36]
	pw := "S3cretPassw0rd"
	in := "{\n  \"command\": \"git push https://ci:" + pw + "@git.example.com/x.git\",\n" +
		"  \"env\": {\"GITHUB_TOKEN\": \"" + tok + "\", \"HOME\": \"/home/ada\"},\n" +
		"  \"count\": 3, \"ok\": true,\n" +
		"  \"" + tok + "\": \"a key\",\n" +
		"  \"escaped\": \"line\\n\\u0067hp_" + tok[4:] + "\\t<tab>\"\n}"
	out, changed, err := r.JSON([]byte(in))
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	m := marker("github_token", r.Digest(tok))
	want := "{\n  \"command\": \"git push https://ci:" + marker("url_password", r.Digest(pw)) + "@git.example.com/x.git\",\n" +
		"  \"env\": {\"GITHUB_TOKEN\": \"" + m + "\", \"HOME\": \"/home/ada\"},\n" +
		"  \"count\": 3, \"ok\": true,\n" +
		"  \"" + m + "\": \"a key\",\n" +
		"  \"escaped\": \"line\\n" + m + "\\t<tab>\"\n}"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if again, changed, _ := r.JSON(out); changed || !bytes.Equal(again, out) {
		t.Errorf("redacting twice changed it: %s", again)
	}
}

func TestJSONInvalid(t *testing.T) {
	r := newRedactor(t, Config{})
	for _, doc := range []string{`{"a": "https://u:pw@h"`, `{"a": "https://u:pw@h", }`, `["https://u:pw@h" "x"]`, `{"a": "https://u:pw@h\x"}`} {
		if _, _, err := r.JSON([]byte(doc)); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("%s: err %v", doc, err)
		}
	}
	// A document where nothing changes is not checked.
	for _, doc := range []string{`{"a": 1`, `{"a": "https://example.com/"`} {
		if out, changed, err := r.JSON([]byte(doc)); err != nil || changed || string(out) != doc {
			t.Errorf("got %s, %v, %v", out, changed, err)
		}
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`plain`, `a\"b\\c\/d\b\f\n\r\t`, `\u00e9\u20ac\ud83d\ude00`, `\ud83d`, `\ud83dx`, `\ude00\ud83d`, `\ud83d\u0041`, "caf\xc3\xa9 \xff", `\u12`, `\x`, "\x01"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		quoted := append(append([]byte{'"'}, body...), '"')
		if stringEnd(quoted, 0) != len(quoted)-1 {
			return // a quote ends the string early: not a body
		}
		got, ok := unquote(body)
		var want string
		err := json.Unmarshal(quoted, &want)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("unquote(%q) = %q, %v; encoding/json: %q, %v", body, got, ok, want, err)
		}
	})
}

// redactValue redacts the strings of a decoded document, keys included.
func redactValue(r *Redactor, v any) any {
	switch v := v.(type) {
	case string:
		s, _ := r.Text(v)
		return s
	case []any:
		for i := range v {
			v[i] = redactValue(r, v[i])
		}
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			k, _ = r.Text(k)
			out[k] = redactValue(r, e)
		}
		return out
	}
	return v
}

func FuzzJSON(f *testing.F) {
	for _, path := range []string{"testdata/secrets.txt", "testdata/lookalikes.txt"} {
		for _, b := range readCorpus(f, path) {
			doc, _ := json.Marshal(map[string]any{"text": b.input, "list": []string{b.name, b.input}})
			f.Add(doc)
		}
	}
	f.Add([]byte(`{"a":"\u0067hp_0123456789abcdefghijABCDEFGHIJ012345","b":[1,"x\"y",null]}`))
	f.Add([]byte(`["https:\/\/u:pw@h", {"k\\":"v"}]`))
	r := newRedactor(f, allOn)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, changed, err := r.JSON(in)
		if !json.Valid(in) {
			return
		}
		if err != nil {
			t.Fatalf("valid input, error %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q from %q", out, in)
		}
		if changed == bytes.Equal(in, out) {
			t.Fatalf("changed %v, but in %q, out %q", changed, in, out)
		}
		// The output is the input with its strings redacted one by one.
		var vin, vout any
		if json.Unmarshal(in, &vin) != nil || json.Unmarshal(out, &vout) != nil {
			return // numbers out of range, which encoding/json refuses
		}
		if want := redactValue(r, vin); !reflect.DeepEqual(want, vout) {
			t.Fatalf("decoded output %#v, want %#v", vout, want)
		}
		if again, changedAgain, _ := r.JSON(out); changedAgain || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q then %q", out, again)
		}
	})
}
