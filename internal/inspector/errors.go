package inspector

import (
	"fmt"

	"github.com/memoryd/memoryd/internal/memory"
)

// The inspector's own errors are memory's kinds, so that internal/api's
// one mapping gives their status.

func errBadParam(name, want string) error {
	return &memory.Error{Kind: memory.ErrInvalidArgument, Message: fmt.Sprintf("the parameter %s must be %s", name, want)}
}

func errNotFound(format string, args ...any) error {
	return &memory.Error{Kind: memory.ErrNotFound, Message: fmt.Sprintf(format, args...)}
}
