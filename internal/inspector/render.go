package inspector

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/style.css
var styleCSS []byte

// pages holds the parsed templates, each page file with the layout.
type pages struct {
	byName map[string]*template.Template
}

// funcs are the functions the templates call.
var funcs = template.FuncMap{
	"link":      link,
	"eventHref": eventHref,
	"add":       func(a, b int64) int64 { return a + b },
	"int64":     func(n int) int64 { return int64(n) },
	// depth is an agent's depth in its task's tree, 0 for /root.
	"depth":        func(agent string) int { return min(strings.Count(agent, "/")-1, 6) },
	"rootAgent":    rootAgent,
	"sessionPlace": sessionPlace,
	"short":        short,
	"phaseClass": func(phase string) string {
		return "phase-" + strings.ToLower(strings.ReplaceAll(phase, "_", "-"))
	},
}

// mustParsePages parses the embedded templates.
func mustParsePages() *pages {
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	p := &pages{byName: map[string]*template.Template{}}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		p.byName[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", n))
	}
	return p
}

// page is what the layout shows around a page's own content.
type page struct {
	Title string
	// At is the position the page shows the memory as of, or 0 for the end.
	At int64
	// Nav shows the navigation and the position control, in a session.
	Nav bool
	// Path and Hidden make the position control reload this page, with
	// its other parameters, at another position.
	Path   string
	Hidden []param
	// Now is this page at the end of the log, Path with its other
	// parameters but at.
	Now  string
	Body any
}

// param is one query parameter.
type param struct{ Name, Value string }

// render writes the page name with data as its body.
func (in *Inspector) render(w http.ResponseWriter, r *http.Request, status int, name string, body any) {
	in.renderPage(w, r, status, name, page{Title: name, Body: body})
}

// renderAt renders a page of the inspector proper, with the navigation and
// the position control.
func (in *Inspector) renderAt(w http.ResponseWriter, r *http.Request, name, title string, at int64, body any) {
	p := page{Title: title, At: at, Nav: true, Path: r.URL.Path, Now: r.URL.Path, Body: body}
	q := r.URL.Query()
	if now := withoutAt(q); now != "" {
		p.Now += "?" + now
	}
	for k, vs := range q {
		if k == "at" {
			continue
		}
		for _, v := range vs {
			p.Hidden = append(p.Hidden, param{k, v})
		}
	}
	in.renderPage(w, r, http.StatusOK, name, p)
}

// withoutAt returns the query q without its at parameter, encoded.
func withoutAt(q url.Values) string {
	rest := url.Values{}
	for k, vs := range q {
		if k != "at" {
			rest[k] = vs
		}
	}
	return rest.Encode()
}

// renderPage writes the page name with the layout, or an internal error.
func (in *Inspector) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := in.pages.byName[name]
	if !ok {
		panic("inspector: no template " + name)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		in.log.Error("inspector template failed", "template", name, "error", err.Error())
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("<!doctype html><title>error</title><p>internal error</p>")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(buf.Bytes())
	}
}

// errorData is what the error page shows.
type errorData struct {
	Status  int
	Message string
}

// renderError writes the error page with status and message.
func (in *Inspector) renderError(w http.ResponseWriter, r *http.Request, status int, message string) {
	in.renderPage(w, r, status, "error", page{Title: strconv.Itoa(status), Body: errorData{status, message}})
}

// serveCSS serves the inspector's stylesheet.
func serveCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Write(styleCSS)
}

// link returns path with the query parameters kv, given as names and
// values, and with at when it is set, so links keep the position.
func link(at int64, path string, kv ...any) template.URL {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v := fmt.Sprint(kv[i+1])
		if v != "" && v != "0" { // empty values are left out
			q.Set(fmt.Sprint(kv[i]), v)
		}
	}
	if at > 0 {
		q.Set("at", strconv.FormatInt(at, 10))
	}
	if len(q) == 0 {
		return template.URL(path)
	}
	return template.URL(path + "?" + q.Encode())
}

// eventHref links to the event at position pos in the log page, as of at.
func eventHref(at, pos int64) template.URL {
	return template.URL(string(link(at, Prefix+"/events", "after", pos-1)) + "#p" + strconv.FormatInt(pos, 10))
}

// atOf reads the at parameter, 0 when absent. A bad value is an error.
func atOf(r *http.Request) (int64, error) {
	s := r.URL.Query().Get("at")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errBadParam("at", "a log position (0 or more)")
	}
	return n, nil
}
