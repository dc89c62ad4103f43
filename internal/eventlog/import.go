package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/memoryd/memoryd/internal/events"
)

// Import appends the events that next yields to a store that holds none.
// The events keep their ids, positions and stream versions, and each is
// applied to the projections. It runs in one transaction, so on any error
// nothing is kept. It returns the number of events imported, or ErrNotEmpty,
// events.ErrInvalidEvent or events.ErrUnknownEvent.
func (s *Store) Import(ctx context.Context, next func() (ev events.Event, ok bool, err error)) (int64, error) {
	return s.importEvents(ctx, true, next, nil)
}

// Continue is Import into a store that may already hold events.
// The first event must take the next position and the next version of its
// stream. Replays use it to commit a log in several steps.
func (s *Store) Continue(ctx context.Context, next func() (ev events.Event, ok bool, err error)) (int64, error) {
	return s.importEvents(ctx, false, next, nil)
}

// ImportReporting is Import of a log that a store holds already, which is
// how verify rebuilds its projections. An event that breaks a rule is
// reported to broken and imported all the same, so that the rebuild matches
// what that store's projections were built from.
func (s *Store) ImportReporting(ctx context.Context, next func() (ev events.Event, ok bool, err error), broken func(*events.RuleError)) (int64, error) {
	return s.importEvents(ctx, true, next, broken)
}

// ContinueReporting is ImportReporting into a store that may already hold
// events. The inspector uses it to bring a copy of a log forward to a later
// position, applying each event as a fresh copy would.
func (s *Store) ContinueReporting(ctx context.Context, next func() (ev events.Event, ok bool, err error), broken func(*events.RuleError)) (int64, error) {
	return s.importEvents(ctx, false, next, broken)
}

// ImportPart is ImportReporting of a part of a log.
// Positions and stream versions must grow but may skip, so the result is
// a scratch database that cannot be exported or replayed as a log. The
// inspector copies into it only the events its page reads.
func (s *Store) ImportPart(ctx context.Context, next func() (ev events.Event, ok bool, err error), broken func(*events.RuleError)) (int64, error) {
	return s.importWith(ctx, true, true, next, broken)
}

// ContinuePart is ImportPart into a store that may hold a part already.
func (s *Store) ContinuePart(ctx context.Context, next func() (ev events.Event, ok bool, err error), broken func(*events.RuleError)) (int64, error) {
	return s.importWith(ctx, false, true, next, broken)
}

func (s *Store) importEvents(ctx context.Context, empty bool, next func() (events.Event, bool, error), broken func(*events.RuleError)) (int64, error) {
	return s.importWith(ctx, empty, false, next, broken)
}

// importWith imports what next yields. part allows gaps in positions and
// stream versions.
func (s *Store) importWith(ctx context.Context, empty, part bool, next func() (events.Event, bool, error), broken func(*events.RuleError)) (int64, error) {
	var n int64
	err := s.Update(ctx, "", func(tx *Tx) error {
		last, err := tx.q.LastPosition(ctx)
		if err != nil {
			return err
		}
		if empty && last != 0 {
			return fmt.Errorf("%w: it holds %d events", ErrNotEmpty, last)
		}
		tx.last = last
		tx.DeferProjections() // nothing reads the projections before the import ends
		for {
			ev, ok, err := next()
			if err != nil {
				return err
			}
			if !ok {
				return tx.FlushProjections(ctx)
			}
			if err := tx.checkSequence(ctx, ev, part); err != nil {
				return err
			}
			// What no store could have applied, such as an event out of
			// sequence or data that does not decode, stops it all the same.
			if err := tx.checkRules(ctx, &ev); err != nil {
				var re *events.RuleError
				if broken == nil || !errors.As(err, &re) {
					return err
				}
				broken(re) // the first rule it breaks
				// Decoded as the store that holds it decoded it.
				if ev, err = events.WithPayload(ev); err != nil {
					return err
				}
			}
			if err := tx.insert(ctx, ev); err != nil {
				return err
			}
			n++
		}
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func invalidEvent(format string, args ...any) error {
	return fmt.Errorf("%w: %s", events.ErrInvalidEvent, fmt.Sprintf(format, args...))
}

// checkSequence checks that ev can be the next event of the log.
// Its position and stream version must follow, or with part come later,
// and its type and schema must be known.
func (t *Tx) checkSequence(ctx context.Context, ev events.Event, part bool) error {
	if part && ev.Position <= t.last {
		return invalidEvent("position %d, expected more than %d", ev.Position, t.last)
	}
	if !part && ev.Position != t.last+1 {
		return invalidEvent("position %d, expected %d (positions are gapless from 1)", ev.Position, t.last+1)
	}
	entry, ok := events.Lookup(ev.Type)
	if !ok {
		return fmt.Errorf("%w: unknown event type %q", events.ErrUnknownEvent, ev.Type)
	}
	if ev.Schema < 1 || ev.Schema > entry.Schema {
		return fmt.Errorf("%w: event type %q has schema %d, this build knows up to %d", events.ErrUnknownEvent, ev.Type, ev.Schema, entry.Schema)
	}
	v, err := t.StreamVersion(ctx, ev.Stream)
	if err != nil {
		return err
	}
	if part && ev.StreamVersion <= v {
		return invalidEvent("stream %s version %d, expected more than %d", ev.Stream, ev.StreamVersion, v)
	}
	if !part && ev.StreamVersion != v+1 {
		return invalidEvent("stream %s version %d, expected %d", ev.Stream, ev.StreamVersion, v+1)
	}
	return nil
}

// checkRules checks ev's envelope, its payload, and the projections it
// names as they stand before it. It leaves the checked payload in ev for
// the projections to reuse.
func (t *Tx) checkRules(ctx context.Context, ev *events.Event) error {
	if _, err := ulid.ParseStrict(ev.ID); err != nil {
		return events.Broken(*ev, "id %q is not a ULID", ev.ID)
	}
	if ev.Stream == "" || events.StreamTask(ev.Stream) == "" || events.StreamTask(ev.Stream) == ev.Stream {
		return events.Broken(*ev, "stream %q is not <task_id><agent>", ev.Stream)
	}
	if _, err := time.Parse(events.TimeFormat, ev.RecordedAt); err != nil {
		return events.Broken(*ev, "recorded_at %q is not %s", ev.RecordedAt, events.TimeFormat)
	}
	if d := bytes.TrimSpace(ev.Data); len(d) == 0 || d[0] != '{' {
		return events.Broken(*ev, "its data is not a JSON object")
	}
	checked, err := events.Check(*ev)
	if err != nil {
		return err
	}
	*ev = checked
	if err := t.checkErasure(ctx, *ev); err != nil {
		return err
	}
	return t.proj.CheckImport(ctx, t.db, *ev)
}
