package redact

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/pelletier/go-toml/v2"
)

// ParseConfig reads a redaction config file (TOML; docs/redaction.md has
// the format), refusing unknown fields, and checks it as New would. Reading
// the file is the caller's; DigestKey is never read from it.
//
//	enable = ["secret_assignment"]
//	disable = ["jwt"]
//
//	[[rule]]
//	name = "acme_token"
//	pattern = '''\bacme_[A-Za-z0-9]{32}\b'''
//	keywords = ["acme_"]
func ParseConfig(data []byte) (Config, error) {
	var c Config
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return Config{}, fmt.Errorf("redact: config: unknown field:\n%s", strict.String())
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return Config{}, fmt.Errorf("redact: config: line %d, column %d: %v", line, col, de)
		}
		return Config{}, fmt.Errorf("redact: config: %w", err)
	}
	if _, err := New(c); err != nil {
		return Config{}, err
	}
	return c, nil
}
