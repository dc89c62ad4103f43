package memory

import (
	"strconv"

	"github.com/memoryd/memoryd/internal/jsonenc"
	"github.com/memoryd/memoryd/internal/tools"
)

// Tool results are mostly text, such as a note, an item or search hits, and
// the text is often in a result twice, in the content the model sees and in
// the details. The content blocks and a note read's details are encoded by
// hand, their strings by jsonenc.AppendString, in exactly the bytes
// encoding/json writes with HTML escaping off, as ToolResult.JSON sets it.
// TestToolResultJSONIsEncodingJSON compares them.

// appendReadNote appends d as encoding/json encodes it. A field added to
// tools.NotesReadFileDetails must be added here too;
// TestToolResultJSONIsEncodingJSON fails until it is.
func appendReadNote(dst []byte, d *tools.NotesReadFileDetails) []byte {
	return appendReadNoteFields(dst, d, true)
}

// readNoteHeader is the first line of a note read's content, d without its
// text as compactJSON encodes it. TestNoteHeaderIsCompactJSON compares them.
func readNoteHeader(d *tools.NotesReadFileDetails) string {
	// The keys and seven numbers take under 200 bytes; the path an eighth
	// more for escapes.
	return string(appendReadNoteFields(make([]byte, 0, 200+len(d.Path)+len(d.Path)/8), d, false))
}

func appendReadNoteFields(dst []byte, d *tools.NotesReadFileDetails, withText bool) []byte {
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
