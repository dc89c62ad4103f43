package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// TestDurableServerStoresEachRequestBeforeAnswering checks append16's
// durable reference: every request answered 200 with the reply file's
// bytes has its body in a row of the database by then, one row per
// request, and the database is removed when the server stops.
func TestDurableServerStoresEachRequestBeforeAnswering(t *testing.T) {
	dir := t.TempDir()
	dbPath, replyPath := filepath.Join(dir, "durable.db"), filepath.Join(dir, "reply.json")
	reply := []byte(`{"ok":true}`)
	if err := os.WriteFile(replyPath, reply, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, stdout := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- runDurableServer(ctx, []string{dbPath, replyPath}, stdout)
		stdout.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no listening line: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("listening line %q", line)
	}
	go io.Copy(io.Discard, out)

	db, err := sql.Open("sqlite", eventlog.FileURI(dbPath, map[string][]string{"mode": {"ro"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := func(body string) (n int, err error) {
		err = db.QueryRow("SELECT count(*) FROM events WHERE body = ?", body).Scan(&n)
		return n, err
	}

	// Eight clients, so that requests share transactions.
	const clients, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	var mu sync.Mutex
	var sent []string
	for c := range clients {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"client":%d,"n":%d}`, c, i)
				resp, err := http.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || string(got) != string(reply) {
					errs <- fmt.Errorf("%s: %d %q", body, resp.StatusCode, got)
					return
				}
				// Answered: it must be in the database already.
				if n, err := stored(body); err != nil || n != 1 {
					errs <- fmt.Errorf("%s answered with %d rows stored (%v), want 1", body, n, err)
					return
				}
				mu.Lock()
				sent = append(sent, body)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var total int
	if err := db.QueryRow("SELECT count(*) FROM events").Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != clients*each || len(sent) != clients*each {
		t.Errorf("%d rows for %d requests answered, want %d", total, len(sent), clients*each)
	}
	slices.Sort(sent)
	if len(slices.Compact(sent)) != clients*each {
		t.Errorf("requests repeated: %v", sent)
	}
	db.Close()

	cancel()
	if err := <-served; err != nil {
		t.Fatalf("durable server: %v", err)
	}
	if _, err := os.Stat(dbPath); !os.IsNotExist(err) {
		t.Errorf("database left behind after the server stopped: %v", err)
	}
}
