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
// repetition; the page's figure is their median.
const inspectorGets = 5

// inspectorPage is one page of the inspector row: its name in the notes
// and its path, given the task id and the log's last position.
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

// measureInspector starts memoryd on the replayed database, logs in to
// its inspector with the token, and fetches each page inspectorGets
// times; the figure is the slowest page's median.
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
	last, err := b.cl.health(ctx, base)
	if err != nil {
		return sample{}, err
	}
	task, err := b.firstTask(ctx, base)
	if err != nil {
		return sample{}, err
	}
	jar, _ := cookiejar.New(nil)
	web := &http.Client{Jar: jar, Transport: b.cl.http.Transport}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/ui/login", strings.NewReader(url.Values{"token": {b.token}}.Encode()))
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	// The login answers 303 to /ui: not followed here, since Go's client
	// would send the Origin header again with the GET, which the inspector
	// refuses (a browser does not).
	login := &http.Client{Jar: jar, Transport: web.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := login.Do(req)
	if err != nil {
		return sample{}, fmt.Errorf("inspector login: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return sample{}, fmt.Errorf("inspector login: status %d, want 303", resp.StatusCode)
	}
	var s sample
	for _, pg := range inspectorPages {
		var took []float64
		for range inspectorGets {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+pg.path(task, last), nil)
			if err != nil {
				return sample{}, err
			}
			t := time.Now()
			page, err := fetch(web, req)
			took = append(took, time.Since(t).Seconds())
			if err != nil {
				return sample{}, fmt.Errorf("inspector %s: %w", pg.name, err)
			}
			if !strings.Contains(page, "memoryd inspector") {
				return sample{}, fmt.Errorf("inspector %s: not an inspector page: %.200s", pg.name, page)
			}
		}
		slices.Sort(took)
		med := took[len(took)/2]
		s.fig = max(s.fig, med)
		s.add(pg.name+" (s)", med)
	}
	// Time travel, for information (not in the figure): the first page as
	// of half the log copies the log up to there; the next, 1,000 events
	// later, brings that copy forward. Each is fetched once: a second
	// fetch would be served from the kept copy.
	half := last / 2
	for _, tt := range []struct {
		name string
		at   int64
	}{
		{inspectorFreshName, half},
		{inspectorForwardName, min(half+inspectorForward, last-1)},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/ui?at=%d", base, tt.at), nil)
		if err != nil {
			return sample{}, err
		}
		t := time.Now()
		page, err := fetch(web, req)
		took := time.Since(t).Seconds()
		if err != nil {
			return sample{}, fmt.Errorf("inspector %s: %w", tt.name, err)
		}
		if !strings.Contains(page, "memoryd inspector") {
			return sample{}, fmt.Errorf("inspector %s: not an inspector page: %.200s", tt.name, page)
		}
		s.add(tt.name+" (s)", took)
	}
	return s, nil
}

// inspectorForward is how far past half the log the second time-travel
// page is.
const inspectorForward = 1000

const (
	inspectorFreshName   = "tasks as of half the log, first page (a fresh copy; information)"
	inspectorForwardName = "tasks as of half the log + 1,000 (that copy brought forward; information)"
)

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

// fetch sends req and returns the body of a 200 (after redirects).
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
		"below. For information, not in the figure, each fetched once after those: the tasks page as of half the log (`/ui?at=P`, "+
		"the first page at P copies the log up to P into a scratch database) and as of P + %s (the copy at P brought forward by "+
		"the events in between, docs/performance.md).",
		num(float64(b.cfg.events), 0), inspectorGets, strings.Join(names, ", "), num(inspectorForward, 0))
}
