package forensics

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/projections"
)

// ErasureReport is what VerifyErased found of an erased task. It is clean
// when the log holds nothing of the task but its tombstones and its
// erasure, no projection row is the task's, and neither the database's
// rows nor, on SQLite, the bytes of its file and WAL hold a text given,
// nor the task id outside the log's own pages.
type ErasureReport struct {
	TaskID string `json:"task_id"`
	Clean  bool   `json:"clean"`
	// Erasures are the positions of the task's task.erased events.
	Erasures []int64 `json:"erasures"`
	// Events counts the task's events: all, tombstones, erasures, and
	// others, which an erased task has none of.
	Events TaskEventCounts `json:"events"`
	// Rows are the task's projection rows left, by table.
	Rows map[string]int64 `json:"rows"`
	// Mentions are events of other tasks whose data names the task id.
	Mentions []int64 `json:"mentions"`
	// Files are the files whose bytes were read (SQLite): the database
	// and its WAL.
	Files []ScannedFile `json:"files"`
	// Grep is, for each text given, where it was found.
	Grep []TextFound `json:"grep"`
	// TaskIDPlaces is where the task id's bytes are in the files, those
	// in the log's pages (its tombstones and erasure) allowed.
	TaskIDPlaces *TextFound `json:"task_id_places,omitempty"`
	// Problems says in a sentence each what is not clean.
	Problems []string `json:"problems"`
	// Notes say what was not checked, and why.
	Notes []string `json:"notes"`
}

// TaskEventCounts counts the events of one task.
type TaskEventCounts struct {
	All        int64 `json:"all"`
	Tombstones int64 `json:"tombstones"`
	Erasures   int64 `json:"erasures"`
	Other      int64 `json:"other"`
}

// ScannedFile is a file VerifyErased read byte by byte.
type ScannedFile struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
}

// TextFound is where a text was found.
type TextFound struct {
	Text string `json:"text"`
	// Rows counts the live rows that hold it, by table and column.
	Rows map[string]int64 `json:"rows"`
	// Allowed counts the occurrences in the files that are allowed (the
	// task id in the log's pages), by what holds them.
	Allowed map[string]int64 `json:"allowed,omitempty"`
	// FoundIn counts the occurrences in the files that are not allowed,
	// by what holds them; Occurrences is their sum, and Found lists the
	// first of them.
	FoundIn     map[string]int64 `json:"found_in"`
	Occurrences int64            `json:"occurrences"`
	Found       []Place          `json:"found"`
}

// Place is one occurrence of a text in a file.
type Place struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	// Page is the database page it is in, 0 in a WAL's or file's header.
	Page int64 `json:"page"`
	// Object is the table or index the page belongs to now, "free page",
	// or for a WAL, whether the frame is the page's latest.
	Object string `json:"object"`
}

// maxPlaces bounds the places a TextFound lists.
const maxPlaces = 100

// logObjects are the log's table and indexes, whose pages hold an erased
// task's tombstones and erasure, and so its id.
var logObjects = map[string]bool{
	"events": true, "events_task": true, "events_lifecycle": true, "events_calls": true,
	"sqlite_autoindex_events_1": true, "sqlite_autoindex_events_2": true,
}

