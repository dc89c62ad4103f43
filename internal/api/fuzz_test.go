package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

// FuzzDecode feeds arbitrary bodies to the request decoder, into the
// request types of the tool, attach, sync and usage routes. It must never
// panic, and:
//
//   - every error is an *httpError whose status is 400 (415 for a wrong
//     content type, 413 for a body over the limit) and whose message is
//     one line with no Go or internal text in it;
//   - an accepted body is represented faithfully: every field it sets is
//     a field of the request type with that exact name and value, and
//     encoding the decoded value and decoding that gives the same value.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"context":{"task_id":"t","agent":"/root"},"arguments":{"path":"a"}}`,
		`{"a":1,"a":2}`, `{"context":{"agent":"/root","agent":"/x"}}`, `[[[[[[[[[[]]]]]]]]]]`,
		`{"arguments":{"n":1e999999}}`, "{\"x\":\"\xff\"}", `{} {}`, `{"context":`, ``, `null`,
		// Keys that encoding/json would match case-insensitively.
		`{"Context":{"task_id":"t","agent":"/root"}}`, `{"context":{"agent":"/root","Agent":"/root/x"}}`,
		`{"session_key":"s","\u017fession_key":"t"}`, `{"context":{"tas\u212a_id":"t"}}`,
		`{"session_key":"s","budget":{"context_window":2.0,"reminder_remaining_percent":0.5}}`,
		`{"session_key":"s","task":{"task_id":"t","agent_name":"x"},"budget":null}`,
		`{"context":{"task_id":"t","agent":"/root"},"entries":[{"id":"e","type":"message","Id":1}],"branch":["e"],"expected_revision":3}`,
		`{"context":{"task_id":"t","agent":"/root"},"tokens_used":12,"context_window":1e3}`,
		`{"context":{"task_id":"\ud800","agent":"<&>"},"arguments":null}`,
		`{"tokens_used":1.5}`, `{"entries":{}}`, `{"context":[]}`, `{"budget":{"context_window":"1"}}`,
		`{"context":{"task_id":"t","agent":"/root"},"syncs":[{"entries":[{"id":"e"}],"delta":{"base_revision":1,"keep":1,"append":["e"]},"expected_revision":1}],"usage":{"tokens_used":5,"context_window":10},"admit":{"call_id":"c","tool_name":"read","arguments":{}}}`,
		`{"syncs":[{"Delta":{}}],"usage":{"tokens_used":1,"Tokens_used":2}}`, `{"syncs":null,"admit":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzDecodeAs[toolCallRequest](t, body)
		fuzzDecodeAs[memory.AttachRequest](t, body)
		fuzzDecodeAs[memory.SyncRequest](t, body)
		fuzzDecodeAs[usageRequest](t, body)
		fuzzDecodeAs[turnRequest](t, body)
	})
}

// fuzzDecodeAs checks decode's properties for one request type T.
func fuzzDecodeAs[T any](t *testing.T, body []byte) {
	t.Helper()
	var v T
	typ := reflect.TypeOf(v).String()
	err := decode(jsonRequest(body, "application/json", -1), &v)
	if err != nil {
		checkDecodeError(t, typ, body, err, http.StatusBadRequest)
	} else {
		checkRoundTrip(t, typ, body, v)
	}

	// decode relies on checkJSON for what json.Unmarshal lets through:
	// it accepts exactly what a strict json.Decoder (unknown fields
	// refused, one value only) accepts after checkJSON, with the same
	// result.
	var ref T
	refOK := checkJSON(body, reflect.TypeOf(&ref)) == nil
	if refOK {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		refOK = dec.Decode(&ref) == nil
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			refOK = false
		}
	}
	if refOK != (err == nil) {
		t.Fatalf("%s: decode gives %v, a strict json.Decoder accepts: %v; body %q", typ, err, refOK, body)
	}
	if refOK && !reflect.DeepEqual(v, ref) {
		t.Fatalf("%s: decode gives %+v, a strict json.Decoder %+v; body %q", typ, v, ref, body)
	}

	// A wrong content type is refused before the body is looked at.
	var w T
	checkDecodeError(t, typ, body, decode(jsonRequest(body, "text/plain; charset=utf-8", -1), &w), http.StatusUnsupportedMediaType)

	// A body over the limit is 413, whatever it holds; at the limit it is
	// decoded as without one.
	if len(body) > 0 {
		var o T
		checkDecodeError(t, typ, body, decode(jsonRequest(body, "application/json", int64(len(body)-1)), &o), http.StatusRequestEntityTooLarge)
	}
	var l T
	if errL := decode(jsonRequest(body, "application/json", int64(len(body))), &l); (errL == nil) != (err == nil) {
		t.Fatalf("%s: at the body limit decode gives %v, without a limit %v; body %q", typ, errL, err, body)
	}
}

// jsonRequest is a POST with body and content type ct, its body limited to
// limit bytes when limit >= 0 (as the server's middleware does).
func jsonRequest(body []byte, ct string, limit int64) *http.Request {
	r := httptest.NewRequest("POST", "/v1/tools/notes_read_file", bytes.NewReader(body))
	r.Header.Set("Content-Type", ct)
	if limit >= 0 {
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, limit)
	}
	return r
}

// decodeLeaks are fragments of Go or internal text that no decode error
// message may carry, unless the body itself put them there (a message may
// quote a key or a number of the body).
var decodeLeaks = []string{
	"json:", "json.", "sql", "SQL", "Go value", "Go struct", "unmarshal", "Unmarshal", "invalid character",
	"reflect", "runtime", "goroutine", "panic", "int64", "float64", "uint", "interface {", "map[", "[]",
	"toolCallRequest", "usageRequest", "CallContext", "AttachRequest", "SyncRequest", "BudgetInput", "TaskRef",
	"RawMessage", "memory.", "api.", "http.", "MaxBytesError",
}

// checkDecodeError checks that err is a safe *httpError with status want.
func checkDecodeError(t *testing.T, typ string, body []byte, err error, want int) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: decode accepted a body it must refuse with %d: %q", typ, want, body)
	}
	var he *httpError
	if !errors.As(err, &he) {
		t.Fatalf("%s: decode error %T %v is not an *httpError; body %q", typ, err, err, body)
	}
	code, st := status(err)
	if st != want {
		t.Fatalf("%s: decode error %q has status %d (%s), want %d; body %q", typ, he.message, st, code, want, body)
	}
	envSt, env := ErrorEnvelope(err)
	b, merr := json.Marshal(env)
	if merr != nil || envSt != st {
		t.Fatalf("%s: error envelope %d %v", typ, envSt, merr)
	}
	var e struct {
		Error apiError `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Message != he.message {
		t.Fatalf("%s: envelope %s does not carry the message %q", typ, b, he.message)
	}
	msg := he.message
	if msg == "" || strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("%s: decode error message %q is not one line; body %q", typ, msg, body)
	}
	source := bodyText(body)
	for _, l := range decodeLeaks {
		if strings.Contains(msg, l) && !strings.Contains(source, l) {
			t.Fatalf("%s: decode error message %q carries internal text %q; body %q", typ, msg, l, body)
		}
	}
}

