package main

import (
	"fmt"
	"strconv"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
)

// untilFlag is a --until position: unset means the end of the log, 0 the
// empty log (before any event), P the state after the event at position P.
type untilFlag struct {
	pos int64
	set bool
}

func (u *untilFlag) String() string {
	if u == nil || !u.set {
		return ""
	}
	return strconv.FormatInt(u.pos, 10)
}

func (u *untilFlag) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("want a position: 0 (before any event) or a positive number, got %q", s)
	}
	u.pos, u.set = n, true
	return nil
}

// empty reports whether the verb must see no event at all (--until 0).
func (u *untilFlag) empty() bool { return u.set && u.pos == 0 }

// bound is the position for internal/forensics, where 0 means no bound;
// callers check empty first.
func (u *untilFlag) bound() int64 {
	if !u.set {
		return 0
	}
	return u.pos
}

// next is next up to the position: nothing for --until 0, everything when
// --until is unset.
func (u *untilFlag) next(next forensics.Next) forensics.Next {
	if u.empty() {
		return func() (events.Event, bool, error) { return events.Event{}, false, nil }
	}
	return forensics.Until(next, u.bound())
}
