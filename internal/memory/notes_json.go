package memory

import (
	"strconv"

	"github.com/memoryd/memoryd/internal/jsonenc"
)

// Tool results are mostly text (a note, an item, search hits), and the
// text is often in a result twice (the content the model sees and the
// details). The content blocks (ToolResult.appendContent) and a note
// read's details (here) are encoded by hand, their strings by
// jsonenc.AppendString, in exactly encoding/json's bytes (HTML escaping
// off, as ToolResult.JSON sets): TestToolResultJSONIsEncodingJSON
// compares them.

// appendJSON appends d as encoding/json encodes it (its fields in order).
// A field added to readNoteDetails must be added here too:
// TestToolResultJSONIsEncodingJSON fails until it is.
func (d *readNoteDetails) appendJSON(dst []byte) []byte { return d.appendFields(dst, true) }

// header is the first line of a note read's content: d without its text,
// as compactJSON encodes it (TestNoteHeaderIsCompactJSON compares them).
func (d *readNoteDetails) header() string {
	// The keys and seven numbers take under 200 bytes; the path an eighth
	// more for escapes.
	return string(d.appendFields(make([]byte, 0, 200+len(d.Path)+len(d.Path)/8), false))
}

func (d *readNoteDetails) appendFields(dst []byte, withText bool) []byte {
	dst = append(dst, `{"path":`...)
	dst = jsonenc.AppendString(dst, d.Path)
	if withText {
		dst = append(dst, `,"text":`...)
		dst = jsonenc.AppendString(dst, d.Text)
	}
	for _, f := range []struct {
		key string
		v   int
	}{
		{`,"start_line":`, d.StartLine}, {`,"stop_line":`, d.StopLine}, {`,"total_lines":`, d.TotalLines},
		{`,"offset_chars":`, d.OffsetChars}, {`,"end_chars":`, d.EndChars}, {`,"total_chars":`, d.TotalChars},
	} {
		dst = strconv.AppendInt(append(dst, f.key...), int64(f.v), 10)
	}
	dst = append(dst, `,"next_offset_chars":`...)
	if d.NextOffsetChars == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, int64(*d.NextOffsetChars), 10)
	}
	return append(dst, '}')
}
