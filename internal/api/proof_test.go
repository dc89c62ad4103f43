package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestProof: GET /v1/proof answers, without a token, the MAC of the
// client's nonce and the address it reached under the server's token; a
// client checks it before it sends the token (SECURITY.md, port squatting).
func TestProof(t *testing.T) {
	ts := newTestServer(t, nil)
	nonce := strings.Repeat("ab", 32)
	req := ts.request(t, "GET", "/v1/proof?nonce="+nonce, "")
	req.Header.Del("Authorization")
	st, _, b := ts.send(t, req)
	if st != http.StatusOK {
		t.Fatalf("status %d, body %s", st, b)
	}
	var got struct{ Service, Address, Proof string }
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ts.URL)
	if got.Service != "memoryd" || got.Address != u.Host {
		t.Errorf("service %q, address %q; want memoryd, %s", got.Service, got.Address, u.Host)
	}
	if got.Proof != Proof(testToken, nonce, u.Host) {
		t.Errorf("proof %s is not the MAC of the nonce and %s under the token", got.Proof, u.Host)
	}
	if got.Proof == Proof("another token", nonce, u.Host) || got.Proof == Proof(testToken, nonce, "127.0.0.1:1") {
		t.Error("the proof does not depend on the token and the address")
	}
	for _, bad := range []string{"", "abc", strings.Repeat("zz", 16), strings.Repeat("a", 130)} {
		req := ts.request(t, "GET", "/v1/proof?nonce="+bad, "")
		if st, _, b := ts.send(t, req); st != http.StatusBadRequest {
			t.Errorf("nonce %q: status %d, body %s; want 400", bad, st, b)
		}
	}
}
