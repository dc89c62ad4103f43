package api

import (
	"database/sql"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/memory"
)

// TestStateRolloverDue: GET /v1/state and the lifecycle responses name the
// rollover the host prepares at its next settled boundary (rollover_due,
// omitted when none), and the stored state does not carry it.
func TestStateRolloverDue(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	s := lcOpen(t, db, memory.OpenOptions{})
	for i, r := range []struct {
		name string
		from []lcStep
		want string // "": omitted
	}{
		{"READY", nil, ""},
		{"FENCED", lcFenced, ""},
		{"CHECKPOINT_SAVED", lcSaved, fence.ReasonFallback},
		{"CHECKPOINT_SAVED of a hard rollover", lcSeq(lcHardQueued, []lcStep{lcArm(fence.KindFallback, "w1"),
			lcAdmit("c1", "notes_write_file", lcOwnWrite), lcTool("notes_write_file", "c1", lcOwnWrite)}), fence.ReasonHardRollover},
		{"ROLLOVER_PENDING new_context", lcPending, fence.ReasonNewContext},
		{"ROLLOVER_PENDING hard, no checkpoint", lcHardPending, ""},
		{"ROLLING_OVER", lcRollingNC, ""},
		{"MANUAL_SAVED", lcManualSaved, fence.ReasonManual},
		{"MANUAL_COMPACTING", lcManualCompacting, fence.ReasonManual},
		{"window 2", lcWindow2, ""},
	} {
		t.Run(r.name, func(t *testing.T) {
			a := s.attach(t, fmt.Sprintf("/sessions/rollover-due-%d.jsonl", i))
			check := func(what string, st map[string]any) {
				t.Helper()
				got, present := st["rollover_due"]
				switch {
				case r.want == "" && present:
					t.Errorf("%s: rollover_due %v, want it omitted; state %v", what, got, st)
				case r.want != "" && got != r.want:
					t.Errorf("%s: rollover_due %v, want %q; state %v", what, got, r.want, st)
				}
			}
			if n := len(r.from); n > 0 {
				a.mustRun(t, r.from[:n-1]...)
				code, res := a.run(t, r.from[n-1])
				if st, ok := res["state"].(map[string]any); code == http.StatusOK && ok {
					check(r.from[n-1].String()+" response", st)
				}
			}
			check("GET /v1/state", a.state(t))
		})
	}
	s.close()

	sqlDB, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	var n int
	if err := sqlDB.QueryRow(`SELECT count(*) FROM agent_states WHERE state LIKE '%rollover_due%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d stored states carry rollover_due; it is derived, never stored", n)
	}
}
