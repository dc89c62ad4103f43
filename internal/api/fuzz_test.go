package api

import (
	"bytes"
	"net/http/httptest"
	"testing"
)

// FuzzDecode feeds arbitrary bodies to the request decoder: it must never
// panic, and must refuse what it cannot represent faithfully.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"context":{"task_id":"t","agent":"/root"},"arguments":{"path":"a"}}`,
		`{"a":1,"a":2}`, `{"context":{"agent":"/root","agent":"/x"}}`, `[[[[[[[[[[]]]]]]]]]]`,
		`{"arguments":{"n":1e999999}}`, "{\"x\":\"\xff\"}", `{} {}`, `{"context":`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/tools/notes_read_file", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		var req toolCallRequest
		err := decode(r, &req)
		if err == nil && checkJSON(body) != nil {
			t.Fatalf("decode accepted a body checkJSON refuses: %q", body)
		}
	})
}
