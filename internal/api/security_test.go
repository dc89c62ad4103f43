package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

// Token checks: TestAuthRequired (api_test.go) walks the chi route table
// and refuses a missing, wrong, truncated, prefixed or mis-schemed token on
// every route but /healthz, so a route added outside the token group fails
// it. The comparison is constant-time: requireToken (middleware.go)
// compares the whole "Bearer <token>" header with crypto/subtle's
// ConstantTimeCompare, which only reveals the length, and the token's
// length is public (64 hex digits). A timing test could not show this
// reliably, so it rests on that code review. The token file's mode 0600
// and the data folder's 0700 are checked by cmd/server
// TestServeCreatesTokenAndFolder.

// TestForeignRefusedOnEveryRoute: every route of the route table, with a
// valid token, refuses a request carrying an Origin header or a
// non-loopback Host with 403, before anything runs.
func TestForeignRefusedOnEveryRoute(t *testing.T) {
	ts := newTestServer(t, nil)
	routes := ts.walkRoutes(t)
	if len(routes) < 15 {
		t.Fatalf("the route table has %d routes", len(routes))
	}
	for _, rt := range routes {
		for _, foreign := range []struct {
			name string
			edit func(*http.Request)
		}{
			{"origin", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }},
			{"null origin", func(r *http.Request) { r.Header.Set("Origin", "null") }},
			{"rebound host", func(r *http.Request) { r.Host = "evil.example:7411" }},
		} {
			req := ts.request(t, rt.method, rt.path, rt.body)
			foreign.edit(req)
			st, h, b := ts.send(t, req)
			if rt.method == "HEAD" {
				if st != http.StatusForbidden {
					t.Errorf("%s %s with %s: %d, want 403", rt.method, rt.path, foreign.name, st)
				}
				continue
			}
			checkError(t, rt.method+" "+rt.path+" "+foreign.name, st, h, b, http.StatusForbidden, "forbidden")
		}
	}
	if p := ts.position(t); p != 0 {
		t.Errorf("refused requests wrote %d events", p)
	}
}

// isoTask is a task with secrets in every agent's notes and history.
type isoTask struct {
	name     string
	root     memory.CallContext
	children []memory.CallContext // a named child and an automatic one
}

func (it isoTask) agents() []memory.CallContext {
	return append([]memory.CallContext{it.root}, it.children...)
}

func isoSecret(task, agent, kind string) string {
	return fmt.Sprintf("SECRET-%s-%s-%s", task, strings.ReplaceAll(strings.TrimPrefix(agent, "/"), "/", "_"), kind)
}

func isoSetup(tb testing.TB, ts *testServer, name, child string) isoTask {
	tb.Helper()
	it := isoTask{name: name, root: ts.attach(tb, "/sessions/"+name+".jsonl")}
	for _, agentName := range []string{child, ""} {
		body := fmt.Sprintf(`{"session_key":"/sessions/%s-%s.jsonl","task":{"task_id":%q,"parent_agent":"/root","agent_name":%q}}`,
			name, agentName, it.root.TaskID, agentName)
		var res attachResponse
		ts.mustJSON(tb, "POST", "/v1/sessions/attach", body, &res)
		it.children = append(it.children, memory.CallContext{TaskID: res.TaskID, Agent: res.Agent})
	}
	for _, cc := range it.agents() {
		for _, p := range []string{"secret.md", "dir/secret.md"} {
			args, _ := json.Marshal(map[string]string{"path": p, "text": isoSecret(name, cc.Agent, "note") + "\n"})
			if st, b := ts.tool(tb, "notes_write_file", cc, string(args)); st != http.StatusOK {
				tb.Fatalf("write %s: %d %s", p, st, b)
			}
		}
		ctx, _ := json.Marshal(cc)
		entry := fmt.Sprintf(`{"type":"message","id":"e1","parentId":null,"timestamp":"2026-12-02T10:00:00.000Z","message":{"role":"user","content":%q,"timestamp":1}}`,
			isoSecret(name, cc.Agent, "hist"))
		if st, b := ts.do(tb, "POST", "/v1/history/sync", `{"context":`+string(ctx)+`,"entries":[`+entry+`],"branch":["e1"]}`); st != http.StatusOK {
			tb.Fatalf("sync: %d %s", st, b)
		}
	}
	return it
}