// VerifyErased checks that task taskID is erased from svc's database
// (docs/forgetting.md). grep are texts that must be found nowhere: in no
// row of any table and, on SQLite, in no byte of the database file or its
// WAL, as UTF-8 or as a JSON string's content. Without them, the task id's
// own bytes are looked for, and found anywhere but in the log's pages they
// make the report unclean. The database is only read.
func VerifyErased(ctx context.Context, svc *memory.Service, taskID string, grep []string) (ErasureReport, error) {
	store := svc.Store()
	rep := ErasureReport{TaskID: taskID, Erasures: []int64{}, Rows: map[string]int64{}, Mentions: []int64{},
		Files: []ScannedFile{}, Grep: []TextFound{}, Problems: []string{}, Notes: []string{}}
	erasures, err := store.TaskErasures(ctx, taskID)
	if err != nil {
		return rep, err
	}
	for _, ev := range erasures {
		rep.Erasures = append(rep.Erasures, ev.Position)
	}
	all, tombstones, err := store.TaskEvents(ctx, taskID)
	if err != nil {
		return rep, err
	}
	rep.Events = TaskEventCounts{All: all, Tombstones: tombstones, Erasures: int64(len(erasures)), Other: all - tombstones - int64(len(erasures))}
	switch {
	case all == 0:
		rep.Problems = append(rep.Problems, fmt.Sprintf("the log holds no event of task %s: it was never in this database, or the id is wrong", taskID))
	case len(erasures) == 0:
		rep.Problems = append(rep.Problems, fmt.Sprintf("task %s was not erased: no task.erased event", taskID))
	}
	if rep.Events.Other > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d event(s) of task %s are neither tombstones nor its erasure", rep.Events.Other, taskID))
	}
	db := store.Reader()
	if rep.Rows, err = projections.TaskRows(ctx, db, taskID); err != nil {
		return rep, err
	}
	if len(rep.Rows) > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("projection rows of task %s are left: %s", taskID, countsText(rep.Rows)))
	}
	if rep.Mentions, err = mentions(ctx, db, taskID); err != nil {
		return rep, err
	}
	hidden, err := payloadsHidden(ctx, db, store)
	if err != nil {
		return rep, err
	}
	if hidden { // sealed or compressed payloads, opened
		if rep.Mentions, err = openedMentions(ctx, store, taskID); err != nil {
			return rep, err
		}
	}
	if len(rep.Mentions) > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d event(s) of other tasks name task %s in their data (the first at position %d)",
			len(rep.Mentions), taskID, rep.Mentions[0]))
	}
	isSQLite := eventlog.EngineOf(db) == eventlog.SQLite
	for _, text := range grep {
		found := TextFound{Text: text, FoundIn: map[string]int64{}, Found: []Place{}}
		if found.Rows, err = rowsHolding(ctx, db, isSQLite, text); err != nil {
			return rep, err
		}
		opened, err := projections.HiddenHolding(ctx, store, variants(text))
		if err != nil {
			return rep, err
		}
		label := " (compressed)"
		if store.Sealer() != nil {
			label = " (sealed)"
		}
		for table, n := range opened {
			found.Rows[table+label] = n
		}
		if len(found.Rows) > 0 {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%q is in the database's rows: %s", text, countsText(found.Rows)))
		}
		rep.Grep = append(rep.Grep, found)
	}
	file := store.File()
	if file == "" {
		rep.Notes = append(rep.Notes, "PostgreSQL: its rows were searched, not its files, which memoryd cannot read; "+
			"what its WAL, archive, replicas and backups may hold: docs/forgetting.md")
		rep.Clean = len(rep.Problems) == 0
		return rep, nil
	}
	scan, err := newFileScan(ctx, db, file)
	if err != nil {
		return rep, err
	}
	rep.Files = scan.files
	for i, text := range grep {
		places := scan.find(variants(text), nil)
		rep.Grep[i].Found, rep.Grep[i].FoundIn, rep.Grep[i].Occurrences = places.found, places.foundIn, places.occurrences
		if places.occurrences > 0 {
			p := places.found[0]
			rep.Problems = append(rep.Problems, fmt.Sprintf("%q is in the bytes of %s %d time(s) (the first at offset %d, %s)",
				text, scan.names(places.found), places.occurrences, p.Offset, p.Object))
		}
	}
	if len(grep) == 0 {
		places := scan.find([][]byte{[]byte(taskID)}, func(p Place) bool { return logObjects[p.Object] })
		rep.TaskIDPlaces = &TextFound{Text: taskID, Rows: map[string]int64{}, Allowed: places.allowed,
			FoundIn: places.foundIn, Found: places.found, Occurrences: places.occurrences}
		if places.occurrences > 0 {
			p := places.found[0]
			rep.Problems = append(rep.Problems, fmt.Sprintf("the task id is in the bytes of %s %d time(s) outside the log's pages (the first at offset %d, %s)",
				scan.names(places.found), places.occurrences, p.Offset, p.Object))
		}
	}
	rep.Clean = len(rep.Problems) == 0
	return rep, nil
}

// countsText is counts as "name n, name n" in name order.
func countsText(counts map[string]int64) string {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, counts[n])
	}
	return strings.Join(parts, ", ")
}

// mentions returns the positions of the events of other tasks whose data
// holds the task id, at most maxPlaces of them.
func mentions(ctx context.Context, db *sql.DB, taskID string) ([]int64, error) {
	query := "SELECT position FROM events WHERE task_id <> $1 AND instr(data, $1) > 0 ORDER BY position LIMIT $2"
	if eventlog.EngineOf(db) == eventlog.Postgres {
		query = "SELECT position FROM events WHERE task_id <> $1 AND strpos(data, $1) > 0 ORDER BY position LIMIT $2"
	}
	rows, err := db.QueryContext(ctx, query, taskID, maxPlaces)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// payloadsHidden reports whether SQL cannot search every payload as it
// was recorded: the database is encrypted at rest, or it holds history
// entries' payloads compressed in events.packed.
func payloadsHidden(ctx context.Context, db *sql.DB, store *eventlog.Store) (bool, error) {
	if store.Sealer() != nil {
		return true, nil
	}
	var packed int64
	err := db.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM events WHERE length(packed) > 0 LIMIT 1) p").Scan(&packed)
	return packed > 0, err
}

