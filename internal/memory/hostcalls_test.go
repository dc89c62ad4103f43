package memory

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestHostCallsBound: a bound id finds its agent with the id as call id,
// an unknown or invalid id is refused, and the oldest binding goes first
// once maxHostCalls are kept.
func TestHostCallsBound(t *testing.T) {
	var s Service
	cc := CallContext{TaskID: "T", Agent: "/root"}
	for _, bad := range []string{"", strings.Repeat("x", maxCallIDBytes+1), "a\x00b", "\xff"} {
		if err := s.BindHostCall(bad, cc); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("BindHostCall(%q): %v", bad, err)
		}
	}
	for i := range maxHostCalls + 1 {
		if err := s.BindHostCall(fmt.Sprintf("toolu_%d", i), cc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.HostCall("toolu_0"); !errors.Is(err, ErrForbidden) {
		t.Errorf("the oldest binding past the bound: %v", err)
	}
	got, err := s.HostCall("toolu_1")
	if err != nil || got != (CallContext{TaskID: "T", Agent: "/root", CallID: "toolu_1"}) {
		t.Errorf("HostCall(toolu_1) = %+v, %v", got, err)
	}
	if err := s.BindHostCall("toolu_1", CallContext{TaskID: "U", Agent: "/root"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.HostCall("toolu_1"); got.TaskID != "U" {
		t.Errorf("a rebound id: %+v", got)
	}
	if len(s.hostCalls.order) != maxHostCalls || len(s.hostCalls.byID) != maxHostCalls {
		t.Errorf("%d ids in order, %d bound", len(s.hostCalls.order), len(s.hostCalls.byID))
	}
	for _, id := range []string{"toolu_unknown", ""} {
		if _, err := s.HostCall(id); !errors.Is(err, ErrForbidden) {
			t.Errorf("HostCall(%q): %v", id, err)
		}
	}
}
