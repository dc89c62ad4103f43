package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"time"
)

// inspectorGets is how many times each inspector page is fetched in a
// repetition. The page's figure is their median.
const inspectorGets = 5

// inspectorPage is one page of the inspector row, with its name in the notes
// and its path given the task id and the log's last position.
type inspectorPage struct {
	name string
	path func(task string, last int64) string
}

var inspectorPages = []inspectorPage{
	{"tasks", func(string, int64) string { return "/ui" }},
	{"timeline of /root", func(task string, _ int64) string { return "/ui/tasks/" + task + "/agents/root" }},
	{"notes of /root", func(task string, _ int64) string { return "/ui/tasks/" + task + "/notes?agent=/root" }},
	{"history of /root", func(task string, _ int64) string { return "/ui/tasks/" + task + "/history?agent=/root" }},
	{"events, first page", func(string, int64) string { return "/ui/events" }},
	{"events, last page", func(_ string, last int64) string { return fmt.Sprintf("/ui/events?after=%d", max(last-100, 0)) }},
}

// measureInspector fetches each inspector page of a memoryd on the replayed
// database inspectorGets times. The figure is the slowest page's median.
func (b *bench) measureInspector(ctx context.Context, rep repetition) (sample, error) {
	p, err := b.startMemoryd(ctx, "memoryd(inspector)", b.replayed)
	if err != nil {
		return sample{}, err
	}
	s, err := b.inspectPages(ctx, p.url)
	if err == nil {
		b.logf("%s: slowest page %s", rep.row, ms(s.fig))
	}
	if serr := p.stop(); err == nil {
		err = serr
	}
	return s, err
}

func (b *bench) inspectPages(ctx context.Context, base string) (sample, error) {
	web, task, last, err := b.inspectorLogin(ctx, base)
	if err != nil {
		return sample{}, err
	}
	var s sample
	for _, pg := range inspectorPages {
		var took []float64
		for range inspectorGets {
			t, err := inspectorGet(ctx, web, base+pg.path(task, last), pg.name)
			if err != nil {
				return sample{}, err
			}
			took = append(took, t)
		}
		slices.Sort(took)
		med := took[len(took)/2]
		s.fig = max(s.fig, med)
		s.add(pg.name+" (s)", med)
	}
	return s, nil
}

