package memory

import (
	"context"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/redact"
)

// Service runs memoryd's commands and tools over an event store.
type Service struct {
	store *eventlog.Store
	owned bool     // Open opened store, so Close closes it
	audit *auditor // nil when the read audit is off
	// filters finds in memory the history chunks a search must read.
	filters *projections.ChunkFilters
	// notes answers note reads from memory while nothing was committed
	// since. When nil, every read queries SQLite.
	notes *projections.NoteCache
	// preload loads filters in the background.
	preload *preload
	// hostCalls binds a host's tool calls to their agents.
	hostCalls hostCalls
	// redactor takes secrets out of entries and note texts before they
	// are stored; nil keeps them as they are.
	redactor *redact.Redactor
	// erasing holds what drops an erased task's content (OnErase).
	erasing erasing
	// afterCachedRead and syncToWriter are serviceOptions' test hooks.
	afterCachedRead, syncToWriter func()
}

// newService returns a Service over store, which must apply events through
// projections.Projector.
func newService(store *eventlog.Store) *Service {
	return &Service{store: store, filters: projections.NewChunkFilters(projections.DefaultChunkFiltersLimit),
		notes: projections.NewNoteCache(projections.DefaultNoteCacheBytes)}
}

// NoteCacheStats returns how many note reads the note cache answered and
// how many went to SQLite.
func (s *Service) NoteCacheStats() (hits, misses uint64) {
	if s.notes == nil {
		return 0, 0
	}
	return s.notes.Stats()
}

// Store returns the service's event store, for internal/forensics and for
// tests that check what is stored. A Service from Open still owns it.
func (s *Service) Store() *eventlog.Store { return s.store }

// LastPosition returns the position of the newest event of the log, or 0
// when it is empty.
func (s *Service) LastPosition(ctx context.Context) (int64, error) {
	return s.store.LastPosition(ctx)
}

// Events returns at most limit events after position after, in position
// order, of one task's streams or of all for an empty taskID.
func (s *Service) Events(ctx context.Context, after int64, taskID string, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, TaskID: taskID, Limit: limit})
}

// CallContext identifies the caller of a tool or lifecycle call.
type CallContext struct {
	TaskID string `json:"task_id"`
	Agent  string `json:"agent"`
	CallID string `json:"call_id,omitempty"`
}
