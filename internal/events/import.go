package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
)

// ErrInvalidEvent: an imported event breaks the envelope rules.
var ErrInvalidEvent = errors.New("invalid event")

// Import appends the events that next yields, keeping their ids, positions
// and stream versions, into a store that holds no events yet, applying each
// to the projections. It runs in one transaction: on any error nothing is
// kept. next returns ok=false at the end. Returns the number of events
// imported, ErrNotEmpty, ErrInvalidEvent or ErrUnknownEvent.
func (s *Store) Import(ctx context.Context, next func() (ev Event, ok bool, err error)) (int64, error) {
	return s.importEvents(ctx, true, next)
}

// Continue is Import into a store that may already hold events: the
// first event must continue its log (the next position, the next version
// of its stream). Replays use it to commit a log in several steps.
func (s *Store) Continue(ctx context.Context, next func() (ev Event, ok bool, err error)) (int64, error) {
	return s.importEvents(ctx, false, next)
}

func (s *Store) importEvents(ctx context.Context, empty bool, next func() (Event, bool, error)) (int64, error) {
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
			if err := tx.checkImported(ctx, &ev); err != nil {
				return err
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

// checkImported validates ev as the next event of the log.
func (t *Tx) checkImported(ctx context.Context, ev *Event) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidEvent, fmt.Sprintf(format, args...))
	}
	if ev.Position != t.last+1 {
		return bad("position %d, expected %d (positions are gapless from 1)", ev.Position, t.last+1)
	}
	if _, err := ulid.ParseStrict(ev.ID); err != nil {
		return bad("id %q is not a ULID", ev.ID)
	}
	if ev.Stream == "" || StreamTask(ev.Stream) == "" || StreamTask(ev.Stream) == ev.Stream {
		return bad("stream %q is not <task_id><agent>", ev.Stream)
	}
	entry, ok := catalogEntry(ev.Type)
	if !ok {
		return fmt.Errorf("%w: unknown event type %q", ErrUnknownEvent, ev.Type)
	}
	if ev.Schema < 1 || ev.Schema > entry.Schema {
		return fmt.Errorf("%w: event type %q has schema %d, this build knows up to %d", ErrUnknownEvent, ev.Type, ev.Schema, entry.Schema)
	}
	if _, err := time.Parse(TimeFormat, ev.RecordedAt); err != nil {
		return bad("recorded_at %q is not %s", ev.RecordedAt, TimeFormat)
	}
	if d := bytes.TrimSpace(ev.Data); len(d) == 0 || d[0] != '{' {
		return bad("data of event %d is not a JSON object", ev.Position)
	}
	payload, err := Decode(*ev)
	if err != nil {
		return bad("%v", err)
	}
	ev.payload = payload // decoded once: the projections reuse it (and a log reader may have decoded it)
	v, err := t.StreamVersion(ctx, ev.Stream)
	if err != nil {
		return err
	}
	if ev.StreamVersion != v+1 {
		return bad("stream %s version %d, expected %d", ev.Stream, ev.StreamVersion, v+1)
	}
	return nil
}
