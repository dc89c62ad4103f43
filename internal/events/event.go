// Package events is memoryd's event catalog.
//
// It holds the envelope of an event, the frozen catalog of event types and
// their payloads, how a payload decodes and the rules it must follow, and
// an exported log's lines. It is pure, and package eventlog stores events.
package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/memoryd/memoryd/internal/strictjson"
)

// Errors of the catalog. Callers compare with errors.Is.
var (
	// ErrUnknownEvent means an event type or schema this build does not know.
	ErrUnknownEvent = errors.New("unknown event type or schema")
	// ErrInvalidEvent means an imported event breaks a rule of the
	// envelope, of its payload, or of the projections as they stand before
	// it.
	ErrInvalidEvent = errors.New("invalid event")
)

// TimeFormat is the format of recorded_at and of every time memoryd shows,
// RFC 3339 in UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Event is one entry of the log, in the envelope of the API contract.
type Event struct {
	Position      int64           `json:"position"`
	ID            string          `json:"id"`
	Stream        string          `json:"stream"`
	StreamVersion int64           `json:"stream_version"`
	Type          string          `json:"type"`
	Schema        int             `json:"schema"`
	RecordedAt    string          `json:"recorded_at"`
	Data          json.RawMessage `json:"data"`
	RequestID     string          `json:"request_id,omitempty"`

	// payload is Data decoded, when a log reader or an import's validation
	// has decoded it already. Decode returns it rather than decoding again.
	payload any
	// refused is why a log reader's CheckPayload refused Data, for the
	// import to report without checking it again.
	refused error
}

// TaskID returns the task part of the event's stream.
func (e Event) TaskID() string { return StreamTask(e.Stream) }

// Stream returns the stream name of an agent, <task_id><agent>.
func Stream(taskID, agent string) string { return taskID + agent }

// StreamTask returns the task id of a stream name.
func StreamTask(stream string) string {
	if i := strings.IndexByte(stream, '/'); i >= 0 {
		return stream[:i]
	}
	return stream
}

// Pending is an event to append, with its type and a payload struct of the
// catalog. NewPending makes one, and the log refuses one whose payload is
// not of its type.
type Pending struct {
	Type string
	Data any
}

// MarshalData encodes an event payload as compact JSON without HTML
// escaping, the form the log stores and exports byte for byte.
func MarshalData(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// WriteJSONLines writes events as JSON lines in the envelope of the
// contract, data byte for byte as stored.
func WriteJSONLines(w io.Writer, evs []Event) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, ev := range evs {
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	return nil
}

// DecodeEnvelope decodes one line of an exported log, an event in the
// envelope of the contract, as strictly as package strictjson checks a
// request body. Its payload is checked by the import.
func DecodeEnvelope(line []byte) (Event, error) {
	var ev Event
	// Data may nest one level deeper, being inside the envelope.
	if err := strictjson.Check(line, reflect.TypeOf(ev), strictjson.MaxDepth+1); err != nil {
		return Event{}, fmt.Errorf("%w: %s", ErrInvalidEvent, describe(err, "the event"))
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: not an event envelope: %s", ErrInvalidEvent, typeMismatch(err))
	}
	ev.Data = bytes.Clone(ev.Data)
	return ev, nil
}

// Check returns ev with its payload checked by CheckPayload and kept, or
// the first rule the payload breaks. A check that Decoded made stands.
func Check(ev Event) (Event, error) {
	if ev.refused != nil {
		return ev, ev.refused
	}
	if ev.payload == nil {
		payload, err := CheckPayload(ev)
		if err != nil {
			return ev, err
		}
		ev.payload = payload
	}
	return ev, nil
}

// WithPayload returns ev with its payload decoded and kept, rules
// unchecked. It is for an event that breaks a rule and is applied all the
// same, as the store that holds it applied it.
func WithPayload(ev Event) (Event, error) {
	if ev.payload != nil {
		return ev, nil
	}
	payload, err := Decode(ev)
	if err != nil {
		return ev, err
	}
	ev.payload = payload
	return ev, nil
}
