package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/pgtest"
)

// TestTwoServersOnePostgres runs two memoryd servers on one PostgreSQL
// database (issue 23) with the crash harness's workers, some writing
// through one server and some through the other, two of them to the same
// note: reads through either server see what the other committed; then one
// server is killed with SIGKILL under load, and its workers go on through
// the other, retrying their unacknowledged call with its call_id. In the
// end every acknowledged write is in the log once, positions are gapless,
// the projections equal a rebuild of the log (on SQLite: the two engines
// agree), and the verify verb finds nothing.
func TestTwoServersOnePostgres(t *testing.T) {
	db := pgtest.NewDatabase(t)
	srv := [2]*crashChild{startCrashChild(t, sessionsNamed(t, db, "memoryd-test-0"), "full"), startCrashChild(t, sessionsNamed(t, db, "memoryd-test-1"), "full")}
	cl := [2]*crashClient{newCrashClient(srv[0].url), newCrashClient(srv[1].url)}
	root := crashAttach(t, cl[0], "/pg/a.jsonl", nil)
	// The second server registers children of the task the first made.
	child := func(name string) crashCtx {
		return crashAttach(t, cl[1], "/pg/"+name+".jsonl", &map[string]string{"task_id": root.TaskID, "parent_agent": "/root", "agent_name": name})
	}
	scribe, hist, fenceA, fenceB := child("scribe"), child("hist"), child("fence_a"), child("fence_b")

	w0 := &noteWriter{id: 0, cc: root, path: "shared.md"} // through server 0
	w1 := &noteWriter{id: 1, cc: root, path: "shared.md"} // the same file, through server 1
	w2 := &noteWriter{id: 2, cc: scribe, path: "zero.md"} // through server 0
	w3 := &noteWriter{id: 3, cc: scribe, path: "one.md"}  // through server 1
	h0 := &historySyncer{id: 0, cc: hist, rng: rand.New(rand.NewPCG(crashSeed, 4))}
	f0 := &fenceDriver{id: 0, cc: fenceA, reconciled: true}
	f1 := &fenceDriver{id: 1, cc: fenceB, reconciled: true}
	notes := [][]*noteWriter{{w0, w1}, {w2}, {w3}}
	workers := []crashWorker{w0, w1, w2, w3, h0, f0, f1}
	via := map[crashWorker]int{w0: 0, w1: 1, w2: 0, w3: 1, h0: 1, f0: 0, f1: 1}

	// drive runs every worker through its server until stop returns.
	drive := func(stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Go(func() { w.run(ctx, t, cl[via[w]]) })
		}
		stop()
		cancel()
		wg.Wait()
	}
	waitAcks := func(c *crashClient, n int64) {
		for deadline := time.Now().Add(60 * time.Second); c.oks.Load() < n && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if c.oks.Load() < n {
			t.Fatalf("%s acknowledged %d writes in 30 s, want %d", c.url, c.oks.Load(), n)
		}
	}

	// Both servers up: each reads what the other's writers committed.
	drive(func() { waitAcks(cl[0], 40); waitAcks(cl[1], 40) })
	if t.Failed() {
		t.FailNow()
	}
	for i, c := range cl {
		for _, w := range []*noteWriter{w0, w1, w2, w3} {
			readSees(t, c, w, i)
		}
	}

	// Server 0 dies under load; its workers go on through server 1.
	before := cl[0].oks.Load()
	drive(func() {
		waitAcks(cl[0], before+20)
		srv[0].kill(t)
		// A killed server's last transaction may still be committing in
		// PostgreSQL: its outcome is known once its sessions are gone.
		sessionsGone(t, db, "memoryd-test-0")
	})
	via = map[crashWorker]int{w0: 1, w1: 1, w2: 1, w3: 1, h0: 1, f0: 1, f1: 1}
	for _, f := range []*fenceDriver{f0, f1} {
		f.reconciled = false // its last transition may be in flight
	}
	after := cl[1].oks.Load()
	drive(func() { waitAcks(cl[1], after+40) })
	for _, w := range []*noteWriter{w0, w1, w2, w3} {
		if w.uncertain != nil {
			st, b, err := w.send(context.Background(), cl[1], *w.uncertain)
			if err != nil || st != http.StatusOK {
				t.Fatalf("retry of %s through the other server: %d %s %v", w.uncertain.callID, st, b, err)
			}
			w.ackedToks = append(w.ackedToks, w.uncertain.token)
			w.uncertain = nil
		}
		readSees(t, cl[1], w, 1)
	}
	for _, f := range []*fenceDriver{f0, f1} {
		if !f.reconciled && !f.reconcile(context.Background(), t, cl[1]) {
			t.Fatalf("fence %d: state not confirmed through the other server", f.id)
		}
	}
	if h0.pending > 0 {
		st, b, err := cl[1].do(context.Background(), "POST", "/v1/history/sync", map[string]any{
			"context": h0.cc, "entries": h0.entries[h0.ackLen:h0.pending], "branch": h0.ids[:h0.pending]})
		if err != nil || st != http.StatusOK {
			t.Fatalf("resend of the in-flight sync: %d %s %v", st, b, err)
		}
		h0.ackLen, h0.pending = h0.pending, 0
		h0.syncs++
	}
	srv[1].kill(t)
	for _, c := range cl {
		c.close()
	}
	n := checkOffline(t, db, notes, workers, true)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"verify", "--db", db}, func(string) string { return "" }, nil, &out, io.Discard); err != nil {
		t.Fatalf("verify verb: %v\n%s", err, out.String())
	}
	t.Logf("two servers on one PostgreSQL database: %d events; %d note appends, %d history syncs, %d fence transitions acknowledged",
		n, w0.acked()+w1.acked()+w2.acked()+w3.acked(), h0.acked(), f0.acked()+f1.acked())
}

