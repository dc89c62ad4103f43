package main

import (
	"fmt"
	"strconv"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
)

// untilFlag is a --until position. Unset means the end of the log, 0 the
// empty log, and P the state after the event at position P.
type untilFlag struct {
	pos int64
	set bool
}

// String returns the position as given, or "" when unset.
func (u *untilFlag) String() string {
	if u == nil || !u.set {
		return ""
	}
	return strconv.FormatInt(u.pos, 10)
}

// Set parses a position.
func (u *untilFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("want a position: 0 (before any event) or a positive number, got %q", s)
	}
	u.pos, u.set = n, true
	return nil
}

// empty reports whether the verb must see no event at all.
func (u *untilFlag) empty() bool { return u.set && u.pos == 0 }

// bound returns the position for internal/forensics, where 0 means no
// bound. Callers check empty first.
func (u *untilFlag) bound() int64 {
	if !u.set {
		return 0
	}
	return u.pos
}

// next returns next cut at the position. It yields nothing for --until 0.
func (u *untilFlag) next(next forensics.Next) forensics.Next {
	if u.empty() {
		return func() (events.Event, bool, error) { return events.Event{}, false, nil }
	}
	return forensics.Until(next, u.bound())
}
