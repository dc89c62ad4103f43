package sessiongen

import (
	"fmt"
	"io"
	"os"

	"github.com/memoryd/memoryd/internal/history"
)

// ReadFile reads a Pi session JSONL file. See Read.
func ReadFile(path string) (Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return Session{}, err
	}
	defer f.Close()
	s, err := Read(f)
	if err != nil {
		return Session{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Read parses a Pi session JSONL stream with history.ReadSession, the
// parser memoryd itself uses.
func Read(r io.Reader) (Session, error) {
	hs, err := history.ReadSession(r)
	if err != nil {
		return Session{}, err
	}
	return Session{Header: hs.Header, Entries: hs.Entries, Branch: hs.Branch}, nil
}
