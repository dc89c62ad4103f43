package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
)

// ProofLabel starts the message a server's proof MACs, before the
// client's nonce, a newline and the address the connection reached.
const ProofLabel = "memoryd proof v1\n"

// Proof returns the HMAC-SHA256 of nonce and the server's address keyed
// by token.
func Proof(token, nonce, address string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(ProofLabel + nonce + "\n" + address))
	return hex.EncodeToString(m.Sum(nil))
}

// validNonce reports whether s is a nonce of 16 to 64 bytes in hex.
func validNonce(s string) bool {
	if len(s) < 32 || len(s) > 128 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// handleProof handles "GET /v1/proof" without the token. The server proves
// it holds the token before a client sends it, as SECURITY.md describes.
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
		// The MAC covers the connection's local address, so a squatter
		// relaying the nonce to a memoryd elsewhere gets a proof the client
		// refuses.
		address := local.String()
		encode(w, http.StatusOK, map[string]any{"service": "memoryd", "address": address, "proof": Proof(token, nonce, address)})
	}
}
