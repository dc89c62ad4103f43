package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

// TestTasksVerb: the tasks verb prints the same JSON as GET /v1/tasks on
// the same database (run while the service serves it), pages alike, and
// refuses bad usage with exit 2.
func TestTasksVerb(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "memory.db")
	agents := workload(t, db) // two tasks, the first with two child agents
	const token = "tasks-token"
	s := startServe(t, db, env(map[string]string{"MEMORYD_TOKEN": token}))

	get := func(query string) []byte {
		t.Helper()
		req, err := http.NewRequest("GET", s.url+"/v1/tasks"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/tasks%s: %d %s %v", query, resp.StatusCode, b, err)
		}
		return b
	}
	verb := func(args ...string) []byte {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(t.Context(), append([]string{"tasks"}, args...), env(nil), nil, &out, &errOut); err != nil {
			t.Fatalf("tasks %q: %v\n%s", args, err, errOut.String())
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, out.Bytes()); err != nil {
			t.Fatalf("tasks %q printed %s: %v", args, out.String(), err)
		}
		return append(compact.Bytes(), '\n')
	}
	same := func(query string, args ...string) memory.TaskList {
		t.Helper()
		route, printed := get(query), verb(args...)
		if !bytes.Equal(route, printed) {
			t.Fatalf("GET /v1/tasks%s and tasks %q differ:\n%s\n%s", query, args, route, printed)
		}
		var l memory.TaskList
		if err := json.Unmarshal(route, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}

	all := same("", "--db", db)
	other, root := agents[3], agents[0]
	if len(all.Tasks) != 2 || all.Tasks[0].TaskID != other.TaskID || all.Tasks[1].TaskID != root.TaskID || all.NextBefore != nil {
		t.Fatalf("tasks %+v, want the other task, then the first", all)
	}
	if n := len(all.Tasks[1].Agents); n != 3 {
		t.Errorf("first task has %d agents, want /root and two children", n)
	}
	p1 := same("?limit=1", "--limit", "1", "--db", db)
	if len(p1.Tasks) != 1 || p1.NextBefore == nil {
		t.Fatalf("page 1: %+v", p1)
	}
	before := []string{"--before", jsonString(t, *p1.NextBefore)}
	p2 := same("?limit=1&before="+before[1], append(before, "--db", db, "--limit", "1")...)
	if len(p2.Tasks) != 1 || p2.Tasks[0].TaskID != root.TaskID || p2.NextBefore != nil {
		t.Fatalf("page 2: %+v", p2)
	}
	same("?limit=100000", "--db", db, "--limit", "100000")

	// The listing is a function of the log: a replay of the exported log
	// lists the same, and verify finds the live projections clean.
	logFile, replayed := filepath.Join(dir, "log.jsonl"), filepath.Join(dir, "replayed.db")
	if err := os.WriteFile(logFile, export(t, "--db", db), 0o600); err != nil {
		t.Fatal(err)
	}
	fxMust(t, "replay", logFile, "--db", replayed)
	if a, b := verb("--db", db), verb("--db", replayed); !bytes.Equal(a, b) {
		t.Errorf("tasks of the replayed log differ:\n%s\n%s", b, a)
	}
	if v := fxJSON(t, fxMust(t, "verify", "--db", db)); v["clean"] != true {
		t.Errorf("verify: %v", v)
	}

	for _, args := range [][]string{
		{"tasks", "--db", db, "extra"},
		{"tasks", "--db", db, "--limit", "0"},
		{"tasks", "--db", db, "--limit", "x"},
		{"tasks", "--db", db, "--before", "-1"},
		{"tasks", "--db", db, "--bogus"},
	} {
		_, _, err := fxRun(t, nil, args...)
		var ue *usageError
		if !errors.As(err, &ue) || exitCode(err) != 2 {
			t.Errorf("server %q: %v (exit %d), want a usage error (exit 2)", args, err, exitCode(err))
		}
	}
	missing := filepath.Join(dir, "missing.db")
	if _, _, err := fxRun(t, nil, "tasks", "--db", missing); err == nil || exitCode(err) != 1 {
		t.Errorf("tasks on a missing database: %v, want exit 1", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tasks created the missing database: %v", err)
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadingVerbsDefaultToServesDatabase: tasks, export, verify, call and
// inspect without --db read the database serve uses (MEMORYD_DB, else the
// one in the data folder) and say which on stderr; without a home folder
// they say how to name one.
func TestReadingVerbsDefaultToServesDatabase(t *testing.T) {
	home := t.TempDir()
	getenv := env(map[string]string{"HOME": home})
	db, err := defaultDBPath(getenv)
	if err != nil {
		t.Fatal(err)
	}
	agents := workload(t, db)
	said := "memoryd: reading " + db + ", the database serve uses (--db F reads another)\n"
	for _, args := range [][]string{
		{"tasks"},
		{"export"},
		{"verify"},
		{"call", "--task", agents[0].TaskID, "notes_list_files_by_prefix"},
	} {
		var out, stderr bytes.Buffer
		if err := run(context.Background(), args, getenv, nil, &out, &stderr); err != nil {
			t.Errorf("memoryd %q: %v\n%s", args, err, stderr.String())
			continue
		}
		if !strings.HasPrefix(stderr.String(), said) || out.Len() == 0 {
			t.Errorf("memoryd %q: stderr %q, %d bytes out; want it to name %s first", args, stderr.String(), out.Len(), db)
		}
	}
	if !strings.Contains(string(mustRun(t, getenv, "tasks")), agents[0].TaskID) {
		t.Error("tasks without --db does not list the workload's task")
	}
	other := filepath.Join(t.TempDir(), "other.db")
	workload(t, other)
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"tasks"}, env(map[string]string{"HOME": home, "MEMORYD_DB": other}), nil, io.Discard, &stderr); err != nil ||
		!strings.Contains(stderr.String(), "reading "+other) {
		t.Errorf("tasks with MEMORYD_DB: %v %q", err, stderr.String())
	}
	if err := run(context.Background(), []string{"tasks"}, env(nil), nil, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "set --db, MEMORYD_DB or HOME") {
		t.Errorf("tasks without a home folder: %v", err)
	}
}

func mustRun(t *testing.T, getenv func(string) string, args ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, getenv, nil, &out, io.Discard); err != nil {
		t.Fatalf("memoryd %q: %v", args, err)
	}
	return out.Bytes()
}
