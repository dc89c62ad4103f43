// Package retention parses memoryd's retention policies: how long a task
// with no activity is kept before it is erased (docs/forgetting.md,
// Retention). It is pure: the policy a task has is an event of the log
// (task.retention_set), and package memory applies it.
package retention

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The words of a task's own policy besides a duration.
const (
	// Forever keeps the task whatever the global policy says.
	Forever = "forever"
	// Default follows the global policy (the task has none of its own).
	Default = "default"
	// Off is the global policy that erases nothing, as an empty one.
	Off = "off"
)

// Day and Week are the units d and w.
const (
	Day  = 24 * time.Hour
	Week = 7 * Day
)

// MaxDuration bounds a retention period: 100 years (36,500 days).
const MaxDuration = 36500 * Day

// ErrSyntax is a policy that is not one.
var ErrSyntax = errors.New("not a retention period")

// units are the units of a period, by suffix.
var units = map[byte]time.Duration{'h': time.Hour, 'd': Day, 'w': Week}

// ParseDuration parses a period: a whole number of 1 or more followed by
// h (hours), d (days of 24 hours) or w (weeks), such as 12h, 90d or 2w,
// of at most MaxDuration.
func ParseDuration(s string) (time.Duration, error) {
	fail := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("%w: %q %s (a whole number and a unit: h hours, d days, w weeks, e.g. 12h, 90d, 2w)", ErrSyntax, s, why)
	}
	if len(s) < 2 {
		return fail("is too short")
	}
	unit, ok := units[s[len(s)-1]]
	if !ok {
		return fail("has no unit h, d or w")
	}
	digits := s[:len(s)-1]
	if strings.TrimLeft(digits, "0123456789") != "" {
		return fail("is not a whole number and a unit")
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > int64(MaxDuration/unit) {
		return fail("is more than 36500d (100 years)")
	}
	if n < 1 {
		return fail("is not 1 or more")
	}
	return time.Duration(n) * unit, nil
}

// Policy is a retention policy: keep a task for Period after its last
// activity, or Forever. The zero Policy is off: it keeps everything.
type Policy struct {
	Period  time.Duration
	Forever bool
	// Text is the policy as written canonically (90d, forever, off).
	Text string
}

// On reports whether the policy erases anything.
func (p Policy) On() bool { return p.Period > 0 && !p.Forever }

// String returns the policy's text.
func (p Policy) String() string {
	if p.Text == "" {
		return Off
	}
	return p.Text
}

// ParseGlobal parses a server's policy (--retain, MEMORYD_RETAIN): a
// period, or off or empty for none.
func ParseGlobal(s string) (Policy, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, Off) {
		return Policy{}, nil
	}
	d, err := ParseDuration(strings.ToLower(s))
	if err != nil {
		return Policy{}, err
	}
	return Policy{Period: d, Text: Canonical(d, s)}, nil
}

// ParseTask parses a task's own policy as task.retention_set records it:
// a period, forever, or default (none of its own). It returns the policy's
// canonical text ("" for default) and the policy.
func ParseTask(s string) (text string, p Policy, err error) {
	switch s {
	case Default:
		return "", Policy{}, nil
	case Forever:
		return Forever, Policy{Forever: true, Text: Forever}, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return "", Policy{}, fmt.Errorf("%w, nor forever or default", err)
	}
	text = Canonical(d, s)
	return text, Policy{Period: d, Text: text}, nil
}

// Canonical returns the canonical text of the period d that s spells:
// its number without leading zeros and its unit.
func Canonical(d time.Duration, s string) string {
	unit := s[len(s)-1] | 0x20 // lower case
	return strconv.FormatInt(int64(d/units[unit]), 10) + string(unit)
}

// Effective returns the policy that applies to a task whose own policy
// is own ("" for none, as the tasks projection keeps it) under the global
// policy, and where it comes from: "task" or "global".
func Effective(own string, global Policy) (Policy, string, error) {
	if own == "" {
		return global, "global", nil
	}
	_, p, err := ParseTask(own)
	return p, "task", err
}

// Due reports whether a task whose last activity was at last is due for
// erasure at now under p: p is on, and last is at least p.Period before
// now.
func Due(p Policy, last, now time.Time) bool {
	return p.On() && !last.Add(p.Period).After(now)
}