// isoSpellings are the ways a caller might name the agents of victim (or
// their notes) in agent_name, path, prefix and path_prefix.
func isoSpellings(victim isoTask) (agents, paths []string) {
	agents = []string{"/root", "", "root", "../root", "/root/", "/root/."}
	for _, cc := range victim.children {
		a := cc.Agent // /root/<name>
		n := strings.TrimPrefix(a, "/root/")
		agents = append(agents,
			a, n, "../"+n, "./"+n, "/root/../root/"+n, "/root/./"+n, strings.ToUpper(a), "/root/"+strings.ToUpper(n[:1])+n[1:],
			url.PathEscape(a), strings.ReplaceAll(a, "/", "%2F"), "/root//"+n, a+"/", a+"//", "//root/"+n,
			"/root/x/../"+n, a+"/child", a+"/notes", a+"\u200b", " "+a, a+" ", "/root/"+n+"/..")
		for _, p := range []string{"secret.md", "dir/secret.md", "dir/", ""} {
			paths = append(paths,
				a+"/notes/"+p, "/root/../root/"+n+"/notes/"+p, "../"+n+"/notes/"+p, n+"/notes/"+p,
				strings.ToUpper(a)+"/notes/"+p, url.PathEscape(a+"/notes/"+p), "/root//"+n+"/notes/"+p,
				a+"/notes//"+p, a+"/notes/./"+p, a+"/notes/../notes/"+p, "/root/notes/../../"+n+"/notes/"+p,
				a+"/child/notes/"+p, a+"/NOTES/"+p, "/root/"+n+"/notes/"+p+"/")
		}
	}
	paths = append(paths, "/root/notes/secret.md", "/root/notes/", "/root/notes", "/root/notes/dir/secret.md",
		"secret.md", "../secret.md", "/secret.md", "//root/notes/secret.md", "/ROOT/notes/secret.md")
	return agents, paths
}

