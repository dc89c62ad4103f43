package inspector

import (
	"context"
	"encoding/json"
	"html/template"
	"strings"

	"github.com/memoryd/memoryd/internal/memory"
)

// The history tools' answers as the contract (docs/API.md §5) spells
// their details; the inspector reads them as a client would.

type windowsDetails struct {
	Windows []struct {
		WindowID  string `json:"window_id"`
		ItemCount int64  `json:"item_count"`
		Current   bool   `json:"current"`
	} `json:"windows"`
}

type itemsDetails struct {
	Results []struct {
		ItemID           string  `json:"item_id"`
		WindowID         string  `json:"window_id"`
		Role             string  `json:"role"`
		ToolNamespace    *string `json:"tool_namespace"`
		ToolName         *string `json:"tool_name"`
		NChars           int64   `json:"n_chars"`
		Images           int64   `json:"images"`
		TruncatedContent string  `json:"truncated_content"`
	} `json:"results"`
	Omitted int `json:"omitted"`
}

type readDetails struct {
	ItemID          string `json:"item_id"`
	WindowID        string `json:"window_id"`
	Role            string `json:"role"`
	Content         string `json:"content"`
	NChars          int    `json:"n_chars"`
	NextOffsetChars *int   `json:"next_offset_chars"`
}

type searchDetails struct {
	Results []struct {
		ItemID   string  `json:"item_id"`
		WindowID string  `json:"window_id"`
		Role     string  `json:"role"`
		ToolName *string `json:"tool_name"`
		Regions  []struct {
			OffsetChars int    `json:"offset_chars"`
			LimitChars  int    `json:"limit_chars"`
			Preview     string `json:"preview"`
			Matches     []struct {
				Start int `json:"start"`
				End   int `json:"end"`
			} `json:"matches"`
		} `json:"regions"`
	} `json:"results"`
	Omitted int  `json:"omitted"`
	More    bool `json:"more"`
}

// inspectTool runs a read tool as agent of task through memory's
// inspector path (no audit, no fence) and decodes its result.
func inspectTool(ctx context.Context, svc *memory.Service, task, agent, tool string, args any, details any) ([]memory.ContentBlock, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	res, err := svc.InspectTool(ctx, tool, memory.CallContext{TaskID: task, Agent: agent}, raw)
	if err != nil {
		return nil, err
	}
	body, err := res.JSON()
	if err != nil {
		return nil, err
	}
	var out struct {
		Content []memory.ContentBlock `json:"content"`
		Details json.RawMessage       `json:"details"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	return out.Content, json.Unmarshal(out.Details, details)
}

// maxItemChars bounds the text of one item the page shows; past it the
// page says so.
const maxItemChars = 1 << 20

// readWholeItem reads an item's text page by page, and its images.
func readWholeItem(ctx context.Context, svc *memory.Service, task, agent, window, item string) (readDetails, []template.URL, bool, error) {
	var whole readDetails
	var images []template.URL
	var text strings.Builder
	offset := 0
	for {
		var d readDetails
		content, err := inspectTool(ctx, svc, task, agent, "history_read_item",
			map[string]any{"window_id": window, "item_id": item, "offset_chars": offset}, &d)
		if err != nil {
			return readDetails{}, nil, false, err
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

// imageURL is an image block as a data: URL, if it is one of imageTypes
// and its data is base64 text (nothing else may reach the src).
func imageURL(c memory.ContentBlock) (template.URL, bool) {
	if c.Type != "image" || !imageTypes[c.MimeType] {
		return "", false
	}
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

// highlight cuts a region's preview at its matches (code-point offsets in
// the item's text; the preview starts at offset).
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
