package memory

import (
	"github.com/memoryd/memoryd/internal/events"
)

// BudgetInput is the optional budget configuration of an attach. Nil
// fields take their defaults.
type BudgetInput struct {
	ContextWindow                  *int64   `json:"context_window"`
	ReminderRemainingPercent       *float64 `json:"reminder_remaining_percent"`
	ReminderRemainingFloorTokens   *int64   `json:"reminder_remaining_floor_tokens"`
	ReminderRemainingCeilingTokens *int64   `json:"reminder_remaining_ceiling_tokens"`
	HardRolloverUsedTokens         *int64   `json:"hard_rollover_used_tokens"`
	MaxToolOutputChars             *int64   `json:"max_tool_output_chars"`
	NotesMaxFileBytes              *int64   `json:"notes_max_file_bytes"`
	HistoryItemPreviewChars        *int64   `json:"history_item_preview_chars"`
}

// These are the budget defaults of docs/behaviour.md §G.
const (
	DefaultReminderRemainingPercent       = 0.25
	DefaultReminderRemainingFloorTokens   = 21384
	DefaultReminderRemainingCeilingTokens = 60000
	DefaultMaxToolOutputChars             = 12000
	DefaultNotesMaxFileBytes              = MaxNotesMaxFileBytes
	DefaultHistoryItemPreviewChars        = 400
)

// MaxNotesMaxFileBytes is the ceiling of the per-file note cap. A budget
// may lower the cap, never raise it.
const MaxNotesMaxFileBytes = events.MaxNoteBytes

// notesCap returns the per-file cap of the notes of an agent with budget b.
func notesCap(b events.Budget) int64 {
	// A budget recorded before the ceiling was enforced may exceed it, and
	// the ceiling holds all the same.
	return min(b.NotesMaxFileBytes, MaxNotesMaxFileBytes)
}

// resolve validates b and fills in defaults.
func (b *BudgetInput) resolve() (events.Budget, error) {
	out := events.Budget{
		ReminderRemainingPercent:       DefaultReminderRemainingPercent,
		ReminderRemainingFloorTokens:   DefaultReminderRemainingFloorTokens,
		ReminderRemainingCeilingTokens: DefaultReminderRemainingCeilingTokens,
		MaxToolOutputChars:             DefaultMaxToolOutputChars,
		NotesMaxFileBytes:              DefaultNotesMaxFileBytes,
		HistoryItemPreviewChars:        DefaultHistoryItemPreviewChars,
	}
	if b == nil {
		return out, nil
	}
	positive := func(name string, v *int64, dst *int64) error {
		if v == nil {
			return nil
		}
		if *v < 1 {
			return invalidf("budget.%s must be at least 1", name)
		}
		*dst = *v
		return nil
	}
	if b.ContextWindow != nil {
		if *b.ContextWindow < 1 {
			return out, invalidf("budget.context_window must be at least 1")
		}
		out.ContextWindow = b.ContextWindow
	}
	if p := b.ReminderRemainingPercent; p != nil {
		if !(*p > 0 && *p < 1) {
			return out, invalidf("budget.reminder_remaining_percent must be strictly between 0 and 1")
		}
		out.ReminderRemainingPercent = *p
	}
	if v := b.HardRolloverUsedTokens; v != nil {
		if *v < 0 {
			return out, invalidf("budget.hard_rollover_used_tokens must be 0 (off) or more")
		}
		out.HardRolloverUsedTokens = *v
	}
	// More than the ceiling is refused rather than clamped, so that a
	// client relying on a larger cap learns it at once.
	if v := b.NotesMaxFileBytes; v != nil && *v > MaxNotesMaxFileBytes {
		e := newError(ErrInvalidArgument, "budget.notes_max_file_bytes must be between 1 and %d (the ceiling of the per-file note cap): a budget may lower the cap, not raise it", MaxNotesMaxFileBytes)
		e.Details = map[string]any{"field": "budget.notes_max_file_bytes", "limit": int64(MaxNotesMaxFileBytes)}
		return out, e
	}
	for _, f := range []struct {
		name string
		v    *int64
		dst  *int64
	}{
		{"reminder_remaining_floor_tokens", b.ReminderRemainingFloorTokens, &out.ReminderRemainingFloorTokens},
		{"reminder_remaining_ceiling_tokens", b.ReminderRemainingCeilingTokens, &out.ReminderRemainingCeilingTokens},
		{"max_tool_output_chars", b.MaxToolOutputChars, &out.MaxToolOutputChars},
		{"notes_max_file_bytes", b.NotesMaxFileBytes, &out.NotesMaxFileBytes},
		{"history_item_preview_chars", b.HistoryItemPreviewChars, &out.HistoryItemPreviewChars},
	} {
		if err := positive(f.name, f.v, f.dst); err != nil {
			return out, err
		}
	}
	return out, nil
}