// TestTaskIsolation: two tasks, each with a root, a named child and an
// automatic child, secrets in every agent's notes and history. From every
// agent of one task, every notes and history tool with every spelling of
// the other task's agents and paths either fails (400, 403, 404) or
// answers with the caller's own task's data only; contexts that claim an
// agent of the other task, or the other task's id with one's own agent,
// are refused on every tool, lifecycle and sync route. The other task's
// log is unchanged, and no response carries internal error text.
func TestTaskIsolation(t *testing.T) {
	ts := newTestServer(t, nil)
	a := isoSetup(t, ts, "A", "alpha")
	b := isoSetup(t, ts, "B", "beta")
	tried, refused := 0, 0
	for _, dir := range []struct{ caller, victim isoTask }{{a, b}, {b, a}} {
		victimLog := func() string {
			st, body := ts.do(t, "GET", "/v1/events?limit=5000&task_id="+dir.victim.root.TaskID, "")
			if st != http.StatusOK {
				t.Fatalf("events: %d %s", st, body)
			}
			return string(body)
		}
		before := victimLog()
		secret := "SECRET-" + dir.victim.name + "-"
		check := func(what string, st int, body []byte, mustFail bool) {
			t.Helper()
			tried++
			switch {
			case st == http.StatusOK && mustFail:
				t.Errorf("%s: 200 %.300s, want a refusal", what, body)
			case st == http.StatusOK:
			case st == http.StatusBadRequest, st == http.StatusForbidden, st == http.StatusNotFound:
				refused++
				checkNoLeak(t, what, body)
			default:
				t.Errorf("%s: status %d %.300s, want 200, 400, 403 or 404", what, st, body)
			}
			if strings.Contains(string(body), secret) {
				t.Errorf("%s: the response shows task %s's data: %.300s", what, dir.victim.name, body)
			}
		}
		agents, paths := isoSpellings(dir.victim)
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		for _, cc := range dir.caller.agents() {
			c := cc
			c.CallID = "toolu_iso"
			for _, ag := range agents {
				for _, call := range []struct{ tool, args string }{
					{"history_list_windows", `{"agent_name":` + q(ag) + `}`},
					{"history_list_items", `{"agent_name":` + q(ag) + `,"max_chars_per_item":1000}`},
					{"history_read_item", `{"agent_name":` + q(ag) + `,"window_id":"w1","item_id":"e1"}`},
					{"history_search_contents", `{"agent_name":` + q(ag) + `,"query":"SECRET"}`},
				} {
					st, body := ts.tool(t, call.tool, c, call.args)
					check(fmt.Sprintf("%s %s as %s", call.tool, call.args, cc.Agent), st, body, false)
				}
			}
			for i, p := range paths {
				for _, call := range []struct{ tool, args string }{
					{"notes_list_files_by_prefix", `{"prefix":` + q(p) + `}`},
					{"notes_read_file", `{"path":` + q(p) + `}`},
					{"notes_search_contents", `{"query":"SECRET","path_prefix":` + q(p) + `}`},
					{"notes_append_to_file", `{"path":` + q(p) + `,"text":"appended\n"}`},
					{"notes_write_file", `{"path":` + q(p) + `,"text":"overwritten\n"}`},
				} {
					c.CallID = fmt.Sprintf("toolu_iso_%s_%d", call.tool, i)
					st, body := ts.tool(t, call.tool, c, call.args)
					check(fmt.Sprintf("%s %s as %s", call.tool, call.args, cc.Agent), st, body, false)
				}
			}
			for _, call := range []string{"notes_search_contents", "history_search_contents"} {
				st, body := ts.tool(t, call, cc, `{"query":"SECRET"}`)
				check(call+" everywhere as "+cc.Agent, st, body, false)
			}
		}

		// Contexts that claim what is not theirs.
		var spoofs []memory.CallContext
		for _, v := range dir.victim.children {
			spoofs = append(spoofs, memory.CallContext{TaskID: dir.caller.root.TaskID, Agent: v.Agent})
		}
		for _, own := range dir.caller.children {
			spoofs = append(spoofs, memory.CallContext{TaskID: dir.victim.root.TaskID, Agent: own.Agent})
		}
		vt := dir.victim.root.TaskID
		for _, badTask := range []string{strings.ToLower(vt), vt + " ", " " + vt, vt + "/root", url.QueryEscape(vt + "\x00"), vt[:len(vt)-1], "", "%", "*"} {
			spoofs = append(spoofs, memory.CallContext{TaskID: badTask, Agent: "/root"})
		}
		for _, sp := range spoofs {
			sp.CallID = "toolu_spoof"
			ctx, _ := json.Marshal(sp)
			for _, call := range []struct{ tool, args string }{
				{"history_list_windows", `{}`}, {"history_list_items", `{}`}, {"history_read_item", `{"window_id":"w1","item_id":"e1"}`},
				{"history_search_contents", `{"query":"SECRET"}`}, {"notes_list_files_by_prefix", `{}`},
				{"notes_read_file", `{"path":"secret.md"}`}, {"notes_search_contents", `{"query":"SECRET"}`},
				{"notes_append_to_file", `{"path":"secret.md","text":"x"}`}, {"notes_write_file", `{"path":"secret.md","text":"x"}`},
				{"get_context_remaining", `{}`}, {"new_context", `{}`},
			} {
				st, body := ts.tool(t, call.tool, sp, call.args)
				check(fmt.Sprintf("%s with context %s", call.tool, ctx), st, body, true)
			}
			for _, rt := range []struct{ path, extra string }{
				{"/v1/history/sync", `,"entries":[{"type":"message","id":"e9","parentId":null,"timestamp":"2026-12-02T10:00:00.000Z","message":{"role":"user","content":"x","timestamp":1}}],"branch":["e9"]`},
				{"/v1/lifecycle/usage", `,"tokens_used":5`},
				{"/v1/lifecycle/delivered", `,"kind":"fallback","window_id":"w1","request_id":"r"`},
				{"/v1/lifecycle/arm", `,"kind":"fallback","window_id":"w1","request_id":"r"`},
				{"/v1/lifecycle/admit", `,"call_id":"c","tool_name":"notes_write_file","arguments":{"path":"a.md","text":"x"}`},
				{"/v1/lifecycle/tool-result", `,"call_id":"c","is_error":true`},
				{"/v1/lifecycle/user-input", ``},
				{"/v1/lifecycle/rollover/prepare", `,"reason":"new_context"`},
				{"/v1/lifecycle/rollover/commit", `,"window_id":"w2","compaction_entry_id":"x"`},
				{"/v1/lifecycle/rollover/fail", `,"aborted":false,"error":"x"`},
				{"/v1/lifecycle/manual", `,"action":"request","request_id":"m"`},
				{"/v1/lifecycle/turn", `,"syncs":[{"entries":[],"branch":["e9"]}],"usage":{"tokens_used":5},"admit":{"call_id":"c","tool_name":"read"}`},
			} {
				st, body := ts.do(t, "POST", rt.path, `{"context":`+string(ctx)+rt.extra+`}`)
				check(fmt.Sprintf("%s with context %s", rt.path, ctx), st, body, true)
			}
			st, body := ts.do(t, "GET", "/v1/state?task_id="+url.QueryEscape(sp.TaskID)+"&agent="+url.QueryEscape(sp.Agent), "")
			check(fmt.Sprintf("GET /v1/state for %s", ctx), st, body, true)
		}
		if after := victimLog(); after != before {
			t.Errorf("task %s's log changed while task %s probed it", dir.victim.name, dir.caller.name)
		}
	}
	// The callers' own data is still reachable: the probes were not all
	// refused for a trivial reason.
	for _, it := range []isoTask{a, b} {
		for _, cc := range it.agents() {
			st, body := ts.tool(t, "history_search_contents", cc, `{"query":"SECRET"}`)
			if st != http.StatusOK || !strings.Contains(string(body), isoSecret(it.name, cc.Agent, "hist")) {
				t.Errorf("%s %s cannot find its own history: %d %.200s", it.name, cc.Agent, st, body)
			}
		}
		st, body := ts.tool(t, "notes_read_file", it.root, `{"path":`+fmt.Sprintf("%q", it.children[0].Agent+"/notes/dir/secret.md")+`}`)
		if st != http.StatusOK || !strings.Contains(string(body), isoSecret(it.name, it.children[0].Agent, "note")) {
			t.Errorf("%s root cannot read its own child's note: %d %.200s", it.name, st, body)
		}
	}
	t.Logf("%d cross-task probes, %d refused, none showed the other task's data", tried, refused)
}

