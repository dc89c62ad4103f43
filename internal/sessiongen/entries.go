package sessiongen

// CustomMessage appends an extension message that enters the model
// context. Content is a string or blocks.
func (b *Builder) CustomMessage(customType string, content any, display bool) string {
	return b.add("custom_message", struct {
		CustomType string `json:"customType"`
		Content    any    `json:"content"`
		Display    bool   `json:"display"`
	}{customType, content, display})
}

// ControlMessage appends a pi-token-budget control message for window, of
// a kind such as fallback, reminder or context-window.
func (b *Builder) ControlMessage(kind, window, text string) string {
	return b.add("custom_message", struct {
		CustomType string            `json:"customType"`
		Content    string            `json:"content"`
		Display    bool              `json:"display"`
		Details    map[string]string `json:"details"`
	}{"pi-token-budget:" + kind, text, false, map[string]string{"windowId": window}})
}

// Custom appends extension state, which is never a history item.
func (b *Builder) Custom(customType string, data any) string {
	return b.add("custom", struct {
		CustomType string `json:"customType"`
		Data       any    `json:"data"`
	}{customType, data})
}

// ModelChange appends a model change.
func (b *Builder) ModelChange(provider, model string) string {
	return b.add("model_change", struct {
		Provider string `json:"provider"`
		ModelID  string `json:"modelId"`
	}{provider, model})
}

// ThinkingLevelChange appends a thinking level change.
func (b *Builder) ThinkingLevelChange(level string) string {
	return b.add("thinking_level_change", struct {
		ThinkingLevel string `json:"thinkingLevel"`
	}{level})
}

// Label appends a label on target.
func (b *Builder) Label(target, label string) string {
	return b.add("label", struct {
		TargetID string `json:"targetId"`
		Label    string `json:"label"`
	}{target, label})
}
