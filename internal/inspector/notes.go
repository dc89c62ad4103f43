package inspector

import (
	"context"
	"sort"
	"strings"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
)

// noteFile is one note of a task as its events made it: its owner, path
// and size, and (for the file asked for) every revision.
type noteFile struct {
	Owner, Path string // Path relative to the owner's notes root
	Bytes       int
	Revisions   int
	Updated     int64 // position of the last write
	Revs        []noteRev
}

// Full is the note's virtual path, as the tools name it.
func (f *noteFile) Full() string { return f.Owner + "/notes/" + f.Path }

// noteRev is one revision: the note.written or note.appended event that
// made it, who wrote it, and the text that event carried.
type noteRev struct {
	N        int
	Position int64
	Type     string
	By       string
	CallID   string
	At       string
	Text     string
	Written  bool // a whole-file write (else an append)
}

const taskPage = 2000

// readNotes reads the note events of a task (only those: NoteEvents) in position order: every
// file with its size, and the revisions of the file full ("" for none).
// A note is its last whole write followed by the appends after it, as
// the projection builds it.
func readNotes(ctx context.Context, svc *memory.Service, taskID, full string) ([]*noteFile, *noteFile, error) {
	files := map[string]*noteFile{}
	after := int64(0)
	for {
		page, err := svc.NoteEvents(ctx, taskID, after, taskPage)
		if err != nil {
			return nil, nil, err
		}
		for _, ev := range page {
			payload, err := events.Decode(ev)
			if err != nil {
				return nil, nil, err
			}
			var p events.NoteWritten
			switch v := payload.(type) {
			case *events.NoteWritten:
				p = *v
			case *events.NoteAppended:
				p = events.NoteWritten(*v)
			}
			key := p.Agent + "/notes/" + p.Path
			f := files[key]
			if f == nil {
				f = &noteFile{Owner: p.Agent, Path: p.Path}
				files[key] = f
			}
			written := ev.Type == events.TypeNoteWritten
			if written {
				f.Bytes = len(p.Text)
			} else {
				f.Bytes += len(p.Text)
			}
			f.Revisions++
			f.Updated = ev.Position
			if key == full {
				f.Revs = append(f.Revs, noteRev{N: f.Revisions, Position: ev.Position, Type: ev.Type, By: p.By,
					CallID: p.CallID, At: ev.RecordedAt, Text: p.Text, Written: written})
			}
		}
		if len(page) < taskPage {
			break
		}
		after = page[len(page)-1].Position
	}
	list := make([]*noteFile, 0, len(files))
	for _, f := range files {
		list = append(list, f)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Full() < list[j].Full() })
	return list, files[full], nil
}

// contentAt is the note's text after revision n (1-based).
func (f *noteFile) contentAt(n int) string {
	start := 0
	for i := n - 1; i >= 0; i-- {
		if f.Revs[i].Written {
			start = i
			break
		}
	}
	var b strings.Builder
	for _, r := range f.Revs[start:n] {
		b.WriteString(r.Text)
	}
	return b.String()
}

// revisionsBefore lists at most n revisions made before position before
// (0: all), newest first, and the cursor of the older ones (0: none).
func (f *noteFile) revisionsBefore(before int64, n int) ([]noteRev, int64) {
	end := len(f.Revs)
	if before > 0 {
		end = sort.Search(len(f.Revs), func(i int) bool { return f.Revs[i].Position >= before })
	}
	start := max(end-n, 0)
	page := make([]noteRev, 0, end-start)
	for i := end - 1; i >= start; i-- {
		page = append(page, f.Revs[i])
	}
	if start == 0 {
		return page, 0
	}
	return page, f.Revs[start].Position
}