// TestErrorsNeverLeak: a sample of every kind of failure, from the HTTP
// layer to the storage, carries no internal error text.
func TestErrorsNeverLeak(t *testing.T) {
	ts, cc := hostileEnv(t)
	ctx, _ := json.Marshal(cc)
	for _, rt := range []route{
		{"GET", "/v1/nope", ""},
		{"DELETE", "/v1/tools", ""},
		{"POST", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":{"path":"missing.md"}}`},
		{"POST", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a.md","start_line":99}}`},
		{"POST", "/v1/tools/history_read_item", `{"context":` + string(ctx) + `,"arguments":{"window_id":"w9","item_id":"e1"}}`},
		{"POST", "/v1/tools/notes_write_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a//b","text":"x"}}`},
		{"POST", "/v1/history/sync", `{"context":` + string(ctx) + `,"entries":[{"type":"message","id":"e1","parentId":null,"timestamp":"x","message":{"role":"user","content":"changed","timestamp":1}}],"branch":["e1"]}`},
		{"POST", "/v1/history/sync", `{"context":` + string(ctx) + `,"branch":["nope"]}`},
		{"POST", "/v1/history/sync", `{"context":` + string(ctx) + `,"expected_revision":99}`},
		{"POST", "/v1/lifecycle/rollover/commit", `{"context":` + string(ctx) + `,"window_id":"w2"}`},
		{"POST", "/v1/sessions/attach", `{"session_key":"k","task":{"task_id":"nope"}}`},
		{"GET", "/v1/events?after=-1", ""},
		{"GET", "/v1/events?limit=abc", ""},
		{"GET", "/v1/state?task_id=x", ""},
	} {
		st, _, body := ts.send(t, ts.request(t, rt.method, rt.path, rt.body))
		if st < 400 {
			t.Errorf("%s %s: %d, want a failure", rt.method, rt.path, st)
		}
		checkNoLeak(t, rt.method+" "+rt.path, body)
	}
	ts.store.Close() // storage failures
	for _, rt := range []route{
		{"POST", "/v1/tools/notes_write_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a.md","text":"x"}}`},
		{"POST", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a.md"}}`},
		{"GET", "/v1/events", ""},
		{"GET", "/v1/state?task_id=" + cc.TaskID + "&agent=/root", ""},
	} {
		st, _, body := ts.send(t, ts.request(t, rt.method, rt.path, rt.body))
		if st != http.StatusServiceUnavailable {
			t.Errorf("%s %s on a closed store: %d %s", rt.method, rt.path, st, body)
		}
		checkNoLeak(t, rt.method+" "+rt.path+" (closed store)", body)
	}
}