// bodyText is the body followed by every string and number it spells, as
// far as it can be tokenized: the text a message may quote from it.
func bodyText(body []byte) string {
	var b strings.Builder
	b.Write(body)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return b.String()
		}
		switch t := tok.(type) {
		case string:
			b.WriteString("\x00" + t + "\x00" + strconv.Quote(t))
		case json.Number:
			b.WriteString("\x00" + t.String())
		}
	}
}

// checkRoundTrip checks that v, decoded from body, holds exactly what body
// says and survives encoding and decoding unchanged.
func checkRoundTrip[T any](t *testing.T, typ string, body []byte, v T) {
	t.Helper()
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: re-encoding %+v: %v", typ, v, err)
	}
	var again T
	if err := decode(jsonRequest(enc, "application/json", -1), &again); err != nil {
		t.Fatalf("%s: decode of the re-encoded %s: %v (body %q)", typ, enc, err, body)
	}
	enc2, err := json.Marshal(again)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("%s: round trip changed the value:\n  first  %s\n  second %s\n  body %q", typ, enc, enc2, body)
	}
	if !reflect.DeepEqual(rawFree(v), rawFree(again)) {
		t.Fatalf("%s: round trip changed the value: %+v then %+v; body %q", typ, v, again, body)
	}
	got, want := generic(t, body), generic(t, enc)
	if path, ok := subsumes(got, want, "$"); !ok {
		t.Fatalf("%s: accepted body %q is not what was decoded (%s):\n  decoded %s", typ, body, path, enc)
	}
}