// openedMentions is mentions on a database whose payloads SQL cannot
// search (payloadsHidden): every event is read, opened.
func openedMentions(ctx context.Context, store *eventlog.Store, taskID string) ([]int64, error) {
	out := []int64{}
	id := []byte(taskID)
	err := store.Each(ctx, eventlog.Filter{}, func(ev events.Event) error {
		if len(out) < maxPlaces && ev.TaskID() != taskID && bytes.Contains(ev.Data, id) {
			out = append(out, ev.Position)
		}
		return nil
	})
	return out, err
}

// variants are the byte strings a text may be stored as: its UTF-8, and
// the content of the JSON string that holds it when that differs.
func variants(text string) [][]byte {
	out := [][]byte{[]byte(text)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(text); err == nil {
		quoted := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if inner := quoted[1 : len(quoted)-1]; !bytes.Equal(inner, out[0]) {
			out = append(out, bytes.Clone(inner))
		}
	}
	return out
}

// rowsHolding counts, by table and column, the rows of every table of the
// database whose text or bytes hold text.
func rowsHolding(ctx context.Context, db *sql.DB, isSQLite bool, text string) (map[string]int64, error) {
	type column struct{ table, name, kind string }
	var cols []column
	var query string
	if isSQLite {
		query = `SELECT m.name, c.name, upper(c.type) FROM sqlite_schema m, pragma_table_info(m.name) c
			WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, c.cid`
	} else {
		query = `SELECT table_name, column_name, data_type FROM information_schema.columns
			WHERE table_schema = current_schema() AND data_type IN ('text', 'bytea', 'character varying')
			ORDER BY table_name, ordinal_position`
	}
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.table, &c.name, &c.kind); err != nil {
			rows.Close()
			return nil, err
		}
		if isSQLite && c.kind != "TEXT" && c.kind != "BLOB" {
			continue
		}
		cols = append(cols, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, c := range cols {
		col := `"` + strings.ReplaceAll(c.name, `"`, `""`) + `"`
		tbl := `"` + strings.ReplaceAll(c.table, `"`, `""`) + `"`
		var where string
		switch {
		case isSQLite:
			where = "instr(CAST(" + col + " AS BLOB), CAST($1 AS BLOB)) > 0"
		case c.kind == "bytea":
			where = "position(convert_to($1, 'UTF8') in " + col + ") > 0"
		default:
			where = "strpos(" + col + ", $1) > 0"
		}
		for _, v := range variants(text) {
			var n int64
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+tbl+" WHERE "+where, string(v)).Scan(&n); err != nil {
				return nil, fmt.Errorf("search %s.%s: %w", c.table, c.name, err)
			}
			if n > 0 {
				out[c.table+"."+c.name] += n
			}
		}
	}
	return out, nil
}

// fileScan reads the bytes of an SQLite database file and its WAL.
type fileScan struct {
	files    []ScannedFile
	pageSize int64
	objects  map[int64]string // page → table or index, from dbstat
	wal      *walFrames       // nil without a WAL
}

// walFrames is what a WAL's header and frame headers say.
type walFrames struct {
	pageSize int64
	frames   []walFrame
}

// walFrame is one frame of a WAL: the page it holds, and whether it is
// the latest valid frame of that page.
type walFrame struct {
	page   int64
	latest bool
	valid  bool
}

