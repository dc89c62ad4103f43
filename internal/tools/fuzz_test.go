package tools

import (
	"errors"
	"testing"
)

// FuzzValidate validates arbitrary arguments against every tool's schema:
// it must never panic, and every refusal is an *ArgumentError whose
// message names the tool.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"a","start_line":-1}`, `{"query":""}`, `{"limit":1.5}`,
		`{"bogus":1}`, `[]`, `"x"`, `{"role":"tool","tool_namespace":null}`, `{"path":"a","text":"b"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		for _, s := range Specs() {
			err := Validate(s.Name, []byte(args))
			if err == nil {
				continue
			}
			var ae *ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("%s: %q: not an ArgumentError: %v", s.Name, args, err)
			}
			if ae.Tool != s.Name || len(ae.Message) < len(s.Name) {
				t.Fatalf("%s: %q: message %q does not name the tool", s.Name, args, ae.Message)
			}
		}
	})
}
