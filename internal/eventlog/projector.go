package eventlog

import (
	"context"

	"github.com/memoryd/memoryd/internal/events"
)

// Projector builds the projections from the events the log stores, inside
// the transactions that store them. The Store asks it for a TxProjection at
// the start of every write transaction and knows nothing of what it holds.
type Projector interface {
	// Begin returns the projector's state for a write transaction that
	// begins. The transaction's requests share it until it ends.
	Begin() TxProjection
}

// TxProjection is a projector's part in one write transaction.
// It applies the transaction's events and keeps what it learns of its
// projections. Only the writer's goroutine calls it.
type TxProjection interface {
	// Apply updates the projections for ev. It must be deterministic, so
	// it reads the event and the projection tables through db and nothing
	// else, no clock and no randomness.
	Apply(ctx context.Context, db DBTX, ev events.Event) error
	// CheckImport checks an imported event against the projections as
	// they stand before it is applied, such as that the agents and tasks it
	// names exist. Append does not call it, since the commands that append
	// check the same first.
	CheckImport(ctx context.Context, db DBTX, ev events.Event) error
	// Defer lets Apply defer its projection writes until Flush.
	Defer()
	// Flush writes out what Apply deferred and ends the deferral. Later
	// events are applied as they come.
	Flush(ctx context.Context, db DBTX) error
	// Rollback forgets everything the state remembers, the deferral
	// included, after a failed request's writes were rolled back.
	Rollback()
}