// readSees reads w's note through server c and checks that every token
// acknowledged to w so far is in it.
func readSees(t *testing.T, c *crashClient, w *noteWriter, server int) {
	t.Helper()
	cc := w.cc
	cc.CallID = ""
	st, b, err := c.do(context.Background(), "POST", "/v1/tools/notes_read_file", map[string]any{
		"context": cc, "arguments": map[string]any{"path": w.path}})
	if err != nil || st != http.StatusOK {
		t.Fatalf("read %s through server %d: %d %s %v", w.path, server, st, b, err)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		text.WriteString(c.Text)
	}
	for _, tok := range w.ackedToks {
		if !strings.Contains(text.String(), tok) {
			t.Fatalf("server %d does not show %s in %s, acknowledged to writer %d", server, tok, w.path, w.id)
		}
	}
}

// TestFenceDecidedOnceAcrossServers: an agent's checkpoint fence admits one
// notes write (the claim) even when two servers receive the agent's calls
// at once: of concurrent admits with different call ids, one through each
// server, exactly one is allowed, round after round, and both servers then
// report the same state.
func TestFenceDecidedOnceAcrossServers(t *testing.T) {
	db := pgtest.NewDatabase(t)
	srv := [2]*crashChild{startCrashChild(t, sessionsNamed(t, db, "memoryd-test-0"), "full"), startCrashChild(t, sessionsNamed(t, db, "memoryd-test-1"), "full")}
	cl := [2]*crashClient{newCrashClient(srv[0].url), newCrashClient(srv[1].url)}
	ctx := context.Background()
	post := func(c *crashClient, path string, body map[string]any) []byte {
		t.Helper()
		st, b, err := c.do(ctx, "POST", path, body)
		if err != nil || st != http.StatusOK {
			t.Fatalf("%s: %d %s %v", path, st, b, err)
		}
		return b
	}
	for round := range 10 {
		cc := crashAttach(t, cl[round%2], fmt.Sprintf("/pg/fence-%d.jsonl", round), nil)
		w := "w1"
		post(cl[0], "/v1/lifecycle/delivered", map[string]any{"context": cc, "kind": "fallback", "window_id": w, "request_id": "fb"})
		post(cl[1], "/v1/lifecycle/arm", map[string]any{"context": cc, "kind": "fallback", "window_id": w, "request_id": "fb"})
		var wg sync.WaitGroup
		allowed := make([]bool, 2)
		for i, c := range cl {
			wg.Go(func() {
				b := post(c, "/v1/lifecycle/admit", map[string]any{"context": cc, "call_id": fmt.Sprintf("claim-%d", i),
					"tool_name": "notes_write_file", "arguments": map[string]string{"path": "checkpoint.md", "text": "goal\n"}})
				var res struct {
					Allow bool `json:"allow"`
				}
				if err := json.Unmarshal(b, &res); err != nil {
					t.Error(err)
				}
				allowed[i] = res.Allow
			})
		}
		wg.Wait()
		if allowed[0] == allowed[1] {
			t.Fatalf("round %d: admits allowed %v: want exactly one claim", round, allowed)
		}
		var states [2]string
		for i, c := range cl {
			st, b, err := c.do(ctx, "GET", fmt.Sprintf("/v1/state?task_id=%s&agent=%s", cc.TaskID, url.QueryEscape(cc.Agent)), nil)
			if err != nil || st != http.StatusOK {
				t.Fatalf("state through server %d: %d %s %v", i, st, b, err)
			}
			_, s, err := stateOfAnswer(b)
			if err != nil {
				t.Fatal(err)
			}
			states[i] = s.Phase() + " " + s.Claim
		}
		want := fmt.Sprintf("claim-%d", map[bool]int{true: 0, false: 1}[allowed[0]])
		if states[0] != states[1] || !strings.HasSuffix(states[0], " "+want) {
			t.Fatalf("round %d: states %q and %q, want both claimed by %s", round, states[0], states[1], want)
		}
	}
}

