package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestMain lets the test binary stand in for the bench binary when bench
// re-executes itself as the read8 ceiling (bench bare-server FILE), as
// append16's durable reference (bench durable-server DB FILE) or as the
// search-all rows' scan (bench scan-files NEEDLE DIR).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == bareVerb || os.Args[1] == durableVerb || os.Args[1] == scanVerb) {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestRunTiny runs the whole program at a tiny scale and checks that the
// report has every row with a number in its figure column. It asserts
// nothing about speed.
func TestRunTiny(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-history-bytes", "2<<20", "-events", "2000", "-rollover-entries", "1000", "-dur", "200ms", "-reps", "1", "-dir", t.TempDir()}
	if os.Getenv("MEMORYD_TEST_POSTGRES") != "" { // else the bench starts a private server
		args = append(args, "-postgres", pgtest.NewDatabase(t))
	}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	report := stdout.String()
	number := regexp.MustCompile(`^[0-9][0-9,]*(\.[0-9]+)? `)
	for _, row := range rowNames() {
		var cells []string
		for line := range strings.Lines(report) {
			if strings.HasPrefix(line, "| "+row+" |") {
				cells = strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
				break
			}
		}
		if len(cells) != 6 {
			t.Errorf("row %s: no table line with 6 cells in the report:\n%s", row, report)
			continue
		}
		if fig := strings.TrimSpace(cells[1]); !number.MatchString(fig) {
			t.Errorf("row %s: figure %q is not a number", row, fig)
		}
		res := strings.TrimSpace(cells[5])
		switch {
		case !hasTarget(row):
			if res != "—" {
				t.Errorf("row %s has no target, but its result is %q", row, res)
			}
		case res != "pass" && res != "short" && res != "pass (stretch: no)" && res != "pass (stretch: yes)":
			t.Errorf("row %s: result %q, want pass or short", row, res)
		}
		if !strings.Contains(report, "### "+row+"\n") {
			t.Errorf("row %s has no notes", row)
		}
	}
	for _, want := range []string{"## Machine", "select sqlite_version()", "go run ./cmd/bench -history-bytes '2<<20'", "History ingest", "History server memory at the end of the ingest", "- bound: bare net/http, same requests: ", "- raw SQLite, 1,000 inserts a FULL transaction: ", "- memoryd p50 − bare p50: ",
		"- " + inspectorAtPages[2].name + ": ", "- " + inspectorAtPages[4].name + ": ",
		"`memoryd import-sessions --from all` of them", "bytes per byte of session files", "- scan GB/s of the bytes it read: "} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if t.Failed() {
		fmt.Println(report)
	}
}

// hasTarget reports whether the row named name has a target.
func hasTarget(name string) bool {
	for _, r := range allRows {
		if r.name == name {
			return r.target != 0
		}
	}
	return false
}

// TestRunSubset runs a subset of rows and checks that the others are left
// out.
func TestRunSubset(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-rows", "append1,startup", "-events", "1000", "-dur", "100ms", "-reps", "2"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	for _, row := range rowNames() {
		has := strings.Contains(stdout.String(), "| "+row+" |")
		if want := row == "append1" || row == "startup"; has != want {
			t.Errorf("row %s in the report: %v, want %v", row, has, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "2<<20": 2 << 20, "64MiB": 64 << 20, "1GiB": 1 << 30, "500MB": 500e6, "4K": 4096} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1", "1<<99", "12QB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &stdout, &stderr); err != nil {
		t.Fatalf("-h: %v", err)
	}
	if !strings.Contains(stderr.String(), "usage: bench") || !strings.Contains(stderr.String(), "-history-bytes") {
		t.Errorf("-h printed:\n%s", stderr.String())
	}
	for _, args := range [][]string{{"-rows", "nope"}, {"-reps", "0"}, {"extra"}, {"-history-bytes", "lots"}} {
		if _, ok := run(context.Background(), args, &stdout, &stderr).(*usageError); !ok {
			t.Errorf("run(%q) is no usage error", args)
		}
	}
}

func TestSpreadFormat(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		f    func(float64) string
		want string
	}{
		{[]float64{2000, 1000, 3000}, rate("req/s"), "2,000 [1,000–3,000] req/s"},
		{[]float64{5}, rate("req/s"), "5 req/s"},
		{[]float64{0.0005, 0.002, 0.001}, ms, "1.00 ms [500 µs–2.00 ms]"},
		{[]float64{1, 2, 3, 4}, sig, "2.50 [1.00–4.00]"},
	} {
		if got := spreadOf(c.xs).format(c.f); got != c.want {
			t.Errorf("format(%v) = %q, want %q", c.xs, got, c.want)
		}
	}
}

// TestRunAtRest runs a few rows with -at-rest, keeping the scratch folder,
// and checks that the databases memoryd made for them are encrypted at
// rest: each holds the at_rest row, and none holds the rare needles of
// the history and of the session files in plain bytes. It asserts nothing about speed.
func TestRunAtRest(t *testing.T) {
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	args := []string{"-at-rest", "-rows", "append1,search-rare,search-all-rare,startup", "-history-bytes", "2<<20", "-events", "1000",
		"-dur", "100ms", "-reps", "1", "-dir", dir, "-keep"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	for _, name := range []string{"notes.db", "history.db", "sessions.db", "imported.db"} {
		path := filepath.Join(dir, name)
		db, err := sql.Open("sqlite", eventlog.FileURI(path, url.Values{"mode": {"ro"}}))
		if err != nil {
			t.Fatal(err)
		}
		var scheme string
		err = db.QueryRow("SELECT scheme FROM at_rest").Scan(&scheme)
		db.Close()
		if err != nil || scheme != atrest.Scheme {
			t.Errorf("%s: at_rest scheme %q, %v; want %q", name, scheme, err, atrest.Scheme)
		}
		for _, suffix := range []string{"", "-wal"} {
			b, err := os.ReadFile(path + suffix)
			if err != nil {
				continue
			}
			for _, needle := range []string{sessiongen.LargeRareNeedle, allRareNeedle} {
				if bytes.Contains(b, []byte(needle)) {
					t.Errorf("%s%s holds the needle %q in plain bytes", name, suffix, needle)
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "encryption.key")); err == nil {
		t.Errorf("a key file was made beside the databases: the key is MEMORYD_ENCRYPTION_KEY's")
	}
	if !strings.Contains(stdout.String(), "checked encrypted at rest (an at_rest row) after the fixtures' setup: notes.db, history.db, sessions.db, imported.db") {
		t.Errorf("the report does not say the databases were checked:\n%s", stdout.String())
	}
}

// TestRunCompareAtRest runs three rows with -compare-at-rest and checks that
// the report gives each an encrypted / plain ratio.
func TestRunCompareAtRest(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-compare-at-rest", "-rows", "append1,replay,startup", "-events", "1000", "-dur", "100ms", "-reps", "2"}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	report := stdout.String()
	ratio := regexp.MustCompile(`^\| (append1|replay|startup) \| [0-9][^|]* \| [0-9][^|]* \| [0-9.]+× \|$`)
	found := 0
	for line := range strings.Lines(report) {
		if ratio.MatchString(strings.TrimSpace(line)) {
			found++
		}
	}
	if found != 3 {
		t.Errorf("%d rows with an encrypted / plain ratio, want append1, replay and startup:\n%s", found, report)
	}
	for _, want := range []string{"## Encrypted / plain", "| imported.db after memoryd import of the event log | ",
		"checked plain (no at_rest row)", "checked encrypted at rest (an at_rest row)"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
