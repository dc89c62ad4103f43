package inspector

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"
)

// CookieName is the /ui session cookie. Its value is a random session id,
// never the token, and the server keeps the ids it issued.
const CookieName = "memoryd_ui"

const (
	sessionLifetime = 12 * time.Hour
	codeLifetime    = 10 * time.Minute
	maxLoginBody    = 4 << 10
)

// sessions holds the live session ids and the unused one-time login codes,
// each with its expiry. They live in memory, so a restart logs everyone out.
type sessions struct {
	mu    sync.Mutex
	ids   map[string]time.Time
	codes map[string]time.Time
	now   func() time.Time
}

// newSessions returns an empty sessions.
func newSessions() *sessions {
	return &sessions{ids: map[string]time.Time{}, codes: map[string]time.Time{}, now: time.Now}
}

// randomID returns a new random session id or code.
func randomID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b[:])
}

// start starts a session and returns its id.
func (s *sessions) start() string {
	id := randomID()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[id] = s.now().Add(sessionLifetime)
	return id
}

// valid reports whether id is a live session, forgetting it once expired.
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

// end ends the session id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}

// newCode returns a new one-time login code.
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

// setCookie sets the session cookie to id, or clears it when id is empty.
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

// loginReferrerPolicy is the login page's Referrer-Policy. Under the
// no-referrer of other pages, a browser would send a null Origin with the
// form's POST, which the Origin rule refuses.
const loginReferrerPolicy = "same-origin"

// loginPage shows the login form.
func (in *Inspector) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", loginReferrerPolicy)
	in.render(w, r, http.StatusOK, "login", loginData{LinkOnly: in.cfg.Token == ""})
}

// loginData is what the login page shows.
type loginData struct {
	Failed bool
	// LinkOnly is set when no token logs in and only the one-time link
	// did, so the page says how to get another instead of a form.
	LinkOnly bool
}

// login checks the token of the login form in constant time. A right one
// starts a session, and a wrong one gets the form again and no cookie.
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

// loginOnce exchanges a one-time code from the inspect verb's link for a
// session, and the code is then spent.
func (in *Inspector) loginOnce(w http.ResponseWriter, r *http.Request) {
	if !in.sessions.useCode(r.URL.Query().Get("code")) {
		w.Header().Set("Referrer-Policy", loginReferrerPolicy)
		in.render(w, r, http.StatusUnauthorized, "login", loginData{Failed: true, LinkOnly: in.cfg.Token == ""})
		return
	}
	setCookie(w, r, in.sessions.start())
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// logout ends the session and clears the cookie. It is a GET, as the
// login is the one POST, and a forged logout costs only a login.
func (in *Inspector) logout(w http.ResponseWriter, r *http.Request) {
	if id, ok := in.sessionOf(r); ok {
		in.sessions.end(id)
	}
	setCookie(w, r, "")
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}
