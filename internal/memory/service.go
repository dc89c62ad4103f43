package memory

import (
	"context"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
)

// Service runs memoryd's commands and tools over an event store.
type Service struct {
	store *eventlog.Store
	owned bool     // Close closes store (Open opened it)
	audit *auditor // nil: the read audit is off
	// filters finds the history chunks a search must read (its
	// candidates), from memory.
	filters *projections.ChunkFilters
	// notes answers note reads from memory while nothing was committed
	// since (projections.NoteCache); nil: every read queries SQLite.
	notes *projections.NoteCache
	// preload loads filters in the background (OpenOptions.PreloadChunkFilters).
	preload *preload
	// Test hooks (see serviceOptions).
	afterCachedRead, syncToWriter func()
}

// newService returns a Service over store, which must apply events through
// projections.Projector.
func newService(store *eventlog.Store) *Service {
	return &Service{store: store, filters: projections.NewChunkFilters(projections.DefaultChunkFiltersLimit),
		notes: projections.NewNoteCache(projections.DefaultNoteCacheBytes)}
}

// NoteCacheStats returns how many note reads the note cache answered and
// how many went to SQLite (see projections.NoteCache).
func (s *Service) NoteCacheStats() (hits, misses uint64) {
	if s.notes == nil {
		return 0, 0
	}
	return s.notes.Stats()
}

// Store returns the service's event store, for the offline work on the
// log and its projections (internal/forensics: replay, verify, import,
// export) and for tests that check what is stored; the API and the server
// command go through the Service's methods. A Service from Open still
// owns the store: Close closes it.
func (s *Service) Store() *eventlog.Store { return s.store }

// LastPosition returns the position of the newest event of the log (0
// when it is empty).
func (s *Service) LastPosition(ctx context.Context) (int64, error) {
	return s.store.LastPosition(ctx)
}

// Events returns one page of the log in position order: at most limit
// events after position after, of one task's streams (taskID) or of all
// (""). Errors are ErrUnavailable or internal.
func (s *Service) Events(ctx context.Context, after int64, taskID string, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, TaskID: taskID, Limit: limit})
}

// CallContext identifies the caller of a tool or lifecycle call.
type CallContext struct {
	TaskID string `json:"task_id"`
	Agent  string `json:"agent"`
	CallID string `json:"call_id,omitempty"`
}
