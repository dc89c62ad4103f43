package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
)

// Codex runs a hook of the user's only once it is trusted: config.toml
// holds, for each handler, [hooks.state."<file>:<event>:<group>:<handler>"]
// trusted_hash = "sha256:…", the hash of what the handler is. An untrusted
// hook is skipped silently in codex exec (docs/codex.md §3), so memoryd's
// setup writes the hashes of the hooks it writes (memoryd setup codex,
// setup_codex.go).

// codexHookGroup is one group of a hook event in Codex's hooks.json.
type codexHookGroup struct {
	Matcher *string            `json:"matcher,omitempty"`
	Hooks   []codexHookHandler `json:"hooks"`
}

// codexHookHandler is a command hook of a group.
type codexHookHandler struct {
	Type                   string  `json:"type"`
	Command                string  `json:"command"`
	Timeout                int     `json:"timeout,omitempty"` // seconds; 0 is Codex's default
	Async                  bool    `json:"async,omitempty"`
	StatusMessage          *string `json:"statusMessage,omitempty"`
	AdditionalContextLimit *int    `json:"additionalContextLimit,omitempty"`
}

// Codex's hook timeouts, in seconds: its default, and the most it allows a
// SessionEnd hook (a longer one is cut to it, and hashed so).
const (
	codexHookTimeout       = 600
	codexSessionEndTimeout = 3
)

// codexEventLabel is the name of a hook event in a trust key:
// PreToolUse is pre_tool_use.
func codexEventLabel(event string) string {
	var b strings.Builder
	for i, r := range event {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// codexTrustKey is the key of a handler's trust entry: the hooks file, the
// event, the group's and the handler's indexes.
func codexTrustKey(file, event string, group, handler int) string {
	return file + ":" + codexEventLabel(event) + ":" + strconv.Itoa(group) + ":" + strconv.Itoa(handler)
}

// codexTrustHash is the trusted_hash Codex 0.169 gives handler h of group
// g of event: "sha256:" and the SHA-256 of the compact JSON, keys sorted,
// of {"event_name","matcher"?,"hooks":[the handler with its defaults]}.
// It matched the hashes Codex's own "Trust all" wrote (cmd/server's test).
func codexTrustHash(event string, g codexHookGroup, h codexHookHandler) string {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = codexHookTimeout
	}
	if event == "SessionEnd" {
		timeout = min(timeout, codexSessionEndTimeout)
	}
	handler := map[string]any{"type": h.Type, "command": h.Command, "timeout": timeout, "async": h.Async}
	if h.StatusMessage != nil {
		handler["statusMessage"] = *h.StatusMessage
	}
	if h.AdditionalContextLimit != nil {
		handler["additionalContextLimit"] = *h.AdditionalContextLimit
	}
	identity := map[string]any{"event_name": codexEventLabel(event), "hooks": []any{handler}}
	if g.Matcher != nil {
		identity["matcher"] = *g.Matcher
	}
	// encoding/json sorts map keys; Codex (serde_json) escapes no HTML.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(identity); err != nil {
		panic(err) // strings, ints and bools always encode
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}
