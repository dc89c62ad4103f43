package main

import (
	"fmt"
	"os"

	"github.com/memoryd/memoryd/internal/redact"
)

// Redaction modes (--redact, MEMORYD_REDACT): the unambiguous secret
// shapes only, every rule, or none (docs/redaction.md).
const (
	redactDefault = "default"
	redactAll     = "all"
	redactOff     = "off"
)

// newRedactor returns the redactor of mode with the user's rules in the
// TOML file rules ("" for none), its digests keyed by key, or nil for
// mode off. Keyed digests keep a copy of the database from confirming
// guesses of a short secret (docs/redaction.md).
func newRedactor(mode, rules, key string) (*redact.Redactor, error) {
	var cfg redact.Config
	switch mode {
	case redactOff:
		return nil, nil
	case redactDefault, "":
	case redactAll:
		for _, r := range redact.Builtin() {
			if !r.Default {
				cfg.Enable = append(cfg.Enable, r.Name)
			}
		}
	default:
		return nil, &usageError{fmt.Sprintf("--redact (or MEMORYD_REDACT) must be default, all or off, not %q", mode)}
	}
	if rules != "" {
		b, err := os.ReadFile(rules)
		if err != nil {
			return nil, fmt.Errorf("read the redaction rules: %w", err)
		}
		user, err := redact.ParseConfig(b)
		if err != nil {
			return nil, fmt.Errorf("the redaction rules %s: %w", rules, err)
		}
		user.Enable = append(user.Enable, cfg.Enable...)
		cfg = user
	}
	cfg.DigestKey = []byte(key)
	r, err := redact.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("the redaction rules: %w", err)
	}
	return r, nil
}