func newFileScan(ctx context.Context, db *sql.DB, file string) (*fileScan, error) {
	s := &fileScan{objects: map[int64]string{}}
	if err := db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&s.pageSize); err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, "SELECT name, pageno FROM dbstat")
	if err != nil {
		return nil, fmt.Errorf("map the database's pages: %w", err)
	}
	for rows.Next() {
		var name string
		var page int64
		if err := rows.Scan(&name, &page); err != nil {
			rows.Close()
			return nil, err
		}
		s.objects[page] = name
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, f := range []string{file, file + "-wal"} {
		fi, err := os.Stat(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.files = append(s.files, ScannedFile{File: f, Bytes: fi.Size()})
	}
	if len(s.files) > 1 {
		if s.wal, err = readWALFrames(s.files[1].File); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readWALFrames reads the frame headers of a WAL: a frame is valid when
// its salts are the header's (a frame of an earlier generation of the WAL
// left past its end is not), and the latest of its page among those.
func readWALFrames(file string) (*walFrames, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hdr := make([]byte, 32)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return &walFrames{}, nil // empty or truncated: no frame
	}
	w := &walFrames{pageSize: int64(binary.BigEndian.Uint32(hdr[8:12]))}
	if w.pageSize == 1 {
		w.pageSize = 65536
	}
	salt := hdr[16:24]
	last := map[int64]int{}
	fh := make([]byte, 24)
	for off := int64(32); ; off += 24 + w.pageSize {
		if _, err := f.ReadAt(fh, off); err != nil {
			break
		}
		fr := walFrame{page: int64(binary.BigEndian.Uint32(fh[0:4])), valid: bytes.Equal(fh[8:16], salt)}
		if fr.valid {
			last[fr.page] = len(w.frames)
		}
		w.frames = append(w.frames, fr)
	}
	for _, i := range last {
		w.frames[i].latest = true
	}
	return w, nil
}

// placeOf says where offset off of the file i is.
func (s *fileScan) placeOf(i int, off int64) Place {
	p := Place{File: s.files[i].File, Offset: off}
	if i == 0 {
		p.Page = off/s.pageSize + 1
		p.Object = s.object(p.Page)
		return p
	}
	w := s.wal
	if off < 32 || w.pageSize == 0 {
		p.Object = "WAL header"
		return p
	}
	k := (off - 32) / (24 + w.pageSize)
	if k >= int64(len(w.frames)) {
		p.Object = "WAL, past its frames"
		return p
	}
	fr := w.frames[k]
	p.Page = fr.page
	switch {
	case !fr.valid:
		p.Object = "WAL frame of an earlier generation of the WAL"
	case !fr.latest:
		p.Object = "WAL frame, an older image of a page of " + s.object(fr.page)
	case (off-32)%(24+w.pageSize) < 24:
		p.Object = "WAL frame header"
	default:
		p.Object = s.object(fr.page)
	}
	return p
}

func (s *fileScan) object(page int64) string {
	if page == 1 {
		return "sqlite_schema" // and the file's header
	}
	if name, ok := s.objects[page]; ok {
		return name
	}
	return "free page"
}

// names lists the files the places are in.
func (s *fileScan) names(places []Place) string {
	var out []string
	for _, p := range places {
		if len(out) == 0 || out[len(out)-1] != p.File {
			out = append(out, p.File)
		}
	}
	return strings.Join(out, " and ")
}

// scanResult is what find found.
type scanResult struct {
	allowed, foundIn map[string]int64
	found            []Place
	occurrences      int64
}

// find looks for every needle in the files' bytes. allow, when set, says
// which places are allowed; those are counted by object, the others
// listed (up to maxPlaces) and counted.
func (s *fileScan) find(needles [][]byte, allow func(Place) bool) scanResult {
	res := scanResult{allowed: map[string]int64{}, foundIn: map[string]int64{}, found: []Place{}}
	longest := 0
	for _, n := range needles {
		longest = max(longest, len(n))
	}
	if longest == 0 {
		return res
	}
	const chunk = 4 << 20
	for i, sf := range s.files {
		f, err := os.Open(sf.File)
		if err != nil {
			continue // removed meanwhile, as a WAL is at the last close
		}
		buf := make([]byte, chunk+longest-1)
		var base int64 // the file offset of buf[0]
		carry := 0
		for {
			n, err := io.ReadFull(f, buf[carry:])
			data := buf[:carry+n]
			for _, needle := range needles {
				if len(needle) == 0 {
					continue
				}
				for at := 0; ; {
					j := bytes.Index(data[at:], needle)
					if j < 0 {
						break
					}
					off := base + int64(at+j)
					// An occurrence wholly in the carried bytes was found
					// in the previous round.
					if at+j+len(needle) > carry {
						p := s.placeOf(i, off)
						if allow != nil && allow(p) {
							res.allowed[p.Object]++
						} else {
							res.occurrences++
							res.foundIn[p.Object]++
							if len(res.found) < maxPlaces {
								res.found = append(res.found, p)
							}
						}
					}
					at += j + 1
				}
			}
			if err != nil { // io.EOF or io.ErrUnexpectedEOF: the end
				break
			}
			keep := min(longest-1, len(data))
			copy(buf, data[len(data)-keep:])
			base += int64(len(data) - keep)
			carry = keep
		}
		f.Close()
	}
	sort.SliceStable(res.found, func(a, b int) bool {
		if res.found[a].File != res.found[b].File {
			return res.found[a].File < res.found[b].File
		}
		return res.found[a].Offset < res.found[b].Offset
	})
	return res
}
