package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/tools"
)

// historyView answers the history tools as an agent of a task saw them at
// a log position: on the live memory (now), on a copy of the task's history
// up to the position, or, with past, from the live projections bounded to
// the agent's branch as of the position (a prefix of its current one).
type historyView struct {
	svc         *memory.Service
	task, agent string
	past        *memory.PastBranch
}

// call runs a read tool through memory's inspector path, which has no
// audit and no fence.
func (v historyView) call(ctx context.Context, tool string, args json.RawMessage) (memory.ToolResult, error) {
	if v.past != nil {
		return v.svc.InspectToolAsOf(ctx, tool, *v.past, args)
	}
	return v.svc.InspectTool(ctx, tool, memory.CallContext{TaskID: v.task, Agent: v.agent}, args)
}

// inspectTool runs a read tool on v and returns its content and details.
func inspectTool[D any](ctx context.Context, v historyView, tool string, args any) ([]memory.ContentBlock, D, error) {
	var details D
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, details, err
	}
	res, err := v.call(ctx, tool, raw)
	if err != nil {
		return nil, details, err
	}
	details, ok := res.Details.(D)
	if !ok {
		return nil, details, fmt.Errorf("inspector: %s answered details of type %T", tool, res.Details)
	}
	return res.Content, details, nil
}

// maxItemChars bounds the text of one item the page shows; past it the
// page says so.
const maxItemChars = 1 << 20

// readWholeItem reads an item's text page by page, and its images.
func readWholeItem(ctx context.Context, v historyView, window, item string) (tools.HistoryReadItemDetails, []template.URL, bool, error) {
	var whole tools.HistoryReadItemDetails
	var images []template.URL
	var text strings.Builder
	offset := 0
	for {
		content, d, err := inspectTool[tools.HistoryReadItemDetails](ctx, v, tools.HistoryReadItem,
			map[string]any{"window_id": window, "item_id": item, "offset_chars": offset})
		if err != nil {
			return tools.HistoryReadItemDetails{}, nil, false, err
		}
		if offset == 0 {
			whole = d
			for _, c := range content {
				if u, ok := imageURL(c); ok {
					images = append(images, u)
				}
			}
		}
		text.WriteString(d.Content)
		if d.NextOffsetChars == nil || *d.NextOffsetChars <= offset {
			break
		}
		if offset = *d.NextOffsetChars; offset >= maxItemChars {
			whole.Content = text.String()
			return whole, images, true, nil
		}
	}
	whole.Content = text.String()
	return whole, images, false, nil
}

// imageTypes are the image types shown inline.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// imageURL is an image block as a data URL, if it is one of imageTypes and
// its data is base64 text.
func imageURL(c memory.ContentBlock) (template.URL, bool) {
	if c.Type != "image" || !imageTypes[c.MimeType] {
		return "", false
	}
	// Nothing but base64 text may reach the src.
	for i := 0; i < len(c.Data); i++ {
		switch b := c.Data[i]; {
		case 'A' <= b && b <= 'Z', 'a' <= b && b <= 'z', '0' <= b && b <= '9', b == '+', b == '/', b == '=':
		default:
			return "", false
		}
	}
	return template.URL("data:" + c.MimeType + ";base64," + c.Data), true
}

// segment is a piece of a search preview, highlighted or not.
type segment struct {
	Text string
	Mark bool
}

// highlight cuts a region's preview at its matches. The matches are
// code-point offsets in the item's text, where the preview starts at offset.
func highlight(preview string, offset int, matches [][2]int) []segment {
	runes := []rune(preview)
	var out []segment
	at := 0
	for _, m := range matches {
		s, e := min(max(m[0]-offset, at), len(runes)), min(max(m[1]-offset, 0), len(runes))
		if e <= s {
			continue
		}
		if s > at {
			out = append(out, segment{Text: string(runes[at:s])})
		}
		out = append(out, segment{Text: string(runes[s:e]), Mark: true})
		at = e
	}
	if at < len(runes) {
		out = append(out, segment{Text: string(runes[at:])})
	}
	return out
}
