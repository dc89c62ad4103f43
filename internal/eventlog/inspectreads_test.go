package eventlog

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// queryText returns the SQL of the named query in queries.sql, its
// sqlc.arg(...) placeholders as ?.
func queryText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("queries.sql")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "-- name: "+name+" ")
	if !ok {
		t.Fatalf("no query %s", name)
	}
	var sql []string
	for _, l := range strings.Split(rest, "\n")[1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		if !strings.HasPrefix(l, "--") {
			sql = append(sql, l)
		}
	}
	return regexp.MustCompile(`sqlc\.arg\(\w+\)`).ReplaceAllString(strings.Join(sql, "\n"), "?")
}

// TestTimelineReadsUseTheirIndexes: the timeline's reads of a stream's
// lifecycle events and audited calls use the partial indexes made for
// them (a partial index is used only when the query repeats its WHERE),
// not the stream's index, which would walk its notes and history events.
func TestTimelineReadsUseTheirIndexes(t *testing.T) {
	s := openStore(t, nil)
	for _, q := range []struct {
		name, index string
		args        []any
	}{
		{"StreamLifecycleEventsAfter", "events_lifecycle", []any{"s", 0, 10, 10}},
		{"StreamCallsBefore", "events_calls", []any{"s", 10, 10}},
	} {
		name, index := q.name, q.index
		rows, err := s.Reader().QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+queryText(t, name), q.args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if got := strings.Join(plan, "; "); !strings.Contains(got, "USING INDEX "+index+" ") || strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want a search of %s and no sort", name, got, index)
		}
	}
}

// TestStreamBoundsCountsByVersion: a stream's bounds and count, up to a
// position, from its versions.
func TestStreamBoundsCountsByVersion(t *testing.T) {
	s := openStore(t, nil)
	for i := range 5 {
		for _, st := range []string{"01TASK/root", "01TASK/root/a"} {
			if _, err := appendOne(t, s, st, AnyVersion, "note.appended", note("01TASK", st[len("01TASK"):], "x")); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
	}
	ctx := context.Background()
	for _, c := range []struct {
		stream            string
		until             int64
		first, last, want int64
	}{
		{"01TASK/root", 0, 1, 9, 5},
		{"01TASK/root/a", 0, 2, 10, 5},
		{"01TASK/root/a", 7, 2, 6, 3},
		{"01TASK/root/a", 1, 0, 0, 0},
		{"01TASK/none", 0, 0, 0, 0},
	} {
		first, last, n, err := s.StreamBounds(ctx, c.stream, c.until)
		if err != nil {
			t.Fatal(err)
		}
		if first != c.first || last != c.last || n != c.want {
			t.Errorf("%s until %d: %d %d %d, want %d %d %d", c.stream, c.until, first, last, n, c.first, c.last, c.want)
		}
	}
}
