package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/memoryd/memoryd/internal/strictjson"
)

// ErrInvalidEvent: an imported event breaks a rule of the envelope, of its
// payload (CheckPayload) or of the projections as they stand before it
// (Options.ImportCheck).
var ErrInvalidEvent = errors.New("invalid event")

// Import appends the events that next yields, keeping their ids, positions
// and stream versions, into a store that holds no events yet, applying each
// to the projections. It runs in one transaction: on any error nothing is
// kept. next returns ok=false at the end. Returns the number of events
// imported, ErrNotEmpty, ErrInvalidEvent or ErrUnknownEvent.
func (s *Store) Import(ctx context.Context, next func() (ev Event, ok bool, err error)) (int64, error) {
	return s.importEvents(ctx, true, next, nil)
}

// Continue is Import into a store that may already hold events: the
// first event must continue its log (the next position, the next version
// of its stream). Replays use it to commit a log in several steps.
func (s *Store) Continue(ctx context.Context, next func() (ev Event, ok bool, err error)) (int64, error) {
	return s.importEvents(ctx, false, next, nil)
}

// ImportReporting is Import of a log that a store holds already (verify
// rebuilds its projections so): an event that breaks a rule of its
// envelope, its payload or the projections is reported to broken (the
// first rule it breaks) and imported all the same, decoded as the store
// that holds it decoded it, so that the rebuild is what that store's
// projections were built from. What no store could have applied stops it
// as it stops Import: a position or stream version out of sequence, an
// unknown type or schema, data that does not decode.
func (s *Store) ImportReporting(ctx context.Context, next func() (ev Event, ok bool, err error), broken func(*RuleError)) (int64, error) {
	return s.importEvents(ctx, true, next, broken)
}

func (s *Store) importEvents(ctx context.Context, empty bool, next func() (Event, bool, error), broken func(*RuleError)) (int64, error) {
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
			if err := tx.checkSequence(ctx, ev); err != nil {
				return err
			}
			if err := tx.checkRules(ctx, &ev); err != nil {
				var re *RuleError
				if broken == nil || !errors.As(err, &re) {
					return err
				}
				broken(re)
				if ev.payload == nil {
					if ev.payload, err = Decode(ev); err != nil {
						return err
					}
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
	return fmt.Errorf("%w: %s", ErrInvalidEvent, fmt.Sprintf(format, args...))
}

// checkSequence checks that ev can be the next event of the log: its
// position and its stream version follow, and its type and schema are
// known.
func (t *Tx) checkSequence(ctx context.Context, ev Event) error {
	if ev.Position != t.last+1 {
		return invalidEvent("position %d, expected %d (positions are gapless from 1)", ev.Position, t.last+1)
	}
	entry, ok := catalogEntry(ev.Type)
	if !ok {
		return fmt.Errorf("%w: unknown event type %q", ErrUnknownEvent, ev.Type)
	}
	if ev.Schema < 1 || ev.Schema > entry.Schema {
		return fmt.Errorf("%w: event type %q has schema %d, this build knows up to %d", ErrUnknownEvent, ev.Type, ev.Schema, entry.Schema)
	}
	v, err := t.StreamVersion(ctx, ev.Stream)
	if err != nil {
		return err
	}
	if ev.StreamVersion != v+1 {
		return invalidEvent("stream %s version %d, expected %d", ev.Stream, ev.StreamVersion, v+1)
	}
	return nil
}

// checkRules checks ev's envelope, its payload (CheckPayload, unless a log
// reader has: Decoded) and, through Options.ImportCheck, the projections
// it names as they stand before it. It leaves the checked payload in ev
// for the projections to reuse.
func (t *Tx) checkRules(ctx context.Context, ev *Event) error {
	if _, err := ulid.ParseStrict(ev.ID); err != nil {
		return Broken(*ev, "id %q is not a ULID", ev.ID)
	}
	if ev.Stream == "" || StreamTask(ev.Stream) == "" || StreamTask(ev.Stream) == ev.Stream {
		return Broken(*ev, "stream %q is not <task_id><agent>", ev.Stream)
	}
	if _, err := time.Parse(TimeFormat, ev.RecordedAt); err != nil {
		return Broken(*ev, "recorded_at %q is not %s", ev.RecordedAt, TimeFormat)
	}
	if d := bytes.TrimSpace(ev.Data); len(d) == 0 || d[0] != '{' {
		return Broken(*ev, "its data is not a JSON object")
	}
	if ev.refused != nil {
		return ev.refused
	}
	if ev.payload == nil {
		payload, err := CheckPayload(*ev)
		if err != nil {
			return err
		}
		ev.payload = payload
	}
	if t.s.importCheck != nil {
		return t.s.importCheck(ctx, t.db, *ev)
	}
	return nil
}

// DecodeEnvelope decodes one line of an exported log: an event in the
// envelope of the contract, checked as strictly as a request body (see
// package strictjson; its data may nest one level deeper, being inside
// the envelope). Its payload is checked by the import.
func DecodeEnvelope(line []byte) (Event, error) {
	var ev Event
	if err := strictjson.Check(line, reflect.TypeOf(ev), strictjson.MaxDepth+1); err != nil {
		return Event{}, fmt.Errorf("%w: %s", ErrInvalidEvent, describe(err, "the event"))
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: not an event envelope: %s", ErrInvalidEvent, typeMismatch(err))
	}
	ev.Data = bytes.Clone(ev.Data)
	return ev, nil
}