// rawFree returns v for DeepEqual, or nil for the types that hold raw
// JSON (their formatting may change; the encoded comparison covers them).
func rawFree(v any) any {
	switch v.(type) {
	case toolCallRequest, memory.SyncRequest:
		return nil
	}
	return v
}

// generic decodes one JSON value with numbers kept as text.
func generic(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("generic decode of %q: %v", b, err)
	}
	return v
}

// subsumes reports whether everything body sets is in decoded, with the
// same key (exactly) and the same value; null in body matches anything
// (it leaves a field at its zero value). It returns where it differs.
func subsumes(body, decoded any, path string) (string, bool) {
	switch b := body.(type) {
	case nil:
		return "", true
	case map[string]any:
		d, ok := decoded.(map[string]any)
		if !ok {
			return path + " is an object in the body only", false
		}
		for k, bv := range b {
			dv, ok := d[k]
			if !ok {
				return path + "." + strconv.Quote(k) + " is not a field of the request (it was read as another field or dropped)", false
			}
			if p, ok := subsumes(bv, dv, path+"."+strconv.Quote(k)); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		d, ok := decoded.([]any)
		if !ok || len(d) != len(b) {
			return path + " is an array of another length", false
		}
		for i := range b {
			if p, ok := subsumes(b[i], d[i], path+"["+strconv.Itoa(i)+"]"); !ok {
				return p, false
			}
		}
		return "", true
	case json.Number:
		d, ok := decoded.(json.Number)
		if !ok {
			return path + " is a number in the body only", false
		}
		x, errX := strconv.ParseFloat(b.String(), 64)
		y, errY := strconv.ParseFloat(d.String(), 64)
		if errY != nil || x != y || errX != nil && x != 0 { // an underflow reads as 0
			return path + ": number " + b.String() + " was read as " + d.String(), false
		}
		return "", true
	default: // string, bool
		if body != decoded {
			return path + " has another value", false
		}
		return "", true
	}
}

// TestDecodeMessages: the messages of the refusals decode makes itself,
// before json.Unmarshal sees the body.
func TestDecodeMessages(t *testing.T) {
	for body, want := range map[string]string{
		``:                          "the request body is empty; send a JSON object",
		" \n\t":                     "the request body is empty; send a JSON object",
		`{} {}`:                     "the request body has data after its JSON value",
		`{"context":{}} 1`:          "the request body has data after its JSON value",
		`"a" "b"`:                   "the request body has data after its JSON value",
		`{}}`:                       "the request body is not valid JSON",
		`{"contexts":{}}`:           `unknown field "contexts"`,
		`{"context":{"x":1}}`:       `unknown field "x"`,
		`{"Context":{}}`:            `unknown field "Context" (field names are case-sensitive: "context")`,
		`{"context":1,"context":2}`: `the request body has the key "context" twice in one object`,
	} {
		var v toolCallRequest
		err := decode(jsonRequest([]byte(body), "application/json", -1), &v)
		var he *httpError
		if !errors.As(err, &he) || he.message != want {
			t.Errorf("decode(%q) = %v, want %q", body, err, want)
		}
	}
}
