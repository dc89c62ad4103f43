package api

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// requireToken refuses requests without "Authorization: Bearer <token>",
// comparing in constant time.
func requireToken(token string, log *slog.Logger) func(http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := []byte(r.Header.Get("Authorization"))
			if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="memoryd"`)
				writeError(w, r, log, httpErr(errUnauthenticated, "missing or wrong bearer token; send Authorization: Bearer <token> (MEMORYD_TOKEN or the token file beside the database)"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// refuseForeign refuses requests that carry an Origin header (browsers)
// and, when checkHost is set, requests whose Host is not loopback (DNS
// rebinding).
func refuseForeign(checkHost bool, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := r.Header["Origin"]; ok {
				writeError(w, r, log, httpErr(errOriginRefused, "requests from browsers (with an Origin header) are refused"))
				return
			}
			if checkHost && !loopbackHost(r.Host) {
				writeError(w, r, log, httpErr(errOriginRefused, "the Host header must name a loopback address"))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// loopbackHost reports whether a Host header names localhost or a loopback IP.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// limitBody refuses bodies over max bytes: at once when Content-Length
// says so, else when reading passes the limit.
func limitBody(max int64, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > max {
				writeError(w, r, log, httpErr(errBodyTooLarge, fmt.Sprintf("the request body is over the %d byte limit", max)))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, max)
			next.ServeHTTP(w, r)
		})
	}
}

// recoverer turns a panic into a logged 500 with the fixed message.
func recoverer(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("panic", "request_id", middleware.GetReqID(r.Context()), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					writeError(w, r, log, fmt.Errorf("panic: %v", v))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// observe logs every request and records its metrics.
func observe(log *slog.Logger, m *metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			route := chi.RouteContext(r.Context()).RoutePattern()
			if route == "" {
				route = "unmatched"
			}
			elapsed := time.Since(start)
			m.observe(r.Method, route, ww.Status(), elapsed)
			log.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("request_id", middleware.GetReqID(r.Context())),
				slog.String("method", r.Method), slog.String("route", route),
				slog.Int("status", ww.Status()), slog.Int("bytes", ww.BytesWritten()),
				slog.Duration("duration", elapsed))
		})
	}
}
