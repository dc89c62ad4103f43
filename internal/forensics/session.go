package forensics

import (
	"context"
	"encoding/json"

	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/memory"
)

// sessionChunkBytes bounds the entries synced in one transaction.
const sessionChunkBytes = 4 << 20

// ImportedSession is the result of ImportSession.
type ImportedSession struct {
	memory.AttachResult
	Entries  int    `json:"entries"`
	Stored   int    `json:"stored"`
	Branch   int    `json:"branch"`
	Revision int64  `json:"revision"`
	WindowID string `json:"current_window_id"`
}

// ImportSession attaches a Pi session file as a task (its absolute path
// is the session key) and syncs its entries and its branch: the path from
// the last entry to the root. Importing the same file again resumes the
// task and stores only what is new.
func ImportSession(ctx context.Context, svc *memory.Service, path string, sess history.Session, progress func(int64)) (ImportedSession, error) {
	att, err := svc.Attach(ctx, memory.AttachRequest{SessionKey: path, SessionID: sess.ID, SessionFile: path}, "")
	if err != nil {
		return ImportedSession{}, err
	}
	out := ImportedSession{AttachResult: att, Entries: len(sess.Entries), Branch: len(sess.Branch)}
	cc := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent}
	var chunk []json.RawMessage
	size, done := 0, 0
	flush := func(branch *[]string) error {
		res, err := svc.Sync(ctx, memory.SyncRequest{Context: cc, Entries: chunk, Branch: branch}, "")
		if err != nil {
			return err
		}
		out.Stored += res.Stored
		out.Revision, out.WindowID = res.Revision, res.WindowID
		done += len(chunk)
		if progress != nil {
			progress(int64(done))
		}
		chunk, size = chunk[:0], 0
		return nil
	}
	for _, e := range sess.Entries {
		if (size+len(e) > sessionChunkBytes || len(chunk) == memory.MaxSyncEntries) && len(chunk) > 0 {
			if err := flush(nil); err != nil {
				return out, err
			}
		}
		chunk = append(chunk, e)
		size += len(e)
	}
	branch := sess.Branch
	if branch == nil {
		branch = []string{}
	}
	return out, flush(&branch)
}
