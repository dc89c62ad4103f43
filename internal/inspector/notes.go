package inspector

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
)

// noteFile is one note of a task as the notes projection holds it. Revs
// holds every revision of the file asked for, from its events.
type noteFile struct {
	Owner, Path string // Path relative to the owner's notes root
	Bytes       int
	Revisions   int
	Updated     int64 // position of the last write
	Revs        []noteRev
	created     int64 // position of the first write
	// later marks a note written after the page's position. Its Bytes,
	// Revisions and Updated are today's until notesAt folds them.
	later bool
}

// Full is the note's virtual path, as the tools name it.
func (f *noteFile) Full() string { return address.Full(f.Owner, f.Path) }

// noteRev is one revision of a note, made by a note.written or
// note.appended event.
type noteRev struct {
	N        int
	Position int64
	Type     string
	By       string
	CallID   string
	At       string
	Text     string
	Written  bool // a whole-file write, not an append
}

// notePage is how many of a note's events readNotes reads at once.
const notePage = 2000

// readNotes lists the notes of a task as of position at, or now for 0,
// and reads the revisions of the file full up to at from its own events.
func readNotes(ctx context.Context, svc *memory.Service, taskID, full string, at int64) ([]*noteFile, *noteFile, error) {
	notes, err := svc.TaskNotes(ctx, taskID)
	if err != nil {
		return nil, nil, err
	}
	list := make([]*noteFile, 0, len(notes))
	var file *noteFile
	var from, to int64
	for _, n := range notes {
		if at > 0 && n.CreatedPosition > at {
			continue // not created yet
		}
		f := &noteFile{Owner: n.Agent, Path: n.Path, Bytes: int(n.Bytes), Revisions: int(n.Revision), Updated: n.UpdatedPosition,
			created: n.CreatedPosition, later: at > 0 && n.UpdatedPosition > at}
		list = append(list, f)
		if full != "" && f.Full() == full {
			file, from, to = f, n.CreatedPosition, n.UpdatedPosition
			if f.later {
				to = at
			}
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Full() < list[j].Full() })
	if file == nil {
		return list, nil, nil
	}
	// The file's revisions are its own write and append events, between
	// its first and last writes.
	after := from - 1
	for {
		page, err := svc.NoteEvents(ctx, taskID, file.Owner, file.Path, after, to, notePage)
		if err != nil {
			return nil, nil, err
		}
		for _, ev := range page {
			p, err := noteChange(ev)
			if err != nil {
				return nil, nil, err
			}
			file.Revs = append(file.Revs, noteRev{N: len(file.Revs) + 1, Position: ev.Position, Type: ev.Type, By: p.By,
				CallID: p.CallID, At: ev.RecordedAt, Text: p.Text, Written: ev.Type == events.TypeNoteWritten})
		}
		if len(page) < notePage {
			break
		}
		after = page[len(page)-1].Position
	}
	// The list and the events are two reads, and on a live log a write may
	// land between them. The file shows what its events say.
	file.Revisions = len(file.Revs)
	if file.later && len(file.Revs) > 0 {
		file.Bytes, file.Updated, file.later = len(file.contentAt(len(file.Revs))), file.Revs[len(file.Revs)-1].Position, false
	}
	return list, file, nil
}

// notesAt gives the files marked later their size, revision count and
// last write as of position at, folded from their owners' note events by
// the log, one query per owner from its earliest such file's first write.
func notesAt(ctx context.Context, svc *memory.Service, taskID string, at int64, files []*noteFile) error {
	byOwner := map[string]map[string]*noteFile{}
	from := map[string]int64{}
	for _, f := range files {
		if !f.later {
			continue
		}
		if byOwner[f.Owner] == nil {
			byOwner[f.Owner], from[f.Owner] = map[string]*noteFile{}, f.created
		}
		byOwner[f.Owner][f.Path] = f
		from[f.Owner] = min(from[f.Owner], f.created)
		f.Bytes, f.Revisions, f.Updated, f.later = 0, 0, 0, false
	}
	for owner, files := range byOwner {
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sizes, err := svc.NoteSizes(ctx, taskID, owner, from[owner]-1, at, paths)
		if err != nil {
			return err
		}
		for _, n := range sizes {
			if f := files[n.Path]; f != nil {
				f.Bytes, f.Revisions, f.Updated = int(n.Bytes), int(n.Revisions), n.Updated
			}
		}
	}
	return nil
}

// contentAt returns the note's text after revision n, counted from 1.
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

// revisionsBefore lists at most n revisions made before position before,
// newest first, and the cursor of the older ones. Zero means none.
func (f *noteFile) revisionsBefore(before int64, n int) ([]noteRev, int64) {
	page, older := lastBefore(f.Revs, func(r noteRev) int64 { return r.Position }, before, n)
	page = slices.Clone(page)
	slices.Reverse(page)
	return page, older
}

// noteChange returns the payload of a note.written or note.appended
// event. An append's fields are a write's.
func noteChange(ev events.Event) (events.NoteWritten, error) {
	payload, err := events.Decode(ev)
	if err != nil {
		return events.NoteWritten{}, err
	}
	switch v := payload.(type) {
	case *events.NoteWritten:
		return *v, nil
	case *events.NoteAppended:
		return events.NoteWritten(*v), nil
	}
	return events.NoteWritten{}, nil
}
