package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/sessiongen"
	"github.com/memoryd/memoryd/internal/zpack"
)

// buildCeiling copies the rendered text of every history entry out of
// memoryd's database into ceiling.db table t, counts its bytes and picks
// the needles.
func (b *bench) buildCeiling(ctx context.Context, histDB string) error {
	t0 := time.Now()
	src, err := sql.Open("sqlite", eventlog.FileURI(histDB, url.Values{"mode": {"ro"}}))
	if err != nil {
		return err
	}
	defer src.Close()
	path := filepath.Join(b.scratch, "ceiling.db")
	removeDB(path)
	dst, err := sql.Open("sqlite", eventlog.FileURI(path, url.Values{"_pragma": {"journal_mode(WAL)", "synchronous(OFF)"}}))
	if err != nil {
		return err
	}
	dst.SetMaxOpenConns(1)
	// One row per history item holds its text as TEXT. That is the layout
	// a plain implementation would search, and the one GLOB scans fastest,
	// with no conversion of each value.
	if _, err := dst.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)"); err != nil {
		dst.Close()
		return err
	}
	// The texts memoryd searches are its raw entries rendered by
	// history.Render, as memoryd renders them: the entries of the events
	// that record them.
	rows, err := src.QueryContext(ctx, "SELECT * FROM events WHERE type = 'history.entry_recorded'")
	if err != nil {
		dst.Close()
		return fmt.Errorf("read the rendered history texts from memoryd's database: %w", err)
	}
	var freq [256]int64
	tx, err := dst.BeginTx(ctx, nil)
	if err != nil {
		rows.Close()
		dst.Close()
		return err
	}
	var sealer *atrest.Sealer
	if b.atRest { // the events are sealed: open them as memoryd does
		sealer = benchSealer()
	}
	cols, err := rows.Columns()
	if err != nil {
		rows.Close()
		dst.Close()
		return err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	dataCol, packedCol := slices.Index(cols, "data"), slices.Index(cols, "packed") // packed: since migration 00014
	for rows.Next() {
		if err = rows.Scan(ptrs...); err != nil {
			break
		}
		var packed []byte
		if packedCol >= 0 {
			packed = vals[packedCol]
		}
		var raw []byte
		if raw, err = recordedEntry(sealer, vals[dataCol], packed); err != nil {
			break
		}
		r := history.Render(raw)
		if !r.Item || r.Text == "" {
			continue
		}
		text := r.Text
		for _, c := range []byte(text) {
			freq[c]++
		}
		b.textBytes += int64(len(text))
		b.textItems++
		if _, err = tx.ExecContext(ctx, "INSERT INTO t (body) VALUES (?)", text); err != nil {
			break
		}
		if b.textItems%20000 == 0 {
			if err = tx.Commit(); err != nil {
				break
			}
			if tx, err = dst.BeginTx(ctx, nil); err != nil {
				break
			}
		}
	}
	err = errors.Join(err, rows.Err(), rows.Close())
	if err == nil {
		err = tx.Commit()
	} else {
		tx.Rollback()
	}
	if err == nil {
		_, err = dst.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	if err != nil {
		dst.Close()
		return fmt.Errorf("build ceiling.db: %w", err)
	}
	if b.textBytes == 0 {
		dst.Close()
		return errors.New("memoryd's recorded entries render to no item text: the search ceiling would scan nothing")
	}
	b.ceiling = dst

	// The rare needle is the one sessiongen planted. The common one never
	// occurs, and its first byte is the most frequent letter of the text.
	b.rare = sessiongen.LargeRareNeedle
	type bf struct {
		c byte
		n int64
	}
	var all []bf
	for c, n := range freq {
		all = append(all, bf{byte(c), n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var top []string
	for _, x := range all[:8] {
		top = append(top, fmt.Sprintf("%q %.1f%%", x.c, 100*float64(x.n)/float64(b.textBytes)))
	}
	var letter bf
	for _, x := range all {
		if x.c >= 'a' && x.c <= 'z' {
			letter = x
			break
		}
	}
	b.common = string(letter.c) + "zq-common-needle"
	b.everywhere = sessiongen.LargeCommonNeedle
	if b.everyHits, _, err = globCount(ctx, dst, b.everywhere); err != nil || b.everyHits == 0 {
		dst.Close()
		return fmt.Errorf("counting the items with %q: %d (%v)", b.everywhere, b.everyHits, err)
	}
	share := func(c byte) string { return fmt.Sprintf("%.2f%%", 100*float64(freq[c])/float64(b.textBytes)) }
	b.info = append(b.info, fmt.Sprintf("Rendered history text: %s items, %s (%s bytes); most frequent bytes: %s. "+
		"Needles: rare %q (first byte %s of the text), common-first-byte %q (first byte %s, the most frequent letter).",
		num(float64(b.textItems), 0), mb(b.textBytes), num(float64(b.textBytes), 0), strings.Join(top, ", "),
		b.rare, share(b.rare[0]), b.common, share(b.common[0])))
	b.logf("ceiling.db: %s items, %s of text copied in %v; needles %q and %q", num(float64(b.textItems), 0), mb(b.textBytes),
		time.Since(t0).Round(time.Millisecond), b.rare, b.common)
	return nil
}

// recordedEntry returns the entry of a history.entry_recorded event from
// its stored data and packed columns, opened with sealer on an encrypted
// database, as internal/eventlog's queries return it.
func recordedEntry(sealer *atrest.Sealer, data, packed []byte) ([]byte, error) {
	var err error
	switch {
	case len(packed) > 0 && sealer != nil:
		if packed, err = sealer.Open(eventsPackedTag, packed); err != nil {
			return nil, fmt.Errorf("a sealed history event: %w", err)
		}
		fallthrough
	case len(packed) > 0:
		if data, err = zpack.Unpack(packed); err != nil {
			return nil, fmt.Errorf("a history event: %w", err)
		}
	case sealer != nil:
		if data, err = sealer.OpenJSON(eventsDataTag, data); err != nil {
			return nil, fmt.Errorf("a sealed history event: %w", err)
		}
	}
	var p events.HistoryEntryRecorded
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("a history event: %w", err)
	}
	return p.Entry, nil
}
