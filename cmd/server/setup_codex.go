package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// memoryd setup codex writes, in $CODEX_HOME, memoryd's MCP server and the
// trust of its hooks into config.toml and its hook groups into hooks.json
// (docs/codex.md §2, §3, §11). config.toml is edited by table: memoryd's
// own tables are cut out of the text and written anew at its end, and the
// file must decode the same as before apart from them, or nothing is
// written, so the user's comments and layout stay byte for byte.

// codexHookEvents are the events memoryd's hook runs on in Codex, with the
// matcher of each ("" for every occurrence). Hooks see memoryd's MCP tools
// as mcp__memoryd__<tool>.
var codexHookEvents = []struct{ event, matcher string }{
	{"PreToolUse", "^mcp__memoryd__"},
	{"SessionStart", ""},
	{"PreCompact", ""},
	{"Stop", ""},
	{"SubagentStop", ""},
	{"SessionEnd", ""},
}

// codexEnvVars are the variables Codex passes on to memoryd mcp, whose
// environment it otherwise reduces to HOME, PATH and a few more
// (docs/codex.md §2). An unset one is left unset.
var codexEnvVars = []string{"MEMORYD_TOKEN", "MEMORYD_DB", "MEMORYD_ADDR", "XDG_DATA_HOME", "MEMORYD_AUTOSTART"}

// ourCodexHook matches the commands memoryd's setup writes into hooks.json,
// whatever binary and address they name.
var ourCodexHook = regexp.MustCompile(`["']? hook codex( |$)`)

