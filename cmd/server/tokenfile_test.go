package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestTokenFileWholeWhenStartsRace: memoryds started at once beside one new
// database (the Pi extension's shared start) all get the one token; none
// reads the file half written (it used to refuse it as empty) and no
// temporary file is left.
func TestTokenFileWholeWhenStartsRace(t *testing.T) {
	noEnv := func(string) string { return "" }
	for round := 0; round < 40; round++ {
		dir := t.TempDir()
		dbPath := filepath.Join(dir, "memory.db")
		const starts = 12
		tokens := make([]string, starts)
		errs := make([]error, starts)
		var ready, done sync.WaitGroup
		gate := make(chan struct{})
		for i := range starts {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				ready.Done()
				<-gate
				tokens[i], errs[i] = loadToken(noEnv, dbPath)
			}()
		}
		ready.Wait()
		close(gate)
		done.Wait()
		for i := range starts {
			if errs[i] != nil {
				t.Fatalf("round %d, start %d: %v", round, i, errs[i])
			}
			if len(tokens[i]) != 64 || tokens[i] != tokens[0] {
				t.Fatalf("round %d: start %d got token %q, start 0 %q", round, i, tokens[i], tokens[0])
			}
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".token-") {
				t.Fatalf("round %d: temporary file %s left beside the token", round, e.Name())
			}
		}
	}
}