// TestOfflineVerbsOnPostgres: import, export, verify, call, tasks and
// replay --db take a PostgreSQL database as they take an SQLite file, and
// a log moves between the engines unchanged: imported into PostgreSQL and
// exported again byte for byte, imported from there into SQLite, and the
// same tool call answers the same at the same position on both.
func TestOfflineVerbsOnPostgres(t *testing.T) {
	for _, name := range []string{"cross-agent-notes", "branch-switch-compaction"} {
		t.Run(name, func(t *testing.T) {
			orig, err := os.ReadFile(fxLog(name))
			if err != nil {
				t.Fatal(err)
			}
			pg := pgtest.NewDatabase(t)
			fxMust(t, "import", "--db", pg, fxLog(name))
			if out := fxMust(t, "export", "--db", pg); out != string(orig) {
				t.Fatalf("export of the PostgreSQL database differs from the imported log")
			}
			if v := fxJSON(t, fxMust(t, "verify", "--db", pg)); v["clean"] != true {
				t.Fatalf("verify on PostgreSQL: %v", v)
			}
			// From PostgreSQL into SQLite.
			exported := filepath.Join(t.TempDir(), "pg.jsonl")
			if err := os.WriteFile(exported, []byte(fxMust(t, "export", "--db", pg)), 0o600); err != nil {
				t.Fatal(err)
			}
			lite := filepath.Join(t.TempDir(), "lite.db")
			fxMust(t, "import", "--db", lite, exported)
			if out := fxMust(t, "export", "--db", lite); out != string(orig) {
				t.Fatalf("export of the SQLite copy differs from the log")
			}
			// The same answers from both, at the end and at a past position.
			tasks := fxMust(t, "tasks", "--db", pg)
			if got := fxMust(t, "tasks", "--db", lite); got != tasks {
				t.Fatalf("tasks differ:\nPostgreSQL %s\nSQLite     %s", tasks, got)
			}
			task := fxTask(t, fxLog(name))
			evs := fxEvents(t, fxLog(name))
			for _, until := range []string{"", fmt.Sprint(len(evs) / 2)} {
				for _, tool := range [][]string{
					{"notes_list_files_by_prefix", `{"prefix":""}`},
					{"history_list_windows", `{}`},
					{"notes_search_contents", `{"query":"a"}`},
				} {
					args := []string{"--task", task}
					if until != "" {
						args = append(args, "--until", until)
					}
					args = append(args, tool...)
					a := fxMust(t, append([]string{"call", "--db", pg}, args...)...)
					b := fxMust(t, append([]string{"call", "--db", lite}, args...)...)
					if a != b {
						t.Fatalf("call %v differs:\nPostgreSQL %s\nSQLite     %s", args, a, b)
					}
				}
			}
			// A replay into PostgreSQL gives the committed digest.
			want, err := os.ReadFile(filepath.Join(fxLogsDir, name+".digest"))
			if err != nil {
				t.Fatal(err)
			}
			out := fxMust(t, "replay", fxLog(name), "--db", pgtest.NewDatabase(t))
			if !strings.Contains(out, strings.TrimSpace(string(want))) {
				t.Fatalf("replay into PostgreSQL: no committed digest %s in\n%s", strings.TrimSpace(string(want)), out)
			}
		})
	}
}