// codexHome is the folder of Codex's settings, $CODEX_HOME, else ~/.codex,
// as an absolute path with no symlink in it.
func codexHome(getenv func(string) string) (string, error) {
	home := getenv("CODEX_HOME")
	if home == "" {
		h := getenv("HOME")
		if h == "" {
			return "", errors.New("neither CODEX_HOME nor HOME is set: they locate Codex's settings")
		}
		home = filepath.Join(h, ".codex")
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return "", err
	}
	// Codex names hooks.json in a trust key by the real path of its
	// folder, symlinks resolved: a key through a symlink trusts nothing.
	// Resolve the part of the path that exists.
	rest := ""
	for dir := home; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), nil
		}
		if filepath.Dir(dir) == dir {
			return home, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// setupCodex writes memoryd into Codex's settings in home, or takes it out
// when exe is "": memoryd mcp on addr as the MCP server memoryd, and the
// hook memoryd hook codex on codexHookEvents, trusted. Both files are
// checked before either is written.
func setupCodex(in *invocation, home, exe, addr string) error {
	configPath, hooksPath := filepath.Join(home, "config.toml"), filepath.Join(home, "hooks.json")
	configSrc, err := readIfExists(configPath)
	if err != nil {
		return err
	}
	hooksSrc, err := readIfExists(hooksPath)
	if err != nil {
		return err
	}
	command := ""
	var server map[string]any
	if exe != "" {
		command = shellQuote(exe) + " hook codex --addr " + addr
		server = map[string]any{
			"command":                     exe,
			"args":                        []any{"mcp", "--addr", addr, "--tool-names", "codex"},
			"default_tools_approval_mode": "approve", // else codex exec refuses every call
			"env_vars":                    toAnySlice(codexEnvVars),
		}
	}
	hooksOut, trust, err := editCodexHooks(hooksSrc, hooksPath, command)
	if err != nil {
		return err
	}
	configOut, err := editCodexConfig(configSrc, configPath, server, trust)
	if err != nil {
		return err
	}
	var files []pendingFile
	if hooksOut != nil && !bytes.Equal(hooksOut, hooksSrc) {
		files = append(files, pendingFile{hooksPath, hooksOut})
	}
	if !bytes.Equal(configOut, configSrc) {
		files = append(files, pendingFile{configPath, configOut})
	}
	if len(files) > 0 {
		if err := os.MkdirAll(home, 0o700); err != nil {
			return err
		}
		if err := replaceFiles(files); err != nil {
			return err
		}
	}
	if exe == "" {
		fmt.Fprintf(in.stdout, "memoryd is out of Codex's settings (%s, %s)\n", configPath, hooksPath)
		return nil
	}
	events := make([]string, len(codexHookEvents))
	for i, h := range codexHookEvents {
		events[i] = h.event
	}
	fmt.Fprintf(in.stdout, "Codex uses memoryd on %s:\n", addr)
	fmt.Fprintf(in.stdout, "  MCP server \"memoryd\" (memoryd mcp, its tools approved) in %s\n", configPath)
	fmt.Fprintf(in.stdout, "  hooks (memoryd hook codex) on %s in %s, trusted in %s\n", strings.Join(events, ", "), hooksPath, configPath)
	start := ""
	if autostart(in.getenv, addr) {
		start = ", or the MCP server or a hook starts one there"
	}
	fmt.Fprintf(in.stdout, "Codex reads them when it next starts. A memoryd must serve on %s (memoryd serve)%s. Undo with: memoryd setup codex --remove\n", addr, start)
	return nil
}

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// readIfExists reads a file, or returns nil when there is none.
func readIfExists(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// codexTrust is what an edit of hooks.json asks of the trust entries in
// config.toml, by key (codexTrustKey).
type codexTrust struct {
	drop map[string]bool   // memoryd's former handlers
	move map[string]string // the user's handlers whose index changed: old key → new key
	add  []codexTrustEntry // memoryd's new handlers
}

type codexTrustEntry struct{ key, hash string }

// targets are the keys the edit gives a handler: an entry already there
// that is not moving away belongs to no handler any more.
func (t codexTrust) targets() map[string]bool {
	m := map[string]bool{}
	for _, k := range t.move {
		m[k] = true
	}
	for _, e := range t.add {
		m[e.key] = true
	}
	return m
}

// editCodexHooks takes memoryd's handlers out of hooks.json (src, nil when
// there is none) and, when command is not "", appends memoryd's groups. It
// returns the new file, nil when there is nothing to write, and the
// trust entries that change: the indexes in a key are those of the final
// document.
func editCodexHooks(src []byte, path, command string) ([]byte, codexTrust, error) {
	t := codexTrust{drop: map[string]bool{}, move: map[string]string{}}
	notObject := fmt.Errorf("%s is not a JSON object with an object of hook events, so memoryd leaves it alone: fix it and run setup again", path)
	doc := map[string]any{}
	if len(bytes.TrimSpace(src)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(src))
		dec.UseNumber() // numbers stay as written
		if err := dec.Decode(&doc); err != nil || doc == nil {
			return nil, t, notObject
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, t, notObject
		}
	}
	hooks := map[string]any{}
	if v, ok := doc["hooks"]; ok {
		if hooks, ok = v.(map[string]any); !ok {
			return nil, t, notObject
		}
	}
	for _, event := range slices.Sorted(maps.Keys(hooks)) {
		groups, ok := hooks[event].([]any)
		if !ok {
			return nil, t, fmt.Errorf("%s: the hooks of %s are not a list, so memoryd leaves the file alone: fix it and run setup again", path, event)
		}
		var kept []any
		for gi, g := range groups {
			gm, _ := g.(map[string]any)
			list, _ := gm["hooks"].([]any)
			var others []any
			for hi, h := range list {
				hm, _ := h.(map[string]any)
				c, _ := hm["command"].(string)
				old := codexTrustKey(path, event, gi, hi)
				if ourCodexHook.MatchString(c) {
					t.drop[old] = true
					continue
				}
				if k := codexTrustKey(path, event, len(kept), len(others)); k != old {
					t.move[old] = k
				}
				others = append(others, h)
			}
			if len(others) == len(list) {
				kept = append(kept, g)
				continue
			}
			if len(others) > 0 {
				gm["hooks"] = others
				kept = append(kept, gm)
			}
		}
		if len(kept) == 0 && len(groups) > 0 {
			delete(hooks, event)
		} else {
			hooks[event] = kept
		}
	}
	if command == "" && len(t.drop) == 0 {
		return nil, t, nil // nothing of memoryd's: the file stays as written
	}
	if command != "" {
		for _, h := range codexHookEvents {
			handler := codexHookHandler{Type: "command", Command: command, Timeout: codexHookTimeout}
			switch h.event {
			case "SessionStart":
				handler.AdditionalContextLimit = new(int) // 0: the bootstrap is not cut
			case "SessionEnd":
				handler.Timeout = codexSessionEndTimeout // Codex's most, which it hashes
			}
			group := codexHookGroup{Hooks: []codexHookHandler{handler}}
			if h.matcher != "" {
				group.Matcher = &h.matcher
			}
			// The group goes in as JSON values, and its hash is taken
			// from them: what is written is what is hashed.
			var gm map[string]any
			if err := roundTrip(group, &gm); err != nil {
				return nil, t, err
			}
			var written codexHookGroup
			if err := roundTrip(gm, &written); err != nil {
				return nil, t, err
			}
			list, _ := hooks[h.event].([]any)
			key := codexTrustKey(path, h.event, len(list), 0)
			t.add = append(t.add, codexTrustEntry{key, codexTrustHash(h.event, written, written.Hooks[0])})
			hooks[h.event] = append(list, gm)
		}
	}
	doc["hooks"] = hooks
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, t, err
	}
	return out.Bytes(), t, nil
}