// inspectorLogin logs in to the inspector at base with the token and
// returns a client with the session, the newest task and the log's last
// position.
func (b *bench) inspectorLogin(ctx context.Context, base string) (web *http.Client, task string, last int64, err error) {
	if last, err = b.cl.health(ctx, base); err != nil {
		return nil, "", 0, err
	}
	if task, err = b.firstTask(ctx, base); err != nil {
		return nil, "", 0, err
	}
	jar, _ := cookiejar.New(nil)
	web = &http.Client{Jar: jar, Transport: b.cl.http.Transport}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/ui/login", strings.NewReader(url.Values{"token": {b.token}}.Encode()))
	if err != nil {
		return nil, "", 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	// The login answers 303 to /ui, not followed here. Go's client would
	// send the Origin header again with the GET, unlike a browser, and the
	// inspector refuses it.
	login := &http.Client{Jar: jar, Transport: web.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := login.Do(req)
	if err != nil {
		return nil, "", 0, fmt.Errorf("inspector login: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, "", 0, fmt.Errorf("inspector login: status %d, want 303", resp.StatusCode)
	}
	return web, task, last, nil
}

// inspectorGet fetches an inspector page and returns the seconds it took
// to its last byte.
func inspectorGet(ctx context.Context, web *http.Client, u, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	t := time.Now()
	page, err := fetch(web, req)
	took := time.Since(t).Seconds()
	if err != nil {
		return 0, fmt.Errorf("inspector %s: %w", name, err)
	}
	if !strings.Contains(page, "memoryd inspector") {
		return 0, fmt.Errorf("inspector %s: not an inspector page: %.200s", name, page)
	}
	return took, nil
}

// inspectorAtPages are the pages of the inspector-at row, fetched once each
// in this order. Each is as of a position the memoryd has not shown before,
// so it times what a user waits for on the first page at a position.
var inspectorAtPages = []struct {
	name string
	path func(task string, half int64) string // half is half the log's last position
}{
	{"timeline of /root as of half the log (reads the log up to there)", func(task string, half int64) string {
		return fmt.Sprintf("/ui/tasks/%s/agents/root?at=%d", task, half)
	}},
	{"events as of half the log (reads the log up to there)", func(_ string, half int64) string {
		return fmt.Sprintf("/ui/events?after=%d&at=%d", half-100, half)
	}},
	{"notes of /root as of half the log (folds the note events of /root up to there)", func(task string, half int64) string {
		return fmt.Sprintf("/ui/tasks/%s/notes?agent=/root&at=%d", task, half)
	}},
	{"history of /root as of half the log (its branch then, read live: no history in this log)", func(task string, half int64) string {
		return fmt.Sprintf("/ui/tasks/%s/history?agent=/root&at=%d", task, half)
	}},
	{"tasks as of half the log + 1,000 (folds each agent's fence events up to there)", func(_ string, half int64) string {
		return fmt.Sprintf("/ui?at=%d", half+min(inspectorForward, half/4))
	}},
}

// measureInspectorAt fetches each of inspectorAtPages once from a memoryd on
// the replayed database. The figure is the slowest.
func (b *bench) measureInspectorAt(ctx context.Context, rep repetition) (sample, error) {
	p, err := b.startMemoryd(ctx, "memoryd(inspector-at)", b.replayed)
	if err != nil {
		return sample{}, err
	}
	s, err := b.inspectPagesAt(ctx, p.url)
	if err == nil {
		err = b.inspectHistoryAt(ctx, rep, &s)
	}
	if err == nil {
		b.logf("%s: slowest page %s", rep.row, ms(s.fig))
	}
	if serr := p.stop(); err == nil {
		err = serr
	}
	return s, err
}

func (b *bench) inspectPagesAt(ctx context.Context, base string) (sample, error) {
	web, task, last, err := b.inspectorLogin(ctx, base)
	if err != nil {
		return sample{}, err
	}
	half := last / 2
	if half < 200 {
		return sample{}, fmt.Errorf("inspector-at: a log of %d events is too short (at least 400)", last)
	}
	var s sample
	for _, pg := range inspectorAtPages {
		t, err := inspectorGet(ctx, web, base+pg.path(task, half), pg.name)
		if err != nil {
			return sample{}, err
		}
		s.fig = max(s.fig, t)
		s.add(pg.name+" (s)", t)
	}
	return s, nil
}

// inspectHistoryAt fetches the history server's history page of its agent
// as of half its log.
func (b *bench) inspectHistoryAt(ctx context.Context, rep repetition, s *sample) error {
	web, _, last, err := b.inspectorLogin(ctx, b.hist.url)
	if err != nil {
		return err
	}
	// One position lower each repetition, so that none is a page seen
	// before (a copy, when one is needed, is made afresh).
	at := last/2 - int64(rep.n)
	t, err := inspectorGet(ctx, web, fmt.Sprintf("%s/ui/tasks/%s/history?agent=/root&at=%d", b.hist.url, b.histTask, at), inspectorHistoryName)
	if err != nil {
		return err
	}
	s.fig = max(s.fig, t)
	s.add(inspectorHistoryName+" (s)", t)
	return nil
}

const inspectorHistoryName = "history of /root on the history database as of half its log (its branch then, read live: no branch switched since)"

// inspectorForward is how far past half the log the last inspector-at page is.
// On a short log it is a quarter of that half.
const inspectorForward = 1000

func (b *bench) inspectorAtNotes() string {
	return fmt.Sprintf("A memoryd started afresh on the replayed %s-event database (one task, four agents); after a login, "+
		"each page below is fetched once, in this order, and timed by the client to its last byte: each is the first page at its "+
		"position. The timeline and the events page read the log up to the position, the notes and tasks pages fold its events "+
		"up to it, the history page reads the live history cut to the agent's branch as of the position when no branch switched "+
		"since, else a copy of the task's history up to it (docs/performance.md); the tasks page is %s events later "+
		"(fewer on a log under 8,000). The synthetic log holds "+
		"note appends only, so last, on the -history-bytes history database (one task, %s of Pi session entries), the history "+
		"page as of half its log is fetched once: its session never switched branch, so the page reads the live history.",
		num(float64(b.cfg.events), 0), num(inspectorForward, 0), mb(b.cfg.historyBytes))
}

// firstTask is the newest task of the memoryd at base.
func (b *bench) firstTask(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/tasks?limit=1", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	body, err := fetch(b.cl.http, req)
	if err != nil {
		return "", err
	}
	var list struct {
		Tasks []struct {
			TaskID string `json:"task_id"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Tasks) == 0 {
		return "", fmt.Errorf("GET /v1/tasks: no task (%v): %.200s", err, body)
	}
	return list.Tasks[0].TaskID, nil
}

// fetch sends req and returns the body of a 200, after redirects.
func fetch(c *http.Client, req *http.Request) (string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s: status %d: %.200s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	return string(body), nil
}

func (b *bench) inspectorNotes() string {
	names := make([]string, len(inspectorPages))
	for i, pg := range inspectorPages {
		names[i] = pg.name
	}
	return fmt.Sprintf("A memoryd started on the replayed %s-event database (one task; /root's stream holds a quarter of the log); "+
		"after a login with the token (`POST /ui/login`, the session cookie kept), each page of the web inspector is fetched %d times "+
		"over HTTP (%s) and timed by the client to its last byte; the figure is the slowest page's median, each page's median is "+
		"below. Pages as of a past position are the inspector-at row.",
		num(float64(b.cfg.events), 0), inspectorGets, strings.Join(names, ", "))
}
