package memory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestReclaimGivesBackAnImportsChurn: an import records every entry's text
// as an open text and deletes it when its chunk seals, all in one
// transaction. On PostgreSQL those rows stay in the table's files as dead
// tuples, which Reclaim gives back; the history reads the same after it.
// On SQLite Reclaim does nothing, and succeeds.
func TestReclaimGivesBackAnImportsChurn(t *testing.T) {
	loc := pgtest.Or(t, filepath.Join(t.TempDir(), "memory.db"))
	s := mustOpenAt(t, loc, testOptions())
	ctx := context.Background()
	b := sessiongen.NewBuilder(7)
	for i := range 400 {
		b.UserText(strings.Repeat("a line of the imported session, number "+string(rune('a'+i%26))+". ", 40))
	}
	b.UserText("the needle QXZ-RECLAIM-1")
	sess := b.Session()
	res, err := s.ImportSession(ctx, AttachRequest{SessionKey: "imported"}, sess.Entries, sess.Branch, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := CallContext{TaskID: res.TaskID, Agent: res.Agent}
	_, onFile := eventlog.ParseLocation(loc).File()
	onPostgres := !onFile
	size := func() int64 {
		var n int64
		if err := s.store.Reader().QueryRowContext(ctx, "SELECT pg_total_relation_size('history_open_texts')").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var before int64
	if onPostgres {
		before = size()
	}
	if err := s.Reclaim(ctx); err != nil {
		t.Fatalf("reclaim: %v", err)
	}
	if onPostgres {
		// 400 texts of about 2.6 KB were inserted and all but the open
		// chunk's deleted: about a megabyte of dead rows.
		after := size()
		t.Logf("history_open_texts: %d bytes before the reclaim, %d after", before, after)
		if after > before/4 || before < 512<<10 {
			t.Errorf("history_open_texts holds %d bytes after the reclaim, %d before: want a quarter or less", after, before)
		}
	}
	d := detailsMap(t, mustCall(t, s, cc, "history_search_contents", `{"query":"QXZ-RECLAIM-1"}`))
	if n, _ := d["n_returned"].(float64); n != 1 {
		t.Fatalf("after the reclaim the search finds %v, want the one needle: %v", d["n_returned"], d)
	}
}
