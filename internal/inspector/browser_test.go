package inspector_test

// Tests in a real browser (headless Chromium, internal/browsertest): they
// type into the pages' forms and click their buttons and links, as a
// person would, and assert on what the page then shows, styles included.
// UPDATE_SCREENSHOTS=1 makes them write docs/screenshots/*.png.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/memoryd/memoryd/internal/browsertest"
	"github.com/memoryd/memoryd/internal/inspector"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

func TestMain(m *testing.M) { os.Exit(browsertest.Main(m)) }

// run runs actions in the tab, failing the test with what was being done.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// js evaluates expr in the page and returns its value.
func js[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("browser: %s: %v", expr, err)
	}
	return v
}

// style evaluates expr, which reads computed styles, once the page has
// loaded. An element is visible as soon as the document is parsed, but its
// stylesheet may still be loading on a slow machine, and until it is the
// computed styles are the browser's defaults.
func style[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.readyState === "complete"`,
		chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("browser: the page did not finish loading: %v", err)
	}
	return js[T](t, ctx, expr)
}

// textOf is the text content of the first element matching sel, spaces
// collapsed.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("browser: the text of %s: %v", sel, err)
	}
	return strings.Join(strings.Fields(s), " ")
}

// browserLogin opens /ui, which shows the login form, types the token
// and submits it; the tasks page must follow.
func browserLogin(t *testing.T, ctx context.Context, s *uiServer) {
	t.Helper()
	run(t, ctx, "log in",
		chromedp.Navigate(s.URL+"/ui"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), testToken),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#tasks")),
	)
}

// styled checks that the inspector's stylesheet applies under its
// Content-Security-Policy: the body has its background.
func styled(t *testing.T, ctx context.Context) {
	t.Helper()
	color := style[string](t, ctx, `getComputedStyle(document.body).backgroundColor`)
	if color != "rgb(250, 251, 252)" {
		t.Errorf("body background %q: style.css is not applied", color)
	}
}

// TestBrowserLogin: /ui shows the login form; a wrong token typed in it
// shows the error and sets no cookie; the token logs in: the tasks page
// lists the task and its agents, the browser holds an HttpOnly,
// SameSite=Strict cookie that is not the token, and the URL holds no
// token.
func TestBrowserLogin(t *testing.T) {
	s := newUIServer(t)
	cc := fallbackScenario(t, s.svc)
	if _, err := s.svc.Attach(bg, childRequest(cc.TaskID, "/sessions/child.jsonl", "helper"), ""); err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.Tab(t)

	run(t, ctx, "open /ui", chromedp.Navigate(s.URL+"/ui"), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	styled(t, ctx)
	browsertest.Screenshot(t, ctx, "login")
	run(t, ctx, "a wrong token",
		chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#login-failed")),
	)
	if got := textOf(t, ctx, "#login-failed"); !strings.Contains(got, "not this memoryd's token") {
		t.Errorf("after a wrong token the page says %q", got)
	}
	if c := cookies(t, ctx, s.URL); len(c) != 0 {
		t.Errorf("a wrong token set %d cookies", len(c))
	}

	run(t, ctx, "the token",
		chromedp.SendKeys(chromedp.CSS("#token"), testToken),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#tasks")),
	)
	loc := js[string](t, ctx, `location.href`)
	if loc != s.URL+"/ui" {
		t.Errorf("after login the browser is at %q, want %s/ui", loc, s.URL)
	}
	if got := textOf(t, ctx, "#task-"+cc.TaskID); !strings.Contains(got, cc.TaskID) {
		t.Errorf("the tasks page shows %q", got)
	}
	agents := js[[]string](t, ctx, `[...document.querySelectorAll('.agent')].map(a => a.dataset.agent + ' ' + a.querySelector('.phase').textContent + ' ' + a.querySelector('.window').textContent)`)
	if want := []string{"/root READY w2", "/root/helper READY w1"}; !slices.Equal(agents, want) {
		t.Errorf("agents shown %q, want %q", agents, want)
	}
	c := cookies(t, ctx, s.URL+"/ui")
	if len(c) != 1 {
		t.Fatalf("%d cookies after login", len(c))
	}
	if k := c[0]; k.Name != inspector.CookieName || !k.HTTPOnly || k.SameSite != network.CookieSameSiteStrict || k.Path != "/ui" || k.Value == testToken || k.Value == "" {
		t.Errorf("session cookie %s=%q HttpOnly=%v SameSite=%s Path=%s", k.Name, k.Value, k.HTTPOnly, k.SameSite, k.Path)
	}
	fromJS := js[string](t, ctx, `document.cookie`)
	if fromJS != "" {
		t.Errorf("page scripts can read the cookie: %q", fromJS)
	}
	browsertest.Screenshot(t, ctx, "tasks")
}

// cookies are the browser's cookies for url.
func cookies(t *testing.T, ctx context.Context, url string) []*network.Cookie {
	t.Helper()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
	if err != nil {
		t.Fatalf("browser: read the cookies: %v", err)
	}
	return res.Cookies
}

// TestBrowserTimeline: from the tasks page, the agent's link opens its
// timeline of a fallback fence and a rollover: the rollover with its
// reason and bootstrap text, the fence's steps with their phases, the
// tokens plot drawn (a visible SVG, its three threshold lines styled);
// a step's link opens the event log at that event, highlighted.
func TestBrowserTimeline(t *testing.T) {
	s := newUIServer(t)
	fallbackScenario(t, s.svc)
	ctx := browsertest.Tab(t)
	browserLogin(t, ctx, s)
	run(t, ctx, "open the agent", chromedp.Click(chromedp.CSS(".agent-link")), chromedp.WaitVisible(chromedp.CSS("#tokens-plot")))
	styled(t, ctx)
	browsertest.Screenshot(t, ctx, "timeline")

	if got := textOf(t, ctx, "#current-window"); got != "w2" {
		t.Errorf("current window %q", got)
	}
	if got := textOf(t, ctx, ".rollover h3"); !strings.Contains(got, "fallback: w1 → w2") || !strings.Contains(got, "committed @") {
		t.Errorf("the rollover reads %q", got)
	}
	run(t, ctx, "open the bootstrap text", chromedp.Click(chromedp.CSS(".rollover summary")), chromedp.WaitVisible(chromedp.CSS(".rollover .bootstrap")))
	if got := textOf(t, ctx, ".rollover .bootstrap"); !strings.Contains(got, "checkpoint.md") {
		t.Errorf("bootstrap text %q", got)
	}
	steps := js[[]string](t, ctx, `[...document.querySelectorAll('#steps .step')].map(r => r.dataset.type + ' ' + r.querySelector('.phase').innerText)`)
	want := []string{
		"agent.registered READY",
		"lifecycle.usage_reported READY",
		"lifecycle.control_delivered FALLBACK_QUEUED",
		"lifecycle.fence_armed FENCED",
		"lifecycle.claim_taken FENCED_CLAIMED",
		"lifecycle.checkpoint_saved CHECKPOINT_SAVED",
		"lifecycle.rollover_prepared ROLLING_OVER",
		"lifecycle.rollover_committed READY",
	}
	if !slices.Equal(steps, want) {
		t.Errorf("steps shown:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
	}

	// The plot is drawn: the SVG has a size on the page, and each
	// threshold line is there with its colour from style.css.
	plot := js[struct{ W, H float64 }](t, ctx, `(() => { const r = document.querySelector('#tokens-plot').getBoundingClientRect(); return {W: r.width, H: r.height}; })()`)
	if plot.W < 300 || plot.H < 100 {
		t.Errorf("the tokens plot is %.0fx%.0f px", plot.W, plot.H)
	}
	thresholds := style[[]string](t, ctx, `['thr-reminder', 'thr-fallback', 'thr-hard'].map(c => { const l = document.querySelector('#tokens-plot .' + c); return l ? l.dataset.tokens + ' ' + getComputedStyle(l).stroke : c + ' missing'; })`)
	if want := []string{"75000 rgb(204, 153, 0)", "87500 rgb(221, 68, 0)", "95000 rgb(170, 0, 0)"}; !slices.Equal(thresholds, want) {
		t.Errorf("threshold lines %q, want %q", thresholds, want)
	}
	points := js[int](t, ctx, `document.querySelectorAll('#tokens-plot .usage-point').length`)
	if points != 4 {
		t.Errorf("%d usage points drawn", points)
	}
	// The usage line stops at the rollover: w1's three reports are one
	// line; w2's single report is a point only.
	lines := style[[]string](t, ctx, `[...document.querySelectorAll('#tokens-plot polyline.usage')].map(l => l.dataset.window + ' ' + l.points.numberOfItems + ' ' + getComputedStyle(l).stroke)`)
	if want := []string{"w1 3 rgb(16, 96, 192)"}; !slices.Equal(lines, want) {
		t.Errorf("usage lines %q, want %q", lines, want)
	}

	// The committed step links to its event in the event log.
	pos := js[string](t, ctx, `document.querySelector('.step[data-type="lifecycle.rollover_committed"]').dataset.position`)
	run(t, ctx, "follow the commit's link",
		chromedp.Click(chromedp.CSS(`.step[data-type="lifecycle.rollover_committed"] a`)),
		chromedp.WaitVisible(chromedp.CSS("#events")),
		chromedp.WaitVisible(chromedp.CSS(".event#p"+pos)),
	)
	if got := textOf(t, ctx, ".event#p"+pos+" .event-type"); got != "lifecycle.rollover_committed" {
		t.Errorf("event @%s shown as %q", pos, got)
	}
	target := style[string](t, ctx, `(() => { const r = document.querySelector(':target'); return r ? r.id + ' ' + getComputedStyle(r).backgroundColor : ''; })()`)
	if target != "p"+pos+" rgb(255, 255, 204)" {
		t.Errorf("the linked event is not highlighted: %q", target)
	}
	run(t, ctx, "open its payload", chromedp.Click(chromedp.CSS(".event#p"+pos+" summary")))
	if got := textOf(t, ctx, ".event#p"+pos+" .payload"); !strings.Contains(got, `"window_id": "w2"`) {
		t.Errorf("payload %q", got)
	}
	browsertest.Screenshot(t, ctx, "events")
}

// TestBrowserNoteAsOf: a note written twice shows its last content; the
// page's "As of position" control, given the position between the
// writes, shows the old content and one revision; a revision's diff
// link shows the changed lines.
func TestBrowserNoteAsOf(t *testing.T) {
	s := newUIServer(t)
	root := attach(t, s.svc, "/sessions/notes.jsonl")
	tool(t, s.svc, root, "w1", "notes_write_file", `{"path":"plan.md","text":"# plan\nalpha\nbeta\nship it\n"}`)
	between := callPosition(t, s.svc, "note.written", "w1")
	tool(t, s.svc, root, "w2", "notes_write_file", `{"path":"plan.md","text":"# plan\nalpha\ngamma\nship it\n"}`)
	s.svc.StopAudit()
	ctx := browsertest.Tab(t)
	browserLogin(t, ctx, s)
	run(t, ctx, "open the notes",
		chromedp.Click(chromedp.CSS(`.agent[data-agent="/root"] a[href*="/notes"]`)),
		chromedp.WaitVisible(chromedp.CSS("#own-notes")),
		chromedp.Click(chromedp.CSS(`.note-file[data-path="/root/notes/plan.md"] a`)),
		chromedp.WaitVisible(chromedp.CSS("#note-content")),
	)
	if got := textOf(t, ctx, "#note-content"); got != "# plan alpha gamma ship it" {
		t.Errorf("content %q", got)
	}
	run(t, ctx, "go back to the position between the writes",
		chromedp.SendKeys(chromedp.CSS("#at-input"), fmt.Sprint(between)),
		chromedp.Click(chromedp.CSS("#at-form button")),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#at-shown[data-at="%d"]`, between))),
	)
	if got := textOf(t, ctx, "#note-content"); got != "# plan alpha beta ship it" {
		t.Errorf("as of %d the note reads %q, want the first write", between, got)
	}
	revs := js[int](t, ctx, `document.querySelectorAll('.revision').length`)
	if revs != 1 {
		t.Errorf("as of %d: %d revisions shown", between, revs)
	}
	if got := textOf(t, ctx, "#at-shown"); got != fmt.Sprintf("showing the state as of position %d", between) {
		t.Errorf("the position control says %q", got)
	}

	run(t, ctx, "back to now, then the diff of revision 2",
		chromedp.Click(chromedp.CSS("#at-now")),
		chromedp.WaitVisible(chromedp.CSS(`#at-shown[data-at="0"]`)),
		chromedp.Click(chromedp.CSS(".diff-prev")),
		chromedp.WaitVisible(chromedp.CSS("#diff")),
	)
	diff := style[[]string](t, ctx, `[...document.querySelectorAll('#diff .diff-line')].map(l => l.textContent + ' ' + getComputedStyle(l).backgroundColor)`)
	want := []string{"= # plan rgba(0, 0, 0, 0)", "= alpha rgba(0, 0, 0, 0)", "- beta rgb(255, 221, 221)", "+ gamma rgb(221, 255, 221)", "= ship it rgba(0, 0, 0, 0)"}
	if !slices.Equal(diff, want) {
		t.Errorf("diff shown %q, want %q", diff, want)
	}
	browsertest.Screenshot(t, ctx, "notes")
}

