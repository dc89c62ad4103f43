package inspector

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/go-chi/chi/v5"
)

// notesData is what the notes page shows.
type notesData struct {
	TaskID, Agent string
	Own, Others   []*noteFile // the agent's files, and those of the task's other agents it may read
	File          *noteFile   // the file shown, or nil
	Rev           int         // the revision shown
	Content       string
	Rev1, Rev2    int        // the diff shown, or 0
	Diff          []diffLine // from Rev1 to Rev2, as shown
	DiffOmitted   int        // lines of the diff past the shown ones
	Page          []noteRev  // the revisions listed, newest first
	Older         int64      // cursor of the page of older revisions, or 0
	// Files is how many files the agent may read. Own and Others list at
	// most filesPage of them, and MoreFiles is the offset of the next ones.
	Files, MoreFiles int
	Later            bool // a later page of the list
}

// filesPage is how many files the notes page lists at once.
const filesPage = 200

// revisionsPage is how many revisions the notes page lists at once.
const revisionsPage = 50

// notesPage lists the notes the agent may read, and shows one note at a
// revision with its revisions and a diff between two of them.
func (in *Inspector) notesPage(w http.ResponseWriter, r *http.Request) {
	at, err := atOf(r)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	// The notes as of at are folded from the live log, not a copy.
	svc := in.cfg.Service
	q := r.URL.Query()
	d := notesData{TaskID: chi.URLParam(r, "task"), Agent: q.Get("agent")}
	if d.Agent == "" {
		d.Agent = "/root"
	}
	// An unknown task or an agent not registered to it is not found, as
	// on the timeline and history pages, rather than a page without notes.
	if err := agentAt(r.Context(), svc, d.TaskID, d.Agent, at); err != nil {
		in.fail(w, r, err)
		return
	}
	full := q.Get("file")
	files, file, err := readNotes(r.Context(), svc, d.TaskID, full, at)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	offset := 0
	if v := q.Get("files"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			in.fail(w, r, errBadParam("files", "a number of files to skip"))
			return
		}
	}
	// The agent's own files first, then the others', each by path; the
	// page lists filesPage of them from offset.
	sort.SliceStable(files, func(i, j int) bool { return files[i].Owner == d.Agent && files[j].Owner != d.Agent })
	d.Files = len(files)
	shown := files[min(offset, len(files)):min(offset+filesPage, len(files))]
	if err := notesAt(r.Context(), svc, d.TaskID, at, shown); err != nil {
		in.fail(w, r, err)
		return
	}
	for _, f := range shown {
		if f.Owner == d.Agent {
			d.Own = append(d.Own, f)
		} else {
			d.Others = append(d.Others, f)
		}
	}
	if offset+filesPage < len(files) {
		d.MoreFiles = offset + filesPage
	}
	d.Later = offset > 0
	if full != "" {
		if file == nil {
			in.fail(w, r, errNotFound("no note %s in task %s at this position", full, d.TaskID))
			return
		}
		d.File = file
		if d.Rev, err = revParam(q.Get("rev"), "rev", len(file.Revs)); err != nil {
			in.fail(w, r, err)
			return
		}
		d.Content = file.contentAt(d.Rev)
		older := int64(0)
		if v := q.Get("older"); v != "" {
			if older, err = strconv.ParseInt(v, 10, 64); err != nil || older < 1 {
				in.fail(w, r, errBadParam("older", "a position"))
				return
			}
		}
		d.Page, d.Older = file.revisionsBefore(older, revisionsPage)
		if q.Get("from") != "" || q.Get("to") != "" {
			if d.Rev1, err = revParam(q.Get("from"), "from", len(file.Revs)); err != nil {
				in.fail(w, r, err)
				return
			}
			if d.Rev2, err = revParam(q.Get("to"), "to", len(file.Revs)); err != nil {
				in.fail(w, r, err)
				return
			}
			if d.Diff, d.DiffOmitted, err = lineDiff(r.Context(), file.contentAt(d.Rev1), file.contentAt(d.Rev2)); err != nil {
				in.fail(w, r, err)
				return
			}
		}
	}
	in.renderAt(w, r, "notes", d.Agent+" · notes", at, d)
}

// revParam reads a revision number from 1 to n. An empty s is n.
func revParam(s, name string, n int) (int, error) {
	if s == "" {
		return n, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > n {
		return 0, errBadParam(name, "a revision of the note, 1 to "+strconv.Itoa(n))
	}
	return v, nil
}
