package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// requireToken refuses requests without the bearer token, comparing in
// constant time. activity, if set, brackets each request that passed.
func requireToken(token string, log *slog.Logger, activity func() (done func())) func(http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got := []byte(r.Header.Get("Authorization"))
			if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="memoryd"`)
				writeError(w, r, log, httpErr(errUnauthenticated, "missing or wrong bearer token; send Authorization: Bearer <token> (MEMORYD_TOKEN or the token file beside the database)"))
				return
			}
			if activity != nil {
				defer activity()()
			}
			next.ServeHTTP(w, r)
		})
	}
}

// refuseForeign refuses requests from browsers and, when checkHost is set,
// requests whose Host is not loopback.
func refuseForeign(checkHost bool, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := r.Header["Origin"]; ok {
				writeError(w, r, log, httpErr(errOriginRefused, "requests from browsers (with an Origin header) are refused"))
				return
			}
			if checkHost && !loopbackHost(r.Host) { // DNS rebinding
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

// limitBody refuses bodies over max bytes, at once when Content-Length
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
					log.Error("panic", "request_id", requestID(r.Context()), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
					writeError(w, r, log, fmt.Errorf("panic: %v", v))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// requestIDHeader carries memoryd's id of a request in its response, for
// the client to quote. A client's own X-Request-Id is never taken as the
// id, as it can be any bytes and the id is stored on events.
const requestIDHeader = "X-Request-Id"

// requestIDs makes memoryd's request ids, a random prefix per server, a
// hyphen and a counter. They are unique across restarts without naming
// the host.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

// newRequestIDs returns request ids with a new random prefix.
func newRequestIDs() *requestIDs {
	var b [6]byte
	rand.Read(b[:])
	return &requestIDs{prefix: hex.EncodeToString(b[:])}
}

// next returns a new request id.
func (ids *requestIDs) next() string {
	return fmt.Sprintf("%s-%06d", ids.prefix, ids.n.Add(1))
}

// maxClientRequestID bounds the client's X-Request-Id that is logged.
const maxClientRequestID = 64

// clientRequestID returns the client's X-Request-Id when it is a short
// plain token, to log beside memoryd's own id.
func clientRequestID(h http.Header) string {
	v := h.Get(requestIDHeader)
	if len(v) > maxClientRequestID {
		return ""
	}
	for i := range len(v) {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == ':', c == '-':
		default:
			return ""
		}
	}
	return v
}

// requestInfo is what memoryd keeps of a request in its context, its id
// and the code of the error writeError answered it with.
type requestInfo struct {
	id   string
	code string
}

// requestInfoKey is the context key of a requestInfo.
type requestInfoKey struct{}

// infoOf returns the requestInfo of ctx, or nil.
func infoOf(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return ri
}

// requestID returns memoryd's id of the request of ctx, or "" outside one.
func requestID(ctx context.Context) string {
	if ri := infoOf(ctx); ri != nil {
		return ri.id
	}
	return ""
}

// statusClientClosed is the status logged and counted for a canceled
// request, as nginx does. Nobody read what was written back.
const statusClientClosed = 499

// observe gives every request memoryd's id, logs it and records its
// metrics.
func observe(log *slog.Logger, m *metrics, ids *requestIDs) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			info := &requestInfo{id: ids.next()}
			r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
			w.Header().Set(requestIDHeader, info.id)
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			route := chi.RouteContext(r.Context()).RoutePattern()
			if route == "" {
				route = "unmatched"
			}
			elapsed := time.Since(start)
			status := ww.Status()
			if info.code == codeCanceled {
				status = statusClientClosed
			}
			m.observe(r.Method, route, status, elapsed)
			if !log.Enabled(r.Context(), slog.LevelInfo) {
				return // no line to build with --log-level above info
			}
			attrs := make([]slog.Attr, 0, 8)
			attrs = append(attrs, slog.String("request_id", info.id),
				slog.String("method", r.Method), slog.String("route", route),
				slog.Int("status", status), slog.Int("bytes", ww.BytesWritten()),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000)) // a unit in the name; slog's Duration is bare nanoseconds
			if info.code != "" {
				attrs = append(attrs, slog.String("code", info.code))
			}
			if id := clientRequestID(r.Header); id != "" {
				attrs = append(attrs, slog.String("client_request_id", id))
			}
			log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		})
	}
}
