package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
)

// ProofLabel starts the message a server's proof MACs (SECURITY.md):
// HMAC-SHA256 keyed by the token over ProofLabel, the client's nonce, a
// newline and the address the connection reached ("127.0.0.1:7411").
const ProofLabel = "memoryd proof v1\n"

// Proof is the MAC of nonce and the server's address under token.
func Proof(token, nonce, address string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(ProofLabel + nonce + "\n" + address))
	return hex.EncodeToString(m.Sum(nil))
}

// validNonce: 32 to 128 hexadecimal characters (16 to 64 random bytes).
func validNonce(s string) bool {
	if len(s) < 32 || len(s) > 128 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// handleProof handles "GET /v1/proof?nonce=<hex>" (no token): the server
// proves that it holds the token before a client sends it, so that a
// program squatting memoryd's port learns neither the token nor any data.
// The MAC covers the local address of the connection, as this server
// listens on it: a squatter that relays the nonce to a memoryd listening
// elsewhere gets a proof for that other address, which the client refuses.
func handleProof(token string, log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		nonce := r.URL.Query().Get("nonce")
		if !validNonce(nonce) {
			writeError(w, r, log, httpErr(errBadRequest, "nonce must be 32 to 128 hexadecimal characters"))
			return
		}
		local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if !ok || token == "" {
			writeError(w, r, log, httpErr(errUnauthenticated, "this server has no token to prove"))
			return
		}
		address := local.String()
		encode(w, http.StatusOK, map[string]any{"service": "memoryd", "address": address, "proof": Proof(token, nonce, address)})
	}
}
