// Package address parses and resolves memoryd's agent addresses and virtual
// note paths. An address looks like /root/reviewer/checker, and a note path
// like checkpoint.md or /root/reviewer/notes/checkpoint.md. The package is
// pure, with no storage and no clock.
package address

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Root is the address of a task's root agent.
const Root = "/root"

// MaxSegments is the most segments an address may have, root included.
const MaxSegments = 16

// MaxPathChars is the longest note path or prefix accepted, in code points
// below the notes root. Counting only what follows /notes/ means the full
// path of any accepted note is accepted too, however long its agent's address.
const MaxPathChars = 512

// notesSegment separates an agent address from a note path in a full
// virtual path. An agent segment may therefore not be named "notes".
const notesSegment = "notes"

// ErrInvalid is wrapped by every error of this package.
var ErrInvalid = errors.New("invalid address")

// shownChars is where messages cut what they quote, in code points, so that
// a path of megabytes does not come back whole in its error.
const shownChars = 100

func invalid(format string, args ...any) error {
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > shownChars {
			if cut := []rune(s); len(cut) > shownChars {
				args[i] = string(cut[:shownChars]) + "…"
			}
		}
	}
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// validSegment reports whether s matches [a-z0-9_]+.
func validSegment(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ParseAgent validates an absolute agent address and returns it unchanged.
func ParseAgent(addr string) (string, error) {
	if addr == Root {
		return addr, nil
	}
	if !strings.HasPrefix(addr, Root+"/") {
		return "", invalid("agent address %q must be /root or start with /root/", addr)
	}
	segs := strings.Split(addr[1:], "/")
	if len(segs) > MaxSegments {
		return "", invalid("agent address %q has more than %d segments", addr, MaxSegments)
	}
	for _, seg := range segs[1:] {
		if err := checkChildSegment(addr, seg); err != nil {
			return "", err
		}
	}
	return addr, nil
}

func checkChildSegment(addr, seg string) error {
	switch {
	case seg == "":
		return invalid("agent address %q has an empty segment", addr)
	case seg == "." || seg == "..":
		return invalid("agent address %q may not contain %q", addr, seg)
	case !validSegment(seg):
		return invalid("agent address %q: segment %q must match [a-z0-9_]+", addr, seg)
	case seg == "root":
		return invalid("agent address %q: \"root\" is reserved and cannot name a child", addr)
	case seg == notesSegment:
		return invalid("agent address %q: \"notes\" is reserved for note paths and cannot name an agent", addr)
	}
	return nil
}

// Resolve resolves name against current, the calling agent's address.
// An absolute name stands as given, and a relative one goes under current.
func Resolve(current, name string) (string, error) {
	if name == "" { // the caller itself
		return current, nil
	}
	if strings.HasPrefix(name, "/") {
		return ParseAgent(name)
	}
	return ParseAgent(current + "/" + name)
}

// Child returns parent/name, validated. name may have several segments.
func Child(parent, name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") {
		return "", invalid("agent name %q must be a relative name like reviewer", name)
	}
	return ParseAgent(parent + "/" + name)
}

// NotePath is a resolved note, with its owner and its path below the
// owner's notes root.
type NotePath struct {
	Agent string
	Path  string
}

// Full returns the full virtual path, such as /root/notes/checkpoint.md.
func (p NotePath) Full() string { return Full(p.Agent, p.Path) }

// Full returns the full virtual path of rel in agent's notes root.
func Full(agent, rel string) string { return agent + "/" + notesSegment + "/" + rel }

// NotesRoot returns agent's notes root with its trailing slash.
func NotesRoot(agent string) string { return agent + "/" + notesSegment + "/" }

// ParseNotePath resolves a note path given by the agent current.
// An absolute one must have the form /root/.../notes/<path>.
func ParseNotePath(current, p string) (NotePath, error) {
	if err := checkText("note path", p); err != nil {
		return NotePath{}, err
	}
	if p == "" {
		return NotePath{}, invalid("note path is empty")
	}
	agent, rel := current, p
	if strings.HasPrefix(p, "/") {
		var err error
		agent, rel, err = splitFull(p)
		if err != nil {
			return NotePath{}, err
		}
	}
	if err := checkRelPath(p, rel); err != nil {
		return NotePath{}, err
	}
	if err := checkLength("note path", p, rel); err != nil {
		return NotePath{}, err
	}
	return NotePath{Agent: agent, Path: rel}, nil
}

// ParsePrefix resolves a note prefix, a plain string prefix of note paths,
// given by the agent current. An absolute one such as /root/x/notes/ab
// names an agent's notes root followed by the prefix.
func ParsePrefix(current, prefix string) (NotePath, error) {
	if err := checkText("prefix", prefix); err != nil {
		return NotePath{}, err
	}
	if !strings.HasPrefix(prefix, "/") {
		if err := checkLength("prefix", prefix, prefix); err != nil {
			return NotePath{}, err
		}
		return NotePath{Agent: current, Path: prefix}, nil
	}
	if agent, err := ParseAgent(strings.TrimSuffix(prefix, "/"+notesSegment)); err == nil && strings.HasSuffix(prefix, "/"+notesSegment) {
		return NotePath{Agent: agent, Path: ""}, nil
	}
	agent, rel, err := splitFull(prefix)
	if err != nil {
		return NotePath{}, invalid("prefix %q starts with / but does not name a notes root like /root/agent_x/notes/", prefix)
	}
	if err := checkLength("prefix", prefix, rel); err != nil {
		return NotePath{}, err
	}
	return NotePath{Agent: agent, Path: rel}, nil
}

// splitFull splits /root/.../notes/<rest> at its first notes segment.
func splitFull(p string) (agent, rel string, err error) {
	i := strings.Index(p, "/"+notesSegment+"/")
	if i < 0 {
		return "", "", invalid("path %q starts with / but is not of the form /root/.../notes/<path>", p)
	}
	agent, err = ParseAgent(p[:i])
	if err != nil {
		return "", "", invalid("path %q: %s", p, strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
	return agent, p[i+len("/"+notesSegment+"/"):], nil
}

func checkText(what, s string) error {
	if !utf8.ValidString(s) {
		return invalid("%s is not valid UTF-8", what)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return invalid("%s contains a NUL character", what)
	}
	return nil
}

// checkLength applies MaxPathChars to rel, the part of given below its
// notes root.
func checkLength(what, given, rel string) error {
	n := utf8.RuneCountInString(rel)
	switch {
	case n <= MaxPathChars:
		return nil
	case rel == given:
		return invalid("%s is %d characters long; the limit is %d", what, n, MaxPathChars)
	}
	return invalid("%s is %d characters long below its notes root; the limit is %d", what, n, MaxPathChars)
}

// checkRelPath validates a path below a notes root.
func checkRelPath(given, rel string) error {
	if rel == "" {
		return invalid("note path %q names no file", given)
	}
	for _, seg := range strings.Split(rel, "/") {
		switch seg {
		case "":
			return invalid("note path %q has an empty segment (leading, trailing or double /)", given)
		case ".", "..":
			return invalid("note path %q may not contain a %q segment", given, seg)
		}
	}
	return nil
}