// TestBrowserHistorySearch: the history page's search box, typed into,
// shows the matching items with the matched words in <mark>, styled.
func TestBrowserHistorySearch(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/history.jsonl")
	b := sessiongen.NewBuilder(3)
	b.UserText("please look at the flux capacitor wiring before the demo")
	b.Assistant(sessiongen.Text("the capacitor is fine; the wiring to the relay was loose"))
	b.UserText("thanks, now the release notes")
	sess := b.Session()
	if _, err := s.svc.Sync(bg, memory.SyncRequest{Context: cc, Entries: sess.Entries, Branch: &sess.Branch}, ""); err != nil {
		t.Fatal(err)
	}
	ctx := browsertest.Tab(t)
	browserLogin(t, ctx, s)
	run(t, ctx, "search the history",
		chromedp.Click(chromedp.CSS(`.agent[data-agent="/root"] a[href*="/history"]`)),
		chromedp.WaitVisible(chromedp.CSS("#search-form")),
		chromedp.SendKeys(chromedp.CSS("#search-q"), "capacitor"),
		chromedp.Click(chromedp.CSS("#search-form button")),
		chromedp.WaitVisible(chromedp.CSS("#search-results")),
	)
	hits := style[[]string](t, ctx, `[...document.querySelectorAll('#search-results .hit')].map(h => h.querySelector('.role').textContent + ': ' + [...h.querySelectorAll('mark')].map(m => m.textContent + ' ' + getComputedStyle(m).backgroundColor).join(', '))`)
	if want := []string{"user: capacitor rgb(255, 255, 85)", "assistant: capacitor rgb(255, 255, 85)"}; !slices.Equal(hits, want) {
		t.Errorf("hits shown %q, want %q", hits, want)
	}
	if got := textOf(t, ctx, "#search-results .hit .region"); !strings.Contains(got, "flux capacitor wiring") {
		t.Errorf("region %q", got)
	}
	browsertest.Screenshot(t, ctx, "history")
}
