package main

import (
	"context"
	"time"
)

// fixture is a server, database or file that rows share, set up once if a
// selected row needs it. Its state is in bench's fields, and closeAll stops
// the processes it starts.
type fixture struct {
	name  string
	needs []*fixture // set up before it
	setup func(b *bench, ctx context.Context) error
}

// allFixtures are every fixture, in the order they are set up.
// A fixture comes after those it needs.
var allFixtures = []*fixture{fxNotes, fxAppendWarm, fxBareAppend, fxDurable, fxRead8, fxClaudeCode, fxHistory, fxSessions, fxSyncTurn, fxTurn, fxRollover, fxRolloverHuge, fxLog, fxReplayed, fxPostgresServer, fxPostgres, fxPostgresRead8, fxRedact, fxDisk, fxDiskPostgres}

// fixturesFor returns the fixtures the rows of cfg need, directly or
// through other fixtures, in the order of allFixtures.
func fixturesFor(cfg *config) []*fixture {
	need := map[*fixture]bool{}
	var add func(fx *fixture)
	add = func(fx *fixture) {
		if need[fx] {
			return
		}
		need[fx] = true
		for _, n := range fx.needs {
			add(n)
		}
	}
	for _, r := range allRows {
		if cfg.has(r.name) {
			for _, fx := range r.needs {
				add(fx)
			}
		}
	}
	var out []*fixture
	for _, fx := range allFixtures {
		if need[fx] {
			out = append(out, fx)
		}
	}
	return out
}

// warmUp is how long a server is driven, untimed, before it is measured.
func (b *bench) warmUp() time.Duration { return min(b.cfg.dur/5, time.Second) }
