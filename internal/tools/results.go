package tools

// The details of each tool's result, as the tools return them and every
// protocol serves them. Each type matches the "result" schema of its tool
// in specs.json; TestDetailsMatchSchemas holds the two together.

// HistoryListWindowsDetails is the result of history_list_windows.
type HistoryListWindowsDetails struct {
	Windows   []Window `json:"windows"`
	NReturned int      `json:"n_returned"`
	Omitted   int      `json:"omitted"`
}

// Window is one context window of an agent's history.
type Window struct {
	WindowID  string `json:"window_id"`
	ItemCount int64  `json:"item_count"`
	Current   bool   `json:"current"`
}

// HistoryListItemsDetails is the result of history_list_items.
type HistoryListItemsDetails struct {
	Results   []ItemSummary `json:"results"`
	NReturned int           `json:"n_returned"`
	Omitted   int           `json:"omitted"`
}

// ItemSummary is one history item with a preview of its text.
type ItemSummary struct {
	ItemID           string  `json:"item_id"`
	WindowID         string  `json:"window_id"`
	Role             string  `json:"role"`
	ToolNamespace    *string `json:"tool_namespace"`
	ToolName         *string `json:"tool_name"`
	NChars           int64   `json:"n_chars"`
	Images           int64   `json:"images"`
	TruncatedContent string  `json:"truncated_content"`
}

// HistoryReadItemDetails is the result of history_read_item.
type HistoryReadItemDetails struct {
	Agent           string `json:"agent"`
	ItemID          string `json:"item_id"`
	WindowID        string `json:"window_id"`
	Role            string `json:"role"`
	Content         string `json:"content"`
	OffsetChars     int    `json:"offset_chars"`
	EndChars        int    `json:"end_chars"`
	NChars          int    `json:"n_chars"`
	NextOffsetChars *int   `json:"next_offset_chars"`
	Images          int64  `json:"images"`
}

// HistorySearchContentsDetails is the result of history_search_contents.
// Omitted counts the first limit matches that the output budget left out;
// More says that matches exist past limit.
type HistorySearchContentsDetails struct {
	Results   []SearchHit `json:"results"`
	NReturned int         `json:"n_returned"`
	Omitted   int         `json:"omitted"`
	More      bool        `json:"more,omitempty"`
}

// SearchHit is one history item that holds the query.
type SearchHit struct {
	ItemID        string         `json:"item_id"`
	WindowID      string         `json:"window_id"`
	Role          string         `json:"role"`
	ToolNamespace *string        `json:"tool_namespace"`
	ToolName      *string        `json:"tool_name"`
	NChars        int64          `json:"n_chars"`
	Regions       []SearchRegion `json:"regions"`
}

// SearchRegion is a fragment of an item around one or more matches.
type SearchRegion struct {
	OffsetChars int         `json:"offset_chars"`
	LimitChars  int         `json:"limit_chars"`
	Preview     string      `json:"preview"`
	Matches     []MatchSpan `json:"matches"`
}

// MatchSpan is where the query occurs in a region's preview, in code
// points.
type MatchSpan struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// NotesListFilesByPrefixDetails is the result of notes_list_files_by_prefix.
type NotesListFilesByPrefixDetails struct {
	Files     []NoteFile `json:"files"`
	NReturned int        `json:"n_returned"`
	Omitted   int        `json:"omitted"`
}

// NoteFile is one note file and its times.
type NoteFile struct {
	Path      string `json:"path"`
	Bytes     int64  `json:"bytes"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// NotesReadFileDetails is the result of notes_read_file.
type NotesReadFileDetails struct {
	Path            string `json:"path"`
	Text            string `json:"text"`
	StartLine       int    `json:"start_line"`
	StopLine        int    `json:"stop_line"`
	TotalLines      int    `json:"total_lines"`
	OffsetChars     int    `json:"offset_chars"`
	EndChars        int    `json:"end_chars"`
	TotalChars      int    `json:"total_chars"`
	NextOffsetChars *int   `json:"next_offset_chars"`
}

// NotesSearchContentsDetails is the result of notes_search_contents.
type NotesSearchContentsDetails struct {
	Files     []NoteSearchFile `json:"files"`
	NReturned int              `json:"n_returned"`
	Omitted   int              `json:"omitted"`
}

// NoteSearchFile is one note file's matching lines.
type NoteSearchFile struct {
	Path           string          `json:"path"`
	CreatedAt      string          `json:"created_at"`
	Matches        []NoteLineMatch `json:"matches"`
	OmittedMatches int             `json:"omitted_matches"`
}

// NoteLineMatch is one line of a note that holds the query.
type NoteLineMatch struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// NoteWriteDetails is the result of notes_append_to_file and
// notes_write_file.
type NoteWriteDetails struct {
	Path     string `json:"path"`
	Bytes    int64  `json:"bytes"`
	Created  bool   `json:"created"`
	Revision int64  `json:"revision"`
}

// GetContextRemainingDetails is the result of get_context_remaining.
type GetContextRemainingDetails struct {
	Agent               string   `json:"agent"`
	WindowID            string   `json:"window_id"`
	RemainingTokens     *int64   `json:"remaining_tokens"`
	HardRemainingTokens *int64   `json:"hard_remaining_tokens"`
	RegisteredAgents    []string `json:"registered_agents"`
}

// NewContextDetails is the result of new_context.
type NewContextDetails struct {
	Pending  bool   `json:"pending"`
	WindowID string `json:"window_id"`
}
