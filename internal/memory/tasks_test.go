package memory

import (
	"context"
	"errors"
	"testing"
)

// TestTasksArguments: a negative cursor or a limit below 1 is
// invalid_argument; a limit above the max is clamped; 0 as before is no
// bound; audit records of an agent's calls count as its activity.
func TestTasksArguments(t *testing.T) {
	ctx := context.Background()
	s := mustOpenServiceWith(t, serviceOptions{AuditCalls: true})
	a := mustAttach(t, s, "/sessions/a.jsonl")
	b := mustAttach(t, s, "/sessions/b.jsonl")
	for _, c := range []struct {
		before int64
		limit  int
	}{{-1, 10}, {0, 0}, {0, -1}} {
		if _, err := s.Tasks(ctx, c.before, c.limit); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Tasks(%d, %d): %v, want invalid argument", c.before, c.limit, err)
		}
	}
	l, err := s.Tasks(ctx, 0, TasksMaxLimit*10)
	if err != nil || len(l.Tasks) != 2 || l.Tasks[0].TaskID != b.TaskID || l.NextBefore != nil {
		t.Fatalf("Tasks: %+v, %v; want b then a", l, err)
	}
	// A read of a's notes is audited: a becomes the newest.
	mustCall(t, s, a, "notes_list_files_by_prefix", `{}`)
	s.StopAudit() // flushes the audit
	l, err = s.Tasks(ctx, 0, 1)
	if err != nil || len(l.Tasks) != 1 || l.Tasks[0].TaskID != a.TaskID || l.NextBefore == nil {
		t.Fatalf("after an audited read of a: %+v, %v; want a first", l, err)
	}
	if root := l.Tasks[0].Agents[0]; root.LastActivityPosition != l.Tasks[0].LastActivityPosition {
		t.Errorf("a's /root last activity %d, task's %d: the audit record is the root's", root.LastActivityPosition, l.Tasks[0].LastActivityPosition)
	}
}
