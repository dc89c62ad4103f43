package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// bytesPerByte formats a database's bytes per byte of session files.
func bytesPerByte(x float64) string { return fmt.Sprintf("%.2f bytes/byte", x) }

// diskUsage is where a database's bytes are: every table and index, the
// rest, and what the big columns hold.
type diskUsage struct {
	engine string
	// total is what the database takes: for SQLite its file and WAL, for
	// PostgreSQL pg_database_size (the cluster's WAL is not counted).
	total int64
	// parts add up to total.
	parts   []diskPart
	columns []diskColumn
}

// diskPart is one table, index or other share of a database.
type diskPart struct {
	name  string
	kind  string // table, index, TOAST, free pages, WAL, rest
	table string // the table an index or TOAST table belongs to
	bytes int64
	// payload is, on SQLite, the bytes of the records in its pages
	// (dbstat's payload); the rest of its pages is headers and free space.
	// -1 elsewhere.
	payload int64
}

// diskColumn is what one column holds, summed over its rows: bytes as
// the value's length, stored as PostgreSQL keeps it (pg_column_size, after
// TOAST's compression; -1 on SQLite, which stores the bytes as they are).
type diskColumn struct {
	table, column string
	bytes, stored int64
}

// diskTable names big columns of a table.
type diskTable struct {
	table   string
	columns []string
}

// diskColumns are the big columns whose bytes the rows report.
var diskColumns = []diskTable{
	{"events", []string{"data", "packed"}}, // packed: absent from an older memoryd's database
	{"history_entries", []string{"breaks", "calls"}},
	{"history_chunks", []string{"data", "bloom", "entries"}},
}

// presentColumns are the diskColumns db has: a database made by an older
// memoryd lacks some.
func presentColumns(ctx context.Context, db *sql.DB) []diskTable {
	var out []diskTable
	for _, t := range diskColumns {
		var cols []string
		for _, c := range t.columns {
			if rows, err := db.QueryContext(ctx, "SELECT "+c+" FROM "+t.table+" LIMIT 0"); err == nil {
				rows.Close()
				cols = append(cols, c)
			}
		}
		out = append(out, diskTable{t.table, cols})
	}
	return out
}

// sumKind is the bytes of the parts of one kind.
func (u *diskUsage) sumKind(kinds ...string) int64 {
	var n int64
	for _, p := range u.parts {
		if slices.Contains(kinds, p.kind) {
			n += p.bytes
		}
	}
	return n
}

// check reports whether the parts add up to the total, none negative.
func (u *diskUsage) check() error {
	var n int64
	for _, p := range u.parts {
		if p.bytes < 0 {
			return fmt.Errorf("%s: part %s (%s) has %d bytes", u.engine, p.name, p.kind, p.bytes)
		}
		n += p.bytes
	}
	if n != u.total {
		return fmt.Errorf("%s: the parts add up to %d bytes, the database is %d", u.engine, n, u.total)
	}
	return nil
}

// sqliteUsage reads where the bytes of the SQLite database at path are:
// each table's and index's pages from the dbstat virtual table, the free
// pages, the WAL, and whatever of the file none of them holds.
func sqliteUsage(ctx context.Context, path string) (*diskUsage, error) {
	db, err := sql.Open("sqlite", eventlog.FileURI(path, url.Values{"mode": {"ro"}}))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	u := &diskUsage{engine: "SQLite"}
	rows, err := db.QueryContext(ctx, `SELECT s.name, coalesce(m.type, 'table'), coalesce(m.tbl_name, s.name), sum(s.pgsize), sum(s.payload)
		FROM dbstat s LEFT JOIN sqlite_schema m ON m.name = s.name GROUP BY s.name ORDER BY 4 DESC, 1`)
	if err != nil {
		return nil, fmt.Errorf("dbstat: %w", err)
	}
	var inPages int64
	for rows.Next() {
		var p diskPart
		if err := rows.Scan(&p.name, &p.kind, &p.table, &p.bytes, &p.payload); err != nil {
			rows.Close()
			return nil, err
		}
		if p.kind == "table" {
			p.table = ""
		}
		inPages += p.bytes
		u.parts = append(u.parts, p)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	var pageSize, pages, free int64
	for pragma, v := range map[string]*int64{"page_size": &pageSize, "page_count": &pages, "freelist_count": &free} {
		if err := db.QueryRowContext(ctx, "PRAGMA "+pragma).Scan(v); err != nil {
			return nil, fmt.Errorf("PRAGMA %s: %w", pragma, err)
		}
	}
	main, wal := sizeOf(path), sizeOf(path+"-wal")
	u.total = main + wal
	u.parts = append(u.parts, diskPart{name: "(free pages)", kind: "free pages", bytes: free * pageSize, payload: 0})
	if wal > 0 {
		u.parts = append(u.parts, diskPart{name: "(WAL)", kind: "WAL", bytes: wal, payload: -1})
	}
	// The rest: pages in no b-tree nor on the free list (the lock-byte
	// page past 1 GiB, pointer maps), and the file past its last page.
	rest := u.total - inPages - free*pageSize - wal
	u.parts = append(u.parts, diskPart{name: "(rest of the file)", kind: "rest", bytes: rest, payload: -1})
	for _, t := range presentColumns(ctx, db) {
		exprs := make([]string, len(t.columns))
		for i, c := range t.columns {
			exprs[i] = "coalesce(sum(length(CAST(" + c + " AS BLOB))), 0)"
		}
		vals := make([]int64, len(t.columns))
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := db.QueryRowContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM "+t.table).Scan(dest...); err != nil {
			return nil, fmt.Errorf("the columns of %s: %w", t.table, err)
		}
		for i, c := range t.columns {
			u.columns = append(u.columns, diskColumn{table: t.table, column: c, bytes: vals[i], stored: -1})
		}
	}
	return u, u.check()
}

