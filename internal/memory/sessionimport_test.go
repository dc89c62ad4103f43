package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/sessiongen"
)

// importFiles is a session of n turns and a sub-agent's of m turns, the
// sub-agent's to join the session's task.
func importFiles(n, m int) []SessionFile {
	root, sub := sessiongen.NewBuilder(1), sessiongen.NewBuilder(2)
	for i := range n {
		root.UserText(fmt.Sprintf("session turn %d", i))
	}
	for i := range m {
		sub.UserText(fmt.Sprintf("sub-agent turn %d", i))
	}
	rs, ss := root.Session(), sub.Session()
	return []SessionFile{
		{Attach: AttachRequest{SessionKey: "cc/s", SessionID: "s", SessionFile: "/t/s.jsonl"}, Entries: rs.Entries, Branch: rs.Branch},
		{Attach: AttachRequest{SessionKey: "cc/s/a1", SessionID: "s", SessionFile: "/t/s/subagents/agent-a1.jsonl", Task: &TaskRef{}},
			Entries: ss.Entries, Branch: ss.Branch},
	}
}

// TestImportSessionsIsOneTransaction: a session and its sub-agent are
// imported whole or not at all. A refused entry of the second file, found
// before the transaction or inside it after the first file was written,
// leaves the log as it was, and the error names the file and the entry.
func TestImportSessionsIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s := mustOpenService(t)

	files := importFiles(20, 5)
	files[1].Entries = append([]json.RawMessage(nil), files[1].Entries...)
	files[1].Entries[3] = json.RawMessage(strings.Replace(string(files[1].Entries[3]), `"role":"user"`, `"role":"user","role":"user"`, 1))
	_, err := s.ImportSessions(ctx, files, nil)
	var fe *FileError
	var ee *EntryError
	if !errors.As(err, &fe) || fe.File != 1 || !errors.As(err, &ee) || ee.Index != 3 || !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), `the key "role" twice`) {
		t.Fatalf("a duplicate key in the second file: %v, want a *FileError of file 1 around an *EntryError of entry 3", err)
	}
	if p := lastPosition(t, s); p != 0 {
		t.Fatalf("the refused import stored %d events", p)
	}

	// Inside the transaction: the sub-agent's entry already synced with
	// other content, while the session has grown by one entry.
	files = importFiles(20, 5)
	if _, err := s.ImportSessions(ctx, files, nil); err != nil {
		t.Fatal(err)
	}
	before := lastPosition(t, s)
	log := agentLog(t, s, 1)
	grown := importFiles(21, 5)
	grown[1].Entries[2] = json.RawMessage(strings.Replace(string(grown[1].Entries[2]), "sub-agent turn 2", "changed", 1))
	_, err = s.ImportSessions(ctx, grown, nil)
	if !errors.As(err, &fe) || fe.File != 1 || !errors.As(err, &ee) || ee.Index != 2 || !errors.Is(err, ErrConflict) {
		t.Fatalf("a changed entry of the second file: %v, want a *FileError of file 1 around an *EntryError of entry 2", err)
	}
	if p, after := lastPosition(t, s), agentLog(t, s, 1); p != before || !reflect.DeepEqual(after, log) {
		t.Fatalf("the refused import moved the log from %d to %d", before, p)
	}

	// One file alone keeps ImportSession's errors: an *EntryError itself.
	grown[0].Entries[4] = json.RawMessage(strings.Replace(string(grown[0].Entries[4]), "session turn 4", "changed", 1))
	_, err = s.ImportSession(ctx, grown[0].Attach, grown[0].Entries, grown[0].Branch, nil)
	if _, ok := err.(*EntryError); !ok {
		t.Fatalf("ImportSession: %T %v, want an *EntryError", err, err)
	}
}

// TestImportSessionsEqualsSequentialImports: importing a session and its
// sub-agent in one call writes the same log and projections as importing
// them one after the other; again it stores nothing, and a grown file
// appends only its new entries.
func TestImportSessionsEqualsSequentialImports(t *testing.T) {
	ctx := context.Background()
	seq, one, cc := twinServices(t) // the same task for both, already attached
	files := importFiles(12, 7)
	files[0].Attach = AttachRequest{SessionKey: "/home/u/.pi/agent/sessions/twin.jsonl"}

	a, err := seq.ImportSession(ctx, files[0].Attach, files[0].Entries, files[0].Branch, nil)
	if err != nil {
		t.Fatal(err)
	}
	child := files[1].Attach
	child.Task = &TaskRef{TaskID: cc.TaskID}
	b, err := seq.ImportSession(ctx, child, files[1].Entries, files[1].Branch, nil)
	if err != nil {
		t.Fatal(err)
	}

	var progress []int
	res, err := one.ImportSessions(ctx, files, func(n int) { progress = append(progress, n) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res, []SessionImport{a, b}) {
		t.Errorf("one call answered %+v, one after the other %+v", res, []SessionImport{a, b})
	}
	if res[1].TaskID != cc.TaskID || !strings.HasPrefix(res[1].Agent, "/root/") || res[1].Stored != 7 {
		t.Errorf("the sub-agent: %+v, want a child agent of task %s with 7 entries", res[1], cc.TaskID)
	}
	if files[1].Attach.Task.TaskID != "" {
		t.Error("ImportSessions changed the caller's TaskRef")
	}
	if len(progress) == 0 || progress[len(progress)-1] != 19 {
		t.Errorf("progress %v, want it to end at the 19 entries of both files", progress)
	}
	if x, y := agentLog(t, seq, 1), agentLog(t, one, 1); !reflect.DeepEqual(x, y) {
		t.Errorf("the logs differ:\n%s\n---\n%s", strings.Join(x, "\n"), strings.Join(y, "\n"))
	}
	if x, y := projectionDigest(t, seq), projectionDigest(t, one); !reflect.DeepEqual(x, y) {
		t.Errorf("the projections differ:\n%v\n%v", x, y)
	}

	end := lastPosition(t, one)
	again, err := one.ImportSessions(ctx, files, nil)
	if err != nil || again[0].Stored+again[1].Stored != 0 || lastPosition(t, one) != end {
		t.Fatalf("imported again: %v %+v, %d events after %d", err, again, lastPosition(t, one), end)
	}
	grown := importFiles(12, 8)
	grown[0].Attach = files[0].Attach
	again, err = one.ImportSessions(ctx, grown, nil)
	if err != nil || again[0].Stored != 0 || again[1].Stored != 1 || again[1].Unchanged != 7 {
		t.Fatalf("the sub-agent grown by one entry: %v %+v", err, again)
	}
	if log := agentLog(t, one, end+1); len(log) == 0 || !strings.Contains(strings.Join(log, "\n"), "sub-agent turn 7") {
		t.Errorf("the grown import appended %q, want the new entry", log)
	}
}
