package eventlog

import (
	"context"

	"github.com/memoryd/memoryd/internal/events"
)

// applyFunc applies one event, as a test's projector does.
type applyFunc func(ctx context.Context, db DBTX, ev events.Event) error

// testProjector is the tests' Projector: the second implementation of the
// seam beside the projections'. Its transactions apply each event through
// apply (nil: nothing) and check nothing on import.
type testProjector struct {
	apply applyFunc
	// calls, when set, receives "apply deferring" or "apply eager" for
	// every event applied and "flush" for every Flush.
	calls *[]string
}

func (p testProjector) Begin() TxProjection { return &testTx{p: p} }

// testTx is a testProjector's state in one write transaction.
type testTx struct {
	p         testProjector
	deferring bool
	// kept is what a test keeps with the transaction; Rollback forgets it.
	kept any
}

func (x *testTx) Apply(ctx context.Context, db DBTX, ev events.Event) error {
	if x.p.calls != nil {
		if x.deferring {
			*x.p.calls = append(*x.p.calls, "apply deferring")
		} else {
			*x.p.calls = append(*x.p.calls, "apply eager")
		}
	}
	if x.p.apply == nil {
		return nil
	}
	return x.p.apply(ctx, db, ev)
}

func (x *testTx) CheckImport(context.Context, DBTX, events.Event) error { return nil }

func (x *testTx) Defer() { x.deferring = true }

func (x *testTx) Flush(context.Context, DBTX) error {
	if x.p.calls != nil {
		call := "flush"
		if !x.deferring {
			call = "flush while not deferring"
		}
		*x.p.calls = append(*x.p.calls, call)
	}
	x.deferring = false
	return nil
}

func (x *testTx) Rollback() { x.deferring, x.kept = false, nil }
