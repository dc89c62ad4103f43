package inspector

import (
	"fmt"

	"github.com/memoryd/memoryd/internal/memory"
)

// The inspector's own errors are memory's kinds, so that internal/api's
// one mapping gives their status.

// errBadParam is the error of a query parameter that is not want.
func errBadParam(name, want string) error {
	return &memory.Error{Kind: memory.ErrInvalidArgument, Message: fmt.Sprintf("the parameter %s must be %s", name, want)}
}

// errNotFound is the error of something the page names that does not exist.
func errNotFound(format string, args ...any) error {
	return &memory.Error{Kind: memory.ErrNotFound, Message: fmt.Sprintf(format, args...)}
}