// TestSearchSeesOtherServersHistory: history synced through one server is
// found by a search through the other, before and after the searching
// server has loaded its in-memory chunk filters: they learn of the chunks
// the other server sealed since.
func TestSearchSeesOtherServersHistory(t *testing.T) {
	db := pgtest.NewDatabase(t)
	srv := [2]*crashChild{startCrashChild(t, sessionsNamed(t, db, "memoryd-test-0"), "full"), startCrashChild(t, sessionsNamed(t, db, "memoryd-test-1"), "full")}
	cl := [2]*crashClient{newCrashClient(srv[0].url), newCrashClient(srv[1].url)}
	ctx := context.Background()
	cc := crashAttach(t, cl[0], "/pg/search.jsonl", nil)
	var ids []string
	var last string
	sync := func(word string, n int) {
		t.Helper()
		var entries []map[string]any
		filler := strings.Repeat("lorem ipsum dolor sit amet ", 150) // ≈ 4 KB: 64 KiB chunks seal every ≈ 16 entries
		for i := range n {
			id := fmt.Sprintf("%s-%03d", word, i)
			var parent any
			if last != "" {
				parent = last
			}
			entries = append(entries, map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": "2026-12-02T10:00:00.000Z",
				"message": map[string]any{"role": "user", "content": fmt.Sprintf("%s %s marker-%s-%d", filler, word, word, i), "timestamp": 1}})
			ids = append(ids, id)
			last = id
		}
		st, b, err := cl[0].do(ctx, "POST", "/v1/history/sync", map[string]any{"context": cc, "entries": entries, "branch": ids})
		if err != nil || st != http.StatusOK {
			t.Fatalf("sync: %d %s %v", st, b, err)
		}
	}
	found := func(server int, needle string) int {
		t.Helper()
		st, b, err := cl[server].do(ctx, "POST", "/v1/tools/history_search_contents", map[string]any{"context": cc, "arguments": map[string]any{"query": needle}})
		if err != nil || st != http.StatusOK {
			t.Fatalf("search through server %d: %d %s %v", server, st, b, err)
		}
		var res struct {
			Details struct {
				Results []json.RawMessage `json:"results"`
			} `json:"details"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		return len(res.Details.Results)
	}
	sync("alpha", 40)
	if n := found(1, "marker-alpha-33"); n != 1 {
		t.Fatalf("server 1 finds %d items with marker-alpha-33, want 1", n)
	}
	sync("omega", 40) // sealed by server 0 after server 1 loaded its filters
	for _, needle := range []string{"marker-omega-7", "marker-omega-38", "marker-alpha-39"} {
		if n := found(1, needle); n != 1 {
			t.Fatalf("server 1 finds %d items with %s, want 1", n, needle)
		}
		if n := found(0, needle); n != 1 {
			t.Fatalf("server 0 finds %d items with %s, want 1", n, needle)
		}
	}
}

// TestTokenFileForPostgres: with a PostgreSQL database and no
// MEMORYD_TOKEN, the token file is the default data folder's (there is no
// database folder), made 0700/0600 and kept across starts.
func TestTokenFileForPostgres(t *testing.T) {
	xdg := t.TempDir()
	env := map[string]string{"XDG_DATA_HOME": xdg, "HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	tok, err := loadToken(getenv, "postgres://u@db.example/memoryd")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(xdg, "memoryd", "token")
	b, err := os.ReadFile(path)
	if err != nil || strings.TrimSpace(string(b)) != tok || len(tok) != 64 {
		t.Fatalf("token file %s: %q, %v; token %q", path, b, err, tok)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", fi.Mode(), err)
	}
	if again, err := loadToken(getenv, "postgres://u@db.example/memoryd"); err != nil || again != tok {
		t.Fatalf("second start: %q %v, want the same token", again, err)
	}
}

// sessionsNamed returns the database URL db whose sessions are named name
// in pg_stat_activity.
func sessionsNamed(t *testing.T, db, name string) string {
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// sessionsGone waits until the server of database db has no session named
// name: those of a killed client end once their last statement has.
func sessionsGone(t *testing.T, db, name string) {
	pg, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(10 * time.Millisecond) { // the deadline only ends a hang
		var n int
		if err := pg.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions of the killed server %s still open", n, name)
		}
	}
}
