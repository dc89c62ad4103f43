package main

import (
	"encoding/json"
	"testing"
)

// TestCodexTrustHash: the trust hashes of three hooks equal those the real
// Codex 0.169.0 wrote into config.toml when its TUI's "Trust all" trusted
// them (docs/codex.md §3; the hooks as captured, their commands verbatim
// since the hashes cover them): with a matcher, a status message and a
// timeout; with the default timeout; with no matcher.
func TestCodexTrustHash(t *testing.T) {
	const hooks = `{"hooks":{
 "SessionStart":[{"matcher":"startup|resume|clear|compact","hooks":[{"type":"command","command":"/tmp/codex-samples/hook.sh SessionStart","timeout":30,"statusMessage":"memoryd bootstrap"}]}],
 "PreToolUse":[{"matcher":"^mcp__probe__.*","hooks":[{"type":"command","command":"/tmp/codex-samples/hook.sh PreToolUse"}]}],
 "Stop":[{"hooks":[{"type":"command","command":"/tmp/codex-samples/hook.sh Stop","timeout":600}]}]
}}`
	want := map[string]string{
		"/h/hooks.json:session_start:0:0": "sha256:10bf72c3ff684ecf198d40ab1054eeaf9b80544f6f6003fc7a9b0f581c4f5d55",
		"/h/hooks.json:pre_tool_use:0:0":  "sha256:da53ea78510261f2558c93d3697f99d0f8e0bb897dbaffa13f0f6068e474b740",
		"/h/hooks.json:stop:0:0":          "sha256:20a035090d9884b4eb846871c957d5bdf8e7cd01008fda00217f7c7b781265ad",
	}
	var file struct {
		Hooks map[string][]codexHookGroup `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(hooks), &file); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for event, groups := range file.Hooks {
		for gi, g := range groups {
			for hi, h := range g.Hooks {
				got[codexTrustKey("/h/hooks.json", event, gi, hi)] = codexTrustHash(event, g, h)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d hashes, want %d: %v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s (Codex's)", k, got[k], w)
		}
	}
	for ev, label := range map[string]string{"SessionStart": "session_start", "PreToolUse": "pre_tool_use", "Stop": "stop", "PostCompact": "post_compact", "SubagentStop": "subagent_stop"} {
		if l := codexEventLabel(ev); l != label {
			t.Errorf("%s: label %s, want %s", ev, l, label)
		}
	}
}