// roundTrip converts v into out through JSON, numbers kept as written.
func roundTrip(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(out)
}

// tomlTable is a [table] or [[array table]] of a TOML file, as written.
type tomlTable struct {
	key   []string
	raw   []unstable.Range // each part of the key, as written
	start int              // the header line's first byte
	end   int              // past the line of its last key/value, or of its header
}

// tomlTables finds the tables of a TOML document.
func tomlTables(src []byte) ([]tomlTable, error) {
	var p unstable.Parser
	p.Reset(src)
	var tables []tomlTable
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var t tomlTable
			for it := e.Key(); it.Next(); {
				t.key = append(t.key, string(it.Node().Data))
				t.raw = append(t.raw, it.Node().Raw)
			}
			t.start = bytes.LastIndexByte(src[:t.raw[0].Offset], '\n') + 1
			last := t.raw[len(t.raw)-1]
			t.end = lineEnd(src, int(last.Offset+last.Length))
			tables = append(tables, t)
		case unstable.KeyValue:
			if n := len(tables); n > 0 {
				tables[n-1].end = lineEnd(src, int(e.Raw.Offset+e.Raw.Length))
			}
		}
	}
	return tables, p.Error()
}

// lineEnd is the offset past the newline of the line holding offset i.
func lineEnd(src []byte, i int) int {
	if n := bytes.IndexByte(src[i:], '\n'); n >= 0 {
		return i + n + 1
	}
	return len(src)
}

// editCodexConfig edits config.toml (src, nil when there is none): it cuts
// out [mcp_servers.memoryd] and its sub-tables and the trust entries that
// t drops, re-keys those it moves, and when server is not nil appends
// [mcp_servers.memoryd] and t's new entries. The result must decode as src
// does with exactly those changes, or it is refused.
func editCodexConfig(src []byte, path string, server map[string]any, t codexTrust) ([]byte, error) {
	// want is what the file must decode to once edited.
	want := map[string]any{}
	if err := toml.Unmarshal(src, &want); err != nil {
		return nil, notTOML(path, err)
	}
	tables, err := tomlTables(src)
	if err != nil {
		return nil, notTOML(path, err)
	}
	targets := t.targets()
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	for _, tb := range tables {
		switch {
		case len(tb.key) >= 2 && tb.key[0] == "mcp_servers" && tb.key[1] == "memoryd":
		case len(tb.key) == 3 && tb.key[0] == "hooks" && tb.key[1] == "state":
			k := tb.key[2]
			if to, ok := t.move[k]; ok {
				edits = append(edits, edit{int(tb.raw[2].Offset), int(tb.raw[2].Offset + tb.raw[2].Length), tomlString(to)})
				continue
			}
			if !t.drop[k] && !targets[k] {
				continue
			}
		default:
			continue
		}
		// Cut the table with the one blank line before it, which
		// setup writes there.
		start := tb.start
		if start > 0 {
			prev := bytes.LastIndexByte(src[:start-1], '\n') + 1
			if len(bytes.TrimSpace(src[prev:start])) == 0 {
				start = prev
			}
		}
		if n := len(edits); n > 0 && edits[n-1].end > start {
			start = edits[n-1].end
		}
		edits = append(edits, edit{start, tb.end, ""})
	}
	var out []byte
	at := 0
	for _, e := range edits {
		out = append(out, src[at:e.start]...)
		out = append(out, e.text...)
		at = e.end
	}
	out = append(out, src[at:]...)

	if servers, ok := want["mcp_servers"].(map[string]any); ok {
		delete(servers, "memoryd")
	}
	hooks, _ := want["hooks"].(map[string]any)
	state, _ := hooks["state"].(map[string]any)
	moved := map[string]any{}
	for k, v := range state {
		if to, ok := t.move[k]; ok {
			moved[to] = v
			delete(state, k)
		} else if t.drop[k] || targets[k] {
			delete(state, k)
		}
	}
	for k, v := range moved {
		state[k] = v
	}

	if server != nil {
		if len(out) > 0 {
			if out[len(out)-1] != '\n' {
				out = append(out, '\n')
			}
			out = append(out, '\n')
		}
		out = append(out, codexConfigTables(server, t.add)...)
		servers, _ := want["mcp_servers"].(map[string]any)
		if servers == nil {
			servers = map[string]any{}
			want["mcp_servers"] = servers
		}
		servers["memoryd"] = server
		if hooks == nil {
			hooks = map[string]any{}
			want["hooks"] = hooks
		}
		if state == nil {
			state = map[string]any{}
			hooks["state"] = state
		}
		for _, e := range t.add {
			state[e.key] = map[string]any{"trusted_hash": e.hash}
		}
	}

	got := map[string]any{}
	if err := toml.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(withoutEmptyCodexTables(got), withoutEmptyCodexTables(want)) {
		return nil, fmt.Errorf("%s holds memoryd's MCP server or the trust of its hooks (or of a hook whose index changes) "+
			"other than as a table of its own ([mcp_servers.memoryd], [hooks.state.\"…\"]), such as dotted keys or an inline table, "+
			"so memoryd cannot edit it and leaves the file alone: write those as tables, or take them out, and run setup again", path)
	}
	return out, nil
}

