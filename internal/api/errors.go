package api

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// These errors originate in the HTTP layer itself.
var (
	errUnauthenticated  = errors.New("unauthenticated")
	errOriginRefused    = errors.New("origin refused")
	errBodyTooLarge     = errors.New("body too large")
	errUnsupportedMedia = errors.New("unsupported media type")
	errBadRequest       = errors.New("bad request")
	errNoRoute          = errors.New("no route")
	errMethod           = errors.New("method not allowed")
)

// apiError is the body of every non-2xx response.
type apiError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// codeUnauthenticated is the code of a request without the right token. It
// is the HTTP layer's one code of its own, and every other code is memory's.
const codeUnauthenticated = "unauthenticated"

// status maps an error to its code and HTTP status. It is the one place
// where memoryd's error kinds meet HTTP.
func status(err error) (string, int) {
	switch {
	case errors.Is(err, errBadRequest):
		return memory.CodeInvalidArgument, http.StatusBadRequest
	case errors.Is(err, errUnauthenticated):
		return codeUnauthenticated, http.StatusUnauthorized
	case errors.Is(err, errOriginRefused):
		return memory.CodeForbidden, http.StatusForbidden
	case errors.Is(err, errNoRoute):
		return memory.CodeNotFound, http.StatusNotFound
	case errors.Is(err, errMethod):
		return memory.CodeInvalidArgument, http.StatusMethodNotAllowed
	case errors.Is(err, errBodyTooLarge):
		return memory.CodeTooLarge, http.StatusRequestEntityTooLarge
	case errors.Is(err, errUnsupportedMedia):
		return memory.CodeInvalidArgument, http.StatusUnsupportedMediaType
	}
	code := memory.ErrorKind(err) // any error not of the HTTP layer
	return code, statusOfCode[code]
}

// statusOfCode is the HTTP status of each of memory's codes.
var statusOfCode = map[string]int{
	memory.CodeInvalidArgument: http.StatusBadRequest,
	memory.CodeForbidden:       http.StatusForbidden,
	memory.CodeNotFound:        http.StatusNotFound,
	memory.CodeConflict:        http.StatusConflict,
	memory.CodeFenced:          http.StatusLocked,
	memory.CodeTooLarge:        http.StatusRequestEntityTooLarge,
	memory.CodeUnavailable:     http.StatusServiceUnavailable,
	memory.CodeInternal:        http.StatusInternalServerError,
}

// codeCanceled is the code logged and counted, never sent, for a request
// whose context ended before it was answered.
const codeCanceled = "canceled"

// failure returns the code a failed request is logged and counted with,
// and the error it is answered with.
func failure(r *http.Request, err error) (code string, answer error) {
	code, st := status(err)
	// A server error of a request whose context has ended is a
	// cancellation, whatever error it surfaced as. Nobody reads the answer,
	// and nothing was written.
	if st >= 500 && r.Context().Err() != nil {
		return codeCanceled, memory.ErrUnavailable
	}
	return code, err
}

// fixedMessages are the messages of errors that carry no safe message of
// their own.
var fixedMessages = map[string]string{
	memory.CodeInvalidArgument: "the request is invalid",
	codeUnauthenticated:        "missing or wrong bearer token",
	memory.CodeForbidden:       "forbidden",
	memory.CodeNotFound:        "not found",
	memory.CodeConflict:        "the request conflicts with the current state; reload and retry",
	memory.CodeFenced:          "the checkpoint fence blocks this call",
	memory.CodeTooLarge:        "the request is too large",
	memory.CodeUnavailable:     "storage is unavailable (busy, full or shutting down); nothing was written, retry later",
	memory.CodeInternal:        "internal error",
}

// writeError writes err as the error envelope and notes its code for the
// request's log line. Server errors are logged with the request id.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code, answer := failure(r, err)
	if ri := infoOf(r.Context()); ri != nil {
		ri.code = code
	}
	st, body := ErrorEnvelope(answer)
	if st >= 500 && code != codeCanceled { // a canceled request is not memoryd's failure
		log.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("request_id", requestID(r.Context())),
			slog.String("code", code), slog.String("error", err.Error()))
	}
	encode(w, st, body)
}

// httpError is an error of the HTTP layer with a safe message.
type httpError struct {
	kind    error
	message string
}

// Error returns the safe message.
func (e *httpError) Error() string { return e.message }

// Unwrap returns the error's kind.
func (e *httpError) Unwrap() error { return e.kind }

// httpErr returns an httpError of kind with message.
func httpErr(kind error, message string) error { return &httpError{kind: kind, message: message} }

// ErrorEnvelope returns the status and body memoryd answers err with over
// HTTP and in the call verb. Only memory's and the HTTP layer's messages
// are shown, so no internal text leaks.
func ErrorEnvelope(err error) (int, any) {
	st, body := errorObject(err)
	return st, struct {
		Error apiError `json:"error"`
	}{body}
}

// errorObject returns ErrorEnvelope's status and error object.
func errorObject(err error) (int, apiError) {
	code, st := status(err)
	body := apiError{Code: code, Message: fixedMessages[code], Details: map[string]any{}}
	var me *memory.Error
	var he *httpError
	switch {
	case code == memory.CodeInternal:
	case errors.As(err, &me):
		body.Message = me.Message
		for k, v := range me.Details {
			body.Details[k] = v
		}
	case errors.As(err, &he):
		body.Message = he.message
	}
	return st, body
}
