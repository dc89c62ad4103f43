package inspector

import (
	"net/http"
	"net/url"
	"strings"
)

// ContentSecurityPolicy is sent with every /ui response. It allows the
// inspector's own stylesheet, inline images and forms, and no script.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// setHeaders sets the headers every /ui response carries.
func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
}

// guard runs before any /ui page. It sets the security headers and refuses
// a bad Host, a foreign Origin and any method but GET and the login POST.
func (in *Inspector) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header())
		if in.cfg.HostAllowed != nil && !in.cfg.HostAllowed(r.Host) { // DNS rebinding
			in.renderError(w, r, http.StatusForbidden, "the Host header must name a loopback address")
			return
		}
		isLogin := r.Method == http.MethodPost && r.URL.Path == Prefix+"/login"
		// Browsers send an Origin with every POST. Only the login POST may
		// have one, the request's own, so a page of another site cannot post.
		if origin, ok := r.Header["Origin"]; ok {
			if !isLogin || len(origin) != 1 || !sameOrigin(origin[0], r) {
				in.renderError(w, r, http.StatusForbidden, "requests from another origin are refused")
				return
			}
		}
		if r.Method != http.MethodGet && !isLogin {
			in.renderError(w, r, http.StatusMethodNotAllowed, "the inspector only reads: this method is not allowed here")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether origin is the origin of the request itself,
// with its scheme and exactly its Host.
func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}
