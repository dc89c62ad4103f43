package inspector

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// CookieName is the /ui session cookie. Its value is a random session id
// (32 bytes, hex), never the token; the server keeps the ids it issued.
const CookieName = "memoryd_ui"

const (
	sessionLifetime = 12 * time.Hour
	codeLifetime    = 10 * time.Minute
	maxLoginBody    = 4 << 10
)

// sessions are the live session ids and the unused one-time login codes,
// each with its expiry. They live in memory: a restart logs everyone out.
type sessions struct {
	mu    sync.Mutex
	ids   map[string]time.Time
	codes map[string]time.Time
	now   func() time.Time
}

func newSessions() *sessions {
	return &sessions{ids: map[string]time.Time{}, codes: map[string]time.Time{}, now: time.Now}
}

func randomID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b[:])
}

func (s *sessions) start() string {
	id := randomID()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[id] = s.now().Add(sessionLifetime)
	return id
}

func (s *sessions) valid(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.ids[id]
	if ok && s.now().After(exp) {
		delete(s.ids, id)
		return false
	}
	return ok
}

func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}

func (s *sessions) newCode() string {
	code := randomID()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = s.now().Add(codeLifetime)
	return code
}

// useCode reports whether code is a live one-time code, and spends it.
func (s *sessions) useCode(code string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.codes[code]
	delete(s.codes, code)
	return ok && !s.now().After(exp)
}

// sessionOf returns the request's valid session id, if any.
func (in *Inspector) sessionOf(r *http.Request) (string, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return "", false
	}
	return c.Value, in.sessions.valid(c.Value)
}

// requireSession sends a request without a valid session to the login
// page.
func (in *Inspector) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := in.sessionOf(r); !ok {
			http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
			return
		}
		if in.cfg.Activity != nil {
			defer in.cfg.Activity()()
		}
		next.ServeHTTP(w, r)
	})
}

// setCookie sets (id != "") or clears the session cookie: HttpOnly,
// SameSite=Strict, Path=/ui, Secure when the request came over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, id string) {
	c := &http.Cookie{Name: CookieName, Value: id, Path: Prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
	if id == "" {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(sessionLifetime / time.Second)
	}
	http.SetCookie(w, c)
}

// loginReferrerPolicy is the login page's Referrer-Policy. Every other
// /ui response says no-referrer, but under no-referrer a browser sends
// "Origin: null" with a form's POST, which the Origin rule must refuse;
// same-origin sends the page's own origin to itself and nothing
// elsewhere.
const loginReferrerPolicy = "same-origin"

func (in *Inspector) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", loginReferrerPolicy)
	in.render(w, r, http.StatusOK, "login", loginData{LinkOnly: in.cfg.Token == ""})
}

type loginData struct {
	Failed bool
	// LinkOnly: no token logs in (memoryd inspect): only the one-time
	// link did, so the page says how to get another instead of a form.
	LinkOnly bool
}

// login checks the token of the login form in constant time; right, it
// starts a session and sends the browser to the start page (303); wrong,
// it answers 401 with the form again and sets no cookie.
func (in *Inspector) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := r.ParseForm(); err != nil {
		in.renderError(w, r, http.StatusBadRequest, "the login form could not be read")
		return
	}
	got := []byte(r.PostForm.Get("token"))
	if in.cfg.Token == "" || subtle.ConstantTimeCompare(got, []byte(in.cfg.Token)) != 1 {
		w.Header().Set("Referrer-Policy", loginReferrerPolicy)
		in.render(w, r, http.StatusUnauthorized, "login", loginData{Failed: true, LinkOnly: in.cfg.Token == ""})
		return
	}
	setCookie(w, r, in.sessions.start())
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// loginOnce exchanges a one-time code (the inspect verb's link) for a
// session; the code is then spent.
func (in *Inspector) loginOnce(w http.ResponseWriter, r *http.Request) {
	if !in.sessions.useCode(r.URL.Query().Get("code")) {
		w.Header().Set("Referrer-Policy", loginReferrerPolicy)
		in.render(w, r, http.StatusUnauthorized, "login", loginData{Failed: true, LinkOnly: in.cfg.Token == ""})
		return
	}
	setCookie(w, r, in.sessions.start())
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// logout ends the session and clears the cookie. It is a GET: the
// inspector has one POST, the login; a forged logout costs a login.
func (in *Inspector) logout(w http.ResponseWriter, r *http.Request) {
	if id, ok := in.sessionOf(r); ok {
		in.sessions.end(id)
	}
	setCookie(w, r, "")
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
