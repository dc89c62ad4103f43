// Package memorytest opens memoryd's storage for tests the way the server
// does, so that a test runs the production wiring.
//
// It also holds the small fixtures the tests of several packages share, a
// deterministic clock and a buffer for the logs of a server under test.
// Only tests import it.
package memorytest

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/atrest/atresttest"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/pgtest"
)

// Open opens a new database through memory.Open with opts and returns its
// Service, closed when the test ends. The database is on the engine the
// tests run on, so that tests written against Open run on both.
func Open(tb testing.TB, opts memory.OpenOptions) *memory.Service {
	tb.Helper()
	return OpenAt(tb, NewDatabase(tb), opts)
}

// NewDatabase returns where a new, empty database of the engine the tests
// run on is, a path for SQLite or a postgres:// URL for PostgreSQL.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	return pgtest.Or(tb, filepath.Join(tb.TempDir(), "memory.db"))
}

// OpenAt is Open on the database at path, created if needed. Closing the
// Service before the test ends is allowed.
//
// With MEMORYD_TEST_AT_REST=1 (atresttest) a database is encrypted at rest
// unless opts gives a key.
func OpenAt(tb testing.TB, path string, opts memory.OpenOptions) *memory.Service {
	tb.Helper()
	if opts.Sealer == nil && atresttest.On(tb) {
		opts.Sealer, opts.Encrypt = atresttest.Sealer(tb), true
	}
	svc, err := memory.Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("open %s: %v", memory.ParseLocation(path), err)
	}
	tb.Cleanup(func() { svc.Close() })
	return svc
}

// Clock is a deterministic clock for memory.OpenOptions.Now, which every
// reading advances by 1 ms. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock whose first reading is 1 ms after start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now advances the clock and returns its time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// Buffer is a bytes.Buffer safe for concurrent writers, for logs or output
// that a test reads while it runs.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
