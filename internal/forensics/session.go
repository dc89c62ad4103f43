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

// ImportedSession is the result of ImportSession, with the attach's fields.
// Its window_id is named attached_window_id here, beside the window the
// import ends in, so the two are told apart.
type ImportedSession struct {
	TaskID           string   `json:"task_id"`
	Agent            string   `json:"agent"`
	Resumed          bool     `json:"resumed"`
	RegisteredAgents []string `json:"registered_agents"`
	// AttachedWindowID is the agent's window when the import attached,
	// before the file's entries. It is w1 for a new task.
	AttachedWindowID string `json:"attached_window_id"`
	Entries          int    `json:"entries"`  // the file's entries
	Stored           int    `json:"stored"`   // those new to memoryd
	Branch           int    `json:"branch"`   // the branch's length, last entry to root
	Revision         int64  `json:"revision"` // the branch revision after the import
	// WindowID is the agent's window after the import, as a history sync
	// answers it, moved on by the compactions among the file's entries.
	WindowID string `json:"current_window_id"`
}

// ErrNotASession means a file given as a Pi session file does not start
// with a session header.
var ErrNotASession = errors.New("not a Pi session file")

// ReadSession reads a Pi session file with history.ReadSession. It refuses
// at once a file whose first line that is not blank is not a session
// header, such as an exported event log.
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

// ImportSession attaches a Pi session file as a task keyed by its absolute
// path, and syncs its entries and branch in one transaction. When an entry
// is refused nothing is stored, and the error names its line. Importing
// the same file again stores only what is new.
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
	return ImportedSession{TaskID: res.TaskID, Agent: res.Agent, Resumed: res.Resumed, RegisteredAgents: res.RegisteredAgents,
		AttachedWindowID: res.AttachResult.WindowID, Entries: len(sess.Entries), Stored: res.Stored,
		Branch: len(sess.Branch), Revision: res.Revision, WindowID: res.WindowID}, nil
}
