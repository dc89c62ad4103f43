package sessiongen

// Compaction appends a Pi-native compaction, which opens a new window.
func (b *Builder) Compaction(summary, firstKeptEntryID string, tokensBefore int) string {
	return b.add("compaction", struct {
		Summary          string `json:"summary"`
		FirstKeptEntryID string `json:"firstKeptEntryId"`
		TokensBefore     int    `json:"tokensBefore"`
	}{summary, firstKeptEntryID, tokensBefore})
}

// ResetSentinel is the firstKeptEntryId of a memoryd rollover compaction.
// It matches no entry, so the new window keeps nothing.
const ResetSentinel = "memoryd:reset"

// Bootstrap returns the summary of a memoryd rollover compaction, the
// <context_window_reset/> marker and an identity block naming window.
func Bootstrap(agent, first, window, previous string) string {
	s := "<context_window_reset/>\nThis is a context-window reset notice, NOT a conversation summary.\n" +
		"Agent: " + agent + "\nFirst context window id: " + first + "\nCurrent context window id: " + window + "\n"
	if previous != "" {
		s += "Previous context window id: " + previous + "\n"
	}
	return s + "Recovery protocol: read your notes checkpoint first (notes_read_file checkpoint.md), then use history_* tools for details.\n" +
		"Existing notes for " + agent + " at this context-window reset\n(no note files)\n"
}

// MarkedCompaction appends a memoryd rollover compaction whose bootstrap
// names window as the new window id.
func (b *Builder) MarkedCompaction(window, previous string) string {
	return b.Compaction(Bootstrap("/root", "w1", window, previous), ResetSentinel, 150000)
}
