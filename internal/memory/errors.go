package memory

import (
	"errors"
	"fmt"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// These are the error kinds of memoryd's commands. Every error a Service
// method returns wraps one of them, or is an unexpected internal error.
// internal/api maps them to HTTP statuses in one place.
var (
	ErrInvalidArgument = errors.New("invalid argument")
	ErrNotFound        = errors.New("not found")
	ErrForbidden       = errors.New("forbidden")
	ErrConflict        = eventlog.ErrConflict
	ErrTooLarge        = errors.New("too large")
	ErrFenced          = errors.New("fenced")
	ErrUnavailable     = eventlog.ErrUnavailable
)

// These are the codes of the error kinds above, as the API's error
// envelope and the audit's outcome spell them. CodeInternal is any other.
const (
	CodeInvalidArgument = "invalid_argument"
	CodeNotFound        = "not_found"
	CodeForbidden       = "forbidden"
	CodeConflict        = "conflict"
	CodeTooLarge        = "too_large"
	CodeFenced          = "fenced"
	CodeUnavailable     = "unavailable"
	CodeInternal        = "internal"
)

// Error is a command failure with a message safe to show to a client or a
// model, and optional structured details.
type Error struct {
	Kind    error
	Message string
	Details map[string]any
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the error's kind, for errors.Is.
func (e *Error) Unwrap() error { return e.Kind }

// newError returns an Error of kind with a formatted message.
func newError(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func invalidf(format string, args ...any) error { return newError(ErrInvalidArgument, format, args...) }
func notFoundf(format string, args ...any) error {
	return newError(ErrNotFound, format, args...)
}
func forbiddenf(format string, args ...any) error { return newError(ErrForbidden, format, args...) }
func conflictf(format string, args ...any) error  { return newError(ErrConflict, format, args...) }

// ErrorKind returns the code of err's kind, which the API answers with and
// the audit records as the outcome.
func ErrorKind(err error) string {
	for _, k := range []struct {
		kind error
		name string
	}{
		{ErrInvalidArgument, CodeInvalidArgument}, {ErrNotFound, CodeNotFound}, {ErrForbidden, CodeForbidden},
		{ErrConflict, CodeConflict}, {ErrTooLarge, CodeTooLarge}, {ErrFenced, CodeFenced}, {ErrUnavailable, CodeUnavailable},
	} {
		if errors.Is(err, k.kind) {
			return k.name
		}
	}
	return CodeInternal
}
