package forensics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/memory"
)

// ImportedSession is the result of ImportSession.
type ImportedSession struct {
	memory.AttachResult
	Entries  int    `json:"entries"`
	Stored   int    `json:"stored"`
	Branch   int    `json:"branch"`
	Revision int64  `json:"revision"`
	WindowID string `json:"current_window_id"`
}

// ErrNotASession: a file given as a Pi session file does not start with a
// session header.
var ErrNotASession = errors.New("not a Pi session file")

// ReadSession reads a Pi session file (history.ReadSession), refusing one
// whose first line that is not blank is not a session header
// {"type":"session",...} before it reads further: an exported event log,
// say, is refused at its first line.
func ReadSession(r io.Reader) (history.Session, error) {
	br := bufio.NewReader(r)
	var read []byte // the lines up to the header, read again by history.ReadSession
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return history.Session{}, err
		}
		read = append(read, b...)
		if t := bytes.TrimSpace(b); len(t) > 0 {
			var head struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(t, &head) != nil || head.Type != "session" {
				return history.Session{}, fmt.Errorf("%w: line %d is not a session header ({\"type\":\"session\",...})", ErrNotASession, line)
			}
			break
		}
		if err != nil {
			return history.Session{}, fmt.Errorf("%w: it has no session header", ErrNotASession)
		}
	}
	return history.ReadSession(io.MultiReader(bytes.NewReader(read), br))
}

// ImportSession attaches a Pi session file as a task (its absolute path
// is the session key) and syncs its entries and its branch, the path from
// the last entry to the root, all in one transaction: when an entry is
// refused nothing is stored, and the error names its line in the file.
// Importing the same file again resumes the task and stores only what is
// new.
func ImportSession(ctx context.Context, svc *memory.Service, path string, sess history.Session, progress func(int64)) (ImportedSession, error) {
	var synced func(int)
	if progress != nil {
		synced = func(n int) { progress(int64(n)) }
	}
	req := memory.AttachRequest{SessionKey: path, SessionID: sess.ID, SessionFile: path}
	res, err := svc.ImportSession(ctx, req, sess.Entries, sess.Branch, synced)
	if err != nil {
		var ee *memory.EntryError
		if errors.As(err, &ee) && ee.Index < len(sess.Lines) {
			return ImportedSession{}, fmt.Errorf("line %d: %w", sess.Lines[ee.Index], err)
		}
		return ImportedSession{}, err
	}
	return ImportedSession{AttachResult: res.AttachResult, Entries: len(sess.Entries), Stored: res.Stored,
		Branch: len(sess.Branch), Revision: res.Revision, WindowID: res.WindowID}, nil
}
