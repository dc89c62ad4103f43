package eventlog

import (
	"context"

	"github.com/memoryd/memoryd/internal/events"
)

// Projector builds read models (projections) from the events the log
// stores, inside the transactions that store them. A Store is opened with
// one and asks it for a TxProjection at the start of every write
// transaction; it knows nothing of what that state holds.
type Projector interface {
	// Begin returns the projector's state for a write transaction that
	// begins. The transaction's requests share it; it is dropped when
	// the transaction ends.
	Begin() TxProjection
}

// TxProjection is a projector's part in one write transaction: it applies
// the transaction's events and keeps what it learns of its projections
// there. The writer calls it from its own goroutine only.
type TxProjection interface {
	// Apply updates the projections for ev. It must be deterministic: it
	// may read the event and the projection tables through db, and
	// nothing else (no clock, no randomness).
	Apply(ctx context.Context, db DBTX, ev events.Event) error
	// CheckImport checks an imported event against the projections as
	// they stand before it is applied (the agents and tasks it names
	// exist, a note stays within its cap), once its payload has passed
	// events.CheckPayload. Import and Continue call it, not Append: the
	// commands that append check the same first.
	CheckImport(ctx context.Context, db DBTX, ev events.Event) error
	// Defer lets Apply defer its projection writes until Flush
	// (Tx.DeferProjections).
	Defer()
	// Flush writes out what Apply deferred and ends the deferral: later
	// events are applied as they come.
	Flush(ctx context.Context, db DBTX) error
	// Rollback forgets everything the state remembers, what was deferred
	// and the deferral included: some of the transaction's writes were
	// rolled back (a failed request of a batch, at its savepoint).
	Rollback()
}