func notTOML(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		err = fmt.Errorf("line %d, column %d: %w", row, col, err)
	}
	return fmt.Errorf("%s is not valid TOML (%v), so memoryd leaves it alone: fix it and run setup again", path, err)
}

// withoutEmptyCodexTables drops mcp_servers, hooks.state and hooks when
// empty, as cutting memoryd's tables may leave them or not.
func withoutEmptyCodexTables(doc map[string]any) map[string]any {
	if s, ok := doc["mcp_servers"].(map[string]any); ok && len(s) == 0 {
		delete(doc, "mcp_servers")
	}
	if h, ok := doc["hooks"].(map[string]any); ok {
		if s, ok := h["state"].(map[string]any); ok && len(s) == 0 {
			delete(h, "state")
		}
		if len(h) == 0 {
			delete(doc, "hooks")
		}
	}
	return doc
}

// codexConfigTables is the text of memoryd's tables in config.toml.
func codexConfigTables(server map[string]any, add []codexTrustEntry) string {
	var b strings.Builder
	b.WriteString("[mcp_servers.memoryd]\n")
	for _, k := range []string{"command", "args", "default_tools_approval_mode", "env_vars"} {
		b.WriteString(k + " = " + tomlValue(server[k]) + "\n")
	}
	for _, e := range add {
		b.WriteString("\n[hooks.state." + tomlString(e.key) + "]\ntrusted_hash = " + tomlString(e.hash) + "\n")
	}
	return b.String()
}

// tomlValue writes a string or a list of strings as TOML.
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case []any:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = tomlValue(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	panic(fmt.Sprintf("tomlValue: %T", v))
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// pendingFile is a file to replace and its new content.
type pendingFile struct {
	path string
	data []byte
}

// replaceFiles writes each file to a temporary file beside it, keeping
// its mode (0600 for a new one), then renames them all into place, so a
// failure before the renames changes nothing. A symlinked file is
// written where it points.
func replaceFiles(files []pendingFile) error {
	var temps []string
	defer func() {
		for _, t := range temps {
			os.Remove(t)
		}
	}()
	targets := make([]string, len(files))
	for i, f := range files {
		target, mode := f.path, fs.FileMode(0o600)
		if t, err := filepath.EvalSymlinks(f.path); err == nil {
			target = t
		}
		if fi, err := os.Stat(target); err == nil {
			mode = fi.Mode().Perm()
		}
		tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".memoryd-*")
		if err != nil {
			return err
		}
		temps = append(temps, tmp.Name())
		_, err = tmp.Write(f.data)
		if err == nil {
			err = tmp.Chmod(mode)
		}
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		targets[i] = target
	}
	for i := range files {
		if err := os.Rename(temps[i], targets[i]); err != nil {
			return err
		}
	}
	return nil
}