// sizeOf is the size of the file at path, 0 if there is none.
func sizeOf(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// postgresUsage reads where the bytes of the PostgreSQL database of dsn
// are: each table's heap (with its free space and visibility maps), its
// TOAST table (with the TOAST index), each index, and the rest of
// pg_database_size: the system catalogs. Each table's three shares make its
// pg_total_relation_size.
func postgresUsage(ctx context.Context, dsn string) (*diskUsage, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	u := &diskUsage{engine: "PostgreSQL"}
	rows, err := db.QueryContext(ctx, `SELECT c.relname, pg_table_size(c.oid), coalesce(pg_total_relation_size(NULLIF(c.reltoastrelid, 0)), 0)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema() ORDER BY 2 DESC, 1`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name string
		var table, toast int64
		if err := rows.Scan(&name, &table, &toast); err != nil {
			rows.Close()
			return nil, err
		}
		u.parts = append(u.parts, diskPart{name: name, kind: "table", bytes: table - toast, payload: -1})
		if toast > 0 {
			u.parts = append(u.parts, diskPart{name: name + " (TOAST)", kind: "TOAST", table: name, bytes: toast, payload: -1})
		}
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	rows, err = db.QueryContext(ctx, `SELECT i.relname, t.relname, pg_relation_size(i.oid)
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = current_schema() ORDER BY 3 DESC, 1`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		p := diskPart{kind: "index", payload: -1}
		if err := rows.Scan(&p.name, &p.table, &p.bytes); err != nil {
			rows.Close()
			return nil, err
		}
		u.parts = append(u.parts, p)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	// The database's size last, so that what autovacuum adds meanwhile
	// (free space and visibility maps) is counted in it.
	if err := db.QueryRowContext(ctx, "SELECT pg_database_size(current_database())").Scan(&u.total); err != nil {
		return nil, err
	}
	var tables int64
	for _, p := range u.parts {
		tables += p.bytes
	}
	u.parts = append(u.parts, diskPart{name: "(system catalogs and the rest)", kind: "rest", bytes: u.total - tables, payload: -1})
	for _, t := range presentColumns(ctx, db) {
		var exprs []string
		for _, c := range t.columns {
			exprs = append(exprs, "coalesce(sum(octet_length("+c+")), 0)", "coalesce(sum(pg_column_size("+c+")), 0)")
		}
		vals := make([]int64, len(exprs))
		dest := make([]any, len(vals))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := db.QueryRowContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM "+t.table).Scan(dest...); err != nil {
			return nil, fmt.Errorf("the columns of %s: %w", t.table, err)
		}
		for i, c := range t.columns {
			u.columns = append(u.columns, diskColumn{table: t.table, column: c, bytes: vals[2*i], stored: vals[2*i+1]})
		}
	}
	return u, u.check()
}

func (b *bench) measureDiskSQLite(ctx context.Context, _ repetition) (sample, error) {
	return b.measureDisk(ctx, "sqlite")
}

func (b *bench) measureDiskPostgres(ctx context.Context, _ repetition) (sample, error) {
	return b.measureDisk(ctx, "postgres")
}

// measureDisk reads the breakdown of the engine's database. The figure is
// its bytes per byte of the session files.
func (b *bench) measureDisk(ctx context.Context, engine string) (sample, error) {
	d := b.disk
	var u *diskUsage
	var err error
	if engine == "sqlite" {
		u, err = sqliteUsage(ctx, d.sqlite)
	} else {
		u, err = postgresUsage(ctx, d.pg)
	}
	if err != nil {
		return sample{}, err
	}
	d.last[engine] = u
	files := float64(d.bytes)
	s := sample{fig: float64(u.total) / files}
	s.add("database (MB)", float64(u.total)/1e6)
	s.add("tables, their TOAST included (×)", float64(u.sumKind("table", "TOAST"))/files)
	s.add("indexes (×)", float64(u.sumKind("index"))/files)
	s.add("free pages, WAL and the rest (×)", float64(u.sumKind("free pages", "WAL", "rest"))/files)
	return s, nil
}

func (b *bench) diskSQLiteNotes() string { return b.diskNotes("sqlite") }

func (b *bench) diskPostgresNotes() string { return b.diskNotes("postgres") }

// diskNotes says what was imported and where the bytes of the last
// repetition's database are, part by part.
func (b *bench) diskNotes(engine string) string {
	d := b.disk
	u := d.last[engine]
	imp := d.imports[engine]
	var w strings.Builder
	files := float64(d.bytes)
	where := "a new SQLite file (`--db disk.db`); the database is the file and its WAL. Tables and indexes from the `dbstat` virtual table " +
		"(`SELECT name, sum(pgsize), sum(payload) FROM dbstat GROUP BY name`); payload is the bytes of the records in those pages"
	if engine == "postgres" {
		where = fmt.Sprintf("a new database on PostgreSQL %s, %s (`--db postgres://…/memoryd_bench_disk`); the database is `pg_database_size` (the cluster's WAL "+
			"is not counted). Each table's heap is `pg_table_size` less its TOAST table's `pg_total_relation_size`, each index `pg_relation_size`; the "+
			"three add up to `pg_total_relation_size`. TOAST compresses values over about 2 KB with pglz", b.pgVersion, b.pgWhere())
	}
	fmt.Fprintf(&w, "Figure: the database's bytes / the bytes of the session files it holds (target ≤ 1.0, stretch ≤ 0.5). The files: %s of generated Pi "+
		"sessions (sessiongen, as the search-all rows' Pi third: prompts, tool calls and outputs, thinking, answers), %d sessions in %d .jsonl files (-disk-bytes). "+
		"`memoryd import-sessions --from pi --db DB FOLDER`, exec to exit, imported them (%s entries) into %s. The import took %s (CPU %s, peak RSS %s).\n\n",
		mb(d.bytes), d.sessions, d.files, num(float64(d.entries), 0), where, imp.took.Round(1e8), imp.cpu.Round(1e8), mb(imp.peak))
	if u == nil {
		return w.String()
	}
	fmt.Fprintf(&w, "Where the %s are (last repetition):\n\n| part | kind | MB | × the files | share |", mb(u.total))
	if engine == "sqlite" {
		w.WriteString(" payload MB |\n|---|---|---|---|---|---|\n")
	} else {
		w.WriteString("\n|---|---|---|---|---|\n")
	}
	// Parts under 0.1% of the database are summed on one line.
	var small diskPart
	smallN := 0
	for _, p := range u.parts {
		if foldable(p, u.total) {
			small.bytes += p.bytes
			small.payload += max(p.payload, 0)
			smallN++
		}
	}
	small.name, small.kind = fmt.Sprintf("(%d smaller tables and indexes)", smallN), "tables and indexes"
	parts := u.parts
	if smallN > 1 {
		parts = slices.DeleteFunc(slices.Clone(u.parts), func(p diskPart) bool { return foldable(p, u.total) })
		// Before the free pages, WAL and the rest, which come last.
		i := slices.IndexFunc(parts, func(p diskPart) bool { return p.kind == "free pages" || p.kind == "WAL" || p.kind == "rest" })
		if i < 0 {
			i = len(parts)
		}
		if engine != "sqlite" {
			small.payload = -1
		}
		parts = slices.Insert(parts, i, small)
	}
	for _, p := range parts {
		name := p.name
		if p.table != "" && p.kind == "index" {
			name += " (on " + p.table + ")"
		}
		fmt.Fprintf(&w, "| %s | %s | %s | %.3f | %.1f%% |", name, p.kind, sig(float64(p.bytes)/1e6), float64(p.bytes)/files, 100*float64(p.bytes)/float64(u.total))
		if engine == "sqlite" {
			pay := "—"
			if p.payload >= 0 {
				pay = sig(float64(p.payload) / 1e6)
			}
			fmt.Fprintf(&w, " %s |", pay)
		}
		w.WriteString("\n")
	}
	if engine == "sqlite" {
		w.WriteString("\nWhat the big columns hold, `sum(length(CAST(col AS BLOB)))`:\n\n| column | MB | × the files |\n|---|---|---|\n")
	} else {
		w.WriteString("\nWhat the big columns hold, `sum(octet_length(col))`, and as stored, `sum(pg_column_size(col))`:\n\n" +
			"| column | MB | × the files | stored MB | stored × the files |\n|---|---|---|---|---|\n")
	}
	for _, c := range u.columns {
		fmt.Fprintf(&w, "| %s.%s | %s | %.3f |", c.table, c.column, sig(float64(c.bytes)/1e6), float64(c.bytes)/files)
		if c.stored >= 0 {
			fmt.Fprintf(&w, " %s | %.3f |", sig(float64(c.stored)/1e6), float64(c.stored)/files)
		}
		w.WriteString("\n")
	}
	return strings.TrimSuffix(w.String(), "\n")
}

// foldable reports whether p is a table, TOAST table or index of under
// 0.1% of total, which the notes sum on one line.
func foldable(p diskPart, total int64) bool {
	return (p.kind == "table" || p.kind == "TOAST" || p.kind == "index") && p.bytes*1000 < total
}
