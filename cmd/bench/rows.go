package main

import "context"

// row is one row of the report, with its fixtures, measure and format.
// allRows lists them.
type row struct {
	name string
	// help describes the row under -h. Its first line follows the name,
	// and the others are indented under it.
	help string
	// needs are the fixtures set up, once before the first repetition,
	// when the row is selected. The fixtures they need are set up too.
	needs []*fixture
	// measure runs one repetition of the figure and its ceiling, in the
	// order rep.pair says.
	measure func(b *bench, ctx context.Context, rep repetition) (sample, error)
	// notes is the row's paragraph in the report. It says what exactly was
	// measured, naming sizes known only once the fixtures are set up.
	notes func(b *bench) string
	// fig and ceil format a figure and a ceiling. ceil is nil for a row
	// with an absolute target, which has no ceiling and no ratio.
	fig, ceil func(float64) string
	// rate: the figure is a rate, higher is better (for the cost ratio
	// of -compare-at-rest).
	rate bool
	// target is what the ratio must reach, or the figure in a row with no
	// ceiling. It is a minimum with atLeast, else a maximum. A row with
	// target 0 only informs.
	target     float64
	atLeast    bool
	targetText string
	// stretch, if not 0, is a second target the figure must not exceed.
	// It is reported with a pass and in the notes as stretchText.
	stretch     float64
	stretchText string
}

// allRows is the one list of the rows, in the order they run and report.
// -rows and -h take their names from it. Adding a row is adding an entry
// here and its measure and notes functions, in a rows_*.go file named for
// what it measures.
var allRows = []*row{
	{
		name: "append16",
		help: "durable note appends/s over HTTP, 16 clients, vs the durable\n" +
			"reference: the same requests to a net/http server that only\n" +
			"stores each as a raw row with group commit   (target ≥ 0.7×);\n" +
			"also raw SQLite inserting 1000 rows per FULL transaction and\n" +
			"a bare net/http handler, for information",
		needs:   []*fixture{fxAppendWarm, fxBareAppend, fxDurable},
		measure: (*bench).measureAppend16, notes: (*bench).append16Notes,
		rate: true, fig: rate("appends/s"), ceil: rate("req/s"), target: 0.7, atLeast: true, targetText: "≥ 0.7×",
	},
	{
		name: "append1",
		help: "one client's append p50 latency, vs one raw single-insert\n" +
			"FULL transaction                               (target ≤ 3×)",
		needs:   []*fixture{fxAppendWarm},
		measure: (*bench).measureAppend1, notes: (*bench).append1Notes,
		fig: ms, ceil: ms, target: 3, targetText: "≤ 3×",
	},
	{
		name: "search-rare",
		help: "history_search_contents over -history-bytes of history, rare\n" +
			"needle, vs a raw SQLite GLOB scan of the same text (≥ 2× as fast)",
		needs:   []*fixture{fxHistory},
		measure: (*bench).measureSearchRare, notes: (*bench).searchRareNotes,
		fig: ms, ceil: ms, target: 2, atLeast: true, targetText: "≥ 2× (stretch ≤ 20 ms)",
		stretch: 0.020, stretchText: "≤ 20 ms",
	},
	{
		name:    "search-common",
		help:    "the same with a needle whose first byte is common (≥ 1×)",
		needs:   []*fixture{fxHistory},
		measure: (*bench).measureSearchCommon, notes: (*bench).searchCommonNotes,
		fig: ms, ceil: ms, target: 1, atLeast: true, targetText: "≥ 1×",
	},
	{
		name: "search-everywhere",
		help: "the same with a needle found in nearly every tool result\n" +
			"(≥ 2× as fast)",
		needs:   []*fixture{fxHistory},
		measure: (*bench).measureSearchEverywhere, notes: (*bench).searchEverywhereNotes,
		fig: ms, ceil: ms, target: 2, atLeast: true, targetText: "≥ 2× (stretch ≤ 50 ms)",
		stretch: 0.050, stretchText: "≤ 50 ms",
	},
	{
		name: "first-search",
		help: "the first rare-needle search of a memoryd started on the\n" +
			"history, once its chunk filters are loaded in the background,\n" +
			"vs the next search on it                       (≤ 2×)",
		needs:   []*fixture{fxHistory},
		measure: (*bench).measureFirstSearch, notes: (*bench).firstSearchNotes,
		fig: ms, ceil: ms, target: 2, targetText: "≤ 2×",
	},
	{
		name: "search-all-rare",
		help: "memoryd search, the verb, exec to exit, for a needle in one\n" +
			"session among -sessions-bytes of Pi, Claude Code and Codex\n" +
			"session files imported by import-sessions --from all, vs a\n" +
			"brute-force byte scan of the files             (≥ 2× as fast)",
		needs:   []*fixture{fxSessions},
		measure: (*bench).measureSearchAllRow, notes: (*bench).searchAllRareNotes,
		fig: ms, ceil: ms, target: 2, atLeast: true, targetText: "≥ 2×",
	},
	{
		name: "search-all-absent",
		help: "the same for a needle found nowhere, whose first byte is\n" +
			"the files' most frequent letter                (≥ 2×)",
		needs:   []*fixture{fxSessions},
		measure: (*bench).measureSearchAllRow, notes: (*bench).searchAllAbsentNotes,
		fig: ms, ceil: ms, target: 2, atLeast: true, targetText: "≥ 2×",
	},
	{
		name: "search-all-common",
		help: "the same for a needle in nearly every tool output, --limit 20,\n" +
			"vs the scan listing every file that holds it   (≥ 1×)",
		needs:   []*fixture{fxSessions},
		measure: (*bench).measureSearchAllRow, notes: (*bench).searchAllCommonNotes,
		fig: ms, ceil: ms, target: 1, atLeast: true, targetText: "≥ 1×",
	},
	{
		name: "search-all-codex",
		help: "the same with --agent-kind codex for a needle in one Codex,\n" +
			"one Pi and one Claude Code session, vs a scan of the Codex\n" +
			"rollouts alone                                 (≥ 2×)",
		needs:   []*fixture{fxSessions},
		measure: (*bench).measureSearchAllRow, notes: (*bench).searchAllCodexNotes,
		fig: ms, ceil: ms, target: 2, atLeast: true, targetText: "≥ 2×",
	},
	{
		name: "sync-turn",
		help: "one more turn on the history: a history sync of one new\n" +
			"entry with the branch as a delta from the last\n" +
			"revision, timed by the client                  (≤ 5 ms)",
		needs:   []*fixture{fxSyncTurn},
		measure: (*bench).measureSyncTurnDelta, notes: (*bench).syncTurnNotes,
		fig: ms, target: 0.005, targetText: "≤ 5 ms",
	},
	{
		name: "sync-turn-whole",
		help: "the same turn with the whole branch in the request, as\n" +
			"before the delta form (information)",
		needs:   []*fixture{fxSyncTurn},
		measure: (*bench).measureSyncTurnWhole, notes: (*bench).syncTurnWholeNotes,
		fig: ms, targetText: "none (information)",
	},
	{
		name: "turn",
		help: "a model turn with one tool call as the Pi extension makes it\n" +
			"(turn route, then admit), vs one bare round trip of the\n" +
			"same bytes                                     (≤ 1.5×)",
		needs:   []*fixture{fxTurn},
		measure: (*bench).measureTurn, notes: (*bench).turnNotes,
		fig: ms, ceil: ms, target: 1.5, targetText: "≤ 1.5×",
	},
	{
		name: "replay",
		help: "\"memoryd replay\" of an -events event log, vs a raw batched\n" +
			"insert of the same events                      (target ≥ 0.75×)",
		needs:   []*fixture{fxLog},
		measure: (*bench).measureReplay, notes: (*bench).replayNotes,
		rate: true, fig: rate("events/s"), ceil: rate("events/s"), target: 0.75, atLeast: true, targetText: "≥ 0.75×",
	},
	{
		name: "read8",
		help: "notes_read_file req/s, 8 clients, vs a bare net/http handler\n" +
			"returning the same bytes                       (target ≥ 0.5×)",
		needs:   []*fixture{fxRead8},
		measure: (*bench).measureRead8, notes: (*bench).read8Notes,
		rate: true, fig: rate("req/s"), ceil: rate("req/s"), target: 0.5, atLeast: true, targetText: "≥ 0.5×",
	},
	{
		name: "append1-http",
		help: "one client's append p50 latency, vs the p50 of a bare\n" +
			"net/http handler answering the same requests with the same\n" +
			"bytes plus the p50 of one raw single-insert FULL transaction:\n" +
			"what a call costs above a round trip and a commit (≤ 1.5×)",
		needs:   []*fixture{fxAppendWarm, fxBareAppend},
		measure: (*bench).measureAppend1HTTP, notes: (*bench).append1HTTPNotes,
		fig: ms, ceil: ms, target: 1.5, targetText: "≤ 1.5×",
	},
	{
		name: "read1-http",
		help: "one client's notes_read_file p50 latency, vs the p50 of the\n" +
			"bare handler returning the same bytes          (≤ 1.3×)",
		needs:   []*fixture{fxRead8},
		measure: (*bench).measureRead1HTTP, notes: (*bench).read1HTTPNotes,
		fig: ms, ceil: ms, target: 1.3, targetText: "≤ 1.3×",
	},
	{
		name: "mcp-read1",
		help: "one client's notes_read_file p50 over MCP (/v1/mcp), vs the\n" +
			"same call over the HTTP route with host_call_id (≤ 1.3×)",
		needs:   []*fixture{fxClaudeCode},
		measure: (*bench).measureMCPRead1, notes: (*bench).mcpRead1Notes,
		fig: ms, ceil: ms, target: 1.3, targetText: "≤ 1.3×",
	},
	{
		name: "hook-sync",
		help: "memoryd hook claude-code syncing one turn appended to a\n" +
			"10,000-entry transcript, exec to exit, p50; the whole\n" +
			"transcript's first sync reported         (≤ 100 ms)",
		needs:   []*fixture{fxClaudeCode},
		measure: (*bench).measureHookSync, notes: (*bench).hookSyncNotes,
		fig: ms, target: 0.1, targetText: "≤ 100 ms",
	},
	{
		name: "rollover",
		help: "a window rollover as the Pi extension drives it, from the\n" +
			"fenced checkpoint write's answer to the new window's first\n" +
			"model request, on a 10,000-entry history: memoryd's CPU\n" +
			"(information; the target is rollover-190k's)",
		needs:   []*fixture{fxRollover},
		measure: (*bench).measureRollover, notes: (*bench).rolloverNotes,
		fig: ms, targetText: "none (information)",
	},
	{
		name: "rollover-190k",
		help: "the same on a history of -rollover-entries entries\n" +
			"(190,000)                                      (≤ 50 ms)",
		needs:   []*fixture{fxRolloverHuge},
		measure: (*bench).measureRolloverHuge, notes: (*bench).rolloverHugeNotes,
		fig: ms, target: rolloverTarget, targetText: "≤ 50 ms",
	},
	{
		name:    "rss",
		help:    "peak RSS of the server serving the history     (≤ 150 MB)",
		needs:   []*fixture{fxHistory},
		measure: (*bench).measureRSS, notes: (*bench).rssNotes,
		fig: megabytes, target: 150, targetText: "≤ 150 MB",
	},
	{
		name: "inspector",
		help: "the web inspector's slowest page (tasks, timeline, notes,\n" +
			"history, events) on the replayed -events database (≤ 100 ms)",
		needs:   []*fixture{fxReplayed},
		measure: (*bench).measureInspector, notes: (*bench).inspectorNotes,
		fig: ms, target: 0.1, targetText: "≤ 100 ms",
	},
	{
		name: "inspector-at",
		help: "the web inspector's first page as of a past position\n" +
			"(timeline, events, notes, history, tasks) on the replayed\n" +
			"-events database, and the history page on the history\n" +
			"database, each once                            (≤ 1 s)",
		needs:   []*fixture{fxReplayed, fxHistory},
		measure: (*bench).measureInspectorAt, notes: (*bench).inspectorAtNotes,
		fig: ms, target: 1, targetText: "≤ 1 s",
	},
	{
		name: "postgres-append16",
		help: "durable note appends/s over HTTP, 16 clients, through one\n" +
			"memoryd on PostgreSQL, vs raw PostgreSQL inserting one row per\n" +
			"transaction from 16 connections (information); also through\n" +
			"two servers on one database (-postgres, else a private server)",
		needs:   []*fixture{fxPostgres},
		measure: (*bench).measurePostgresAppend16, notes: (*bench).postgresAppend16Notes,
		rate: true, fig: rate("appends/s"), ceil: rate("rows/s"), targetText: "none (information)",
	},
	{
		name: "postgres-read8",
		help: "notes_read_file req/s, 8 clients, through one memoryd on\n" +
			"PostgreSQL, vs 8 clients through each of two servers on one\n" +
			"database (information: two should serve about 2×)",
		needs:   []*fixture{fxPostgresRead8},
		measure: (*bench).measurePostgresRead8, notes: (*bench).postgresRead8Notes,
		rate: true, fig: rate("req/s"), ceil: rate("req/s"), targetText: "none (information; ratio ≈ 0.5)",
	},
	{
		name: "bytes-per-session-byte",
		help: "the SQLite database memoryd import-sessions makes of\n" +
			"-disk-bytes of generated Pi session files, bytes per byte of\n" +
			"the files, with each table's and index's share (≤ 1.0)",
		needs:   []*fixture{fxDisk},
		measure: (*bench).measureDiskSQLite, notes: (*bench).diskSQLiteNotes,
		fig: bytesPerByte, target: 1, targetText: "≤ 1.0 (stretch ≤ 0.5)",
		stretch: 0.5, stretchText: "≤ 0.5",
	},
	{
		name: "postgres-bytes-per-session-byte",
		help: "the same on PostgreSQL (-postgres, else a private server)\n" +
			"                                               (≤ 1.0)",
		needs:   []*fixture{fxDiskPostgres},
		measure: (*bench).measureDiskPostgres, notes: (*bench).diskPostgresNotes,
		fig: bytesPerByte, target: 1, targetText: "≤ 1.0 (stretch ≤ 0.5)",
		stretch: 0.5, stretchText: "≤ 0.5",
	},
	{
		name: "redact-append1",
		help: "one client's note append p50 with redaction (the default)\n" +
			"vs --redact off (information)",
		needs:   []*fixture{fxRedact},
		measure: (*bench).measureRedactAppend1, notes: (*bench).redactAppend1Notes,
		fig: ms, ceil: ms, targetText: "none (information)",
	},
	{
		name:    "redact-write",
		help:    "the same for a 32 KiB note rewritten whole (information)",
		needs:   []*fixture{fxRedact},
		measure: (*bench).measureRedactWrite, notes: (*bench).redactWriteNotes,
		fig: ms, ceil: ms, targetText: "none (information)",
	},
	{
		name: "redact-sync",
		help: "the same for a history sync of 16 entries of a generated\n" +
			"Pi session (information)",
		needs:   []*fixture{fxRedact},
		measure: (*bench).measureRedactSync, notes: (*bench).redactSyncNotes,
		fig: ms, ceil: ms, targetText: "none (information)",
	},
	{
		name: "redact-import",
		help: "memoryd import-session of a generated Pi session (1/64 of\n" +
			"-history-bytes, 1 to 16 MiB), exec to exit, with\n" +
			"MEMORYD_REDACT=default vs off (information)",
		needs:   []*fixture{fxRedact},
		measure: (*bench).measureRedactImport, notes: (*bench).redactImportNotes,
		fig: ms, ceil: ms, targetText: "none (information)",
	},
	{
		name: "redact-read1",
		help: "the control: a note read, which redaction does not touch,\n" +
			"on the same two memoryds (information)",
		needs:   []*fixture{fxRedact},
		measure: (*bench).measureRedactRead1, notes: (*bench).redactRead1Notes,
		fig: ms, ceil: ms, targetText: "none (information)",
	},
	{
		name: "startup",
		help: "exec to the first 200 from /healthz on the replayed\n" +
			"-events database                               (≤ 300 ms)",
		needs:   []*fixture{fxReplayed},
		measure: (*bench).measureStartup, notes: (*bench).startupNotes,
		fig: ms, target: 0.3, targetText: "≤ 300 ms",
	},
}

// rowNames are the names of allRows, in order.
func rowNames() []string {
	names := make([]string, len(allRows))
	for i, r := range allRows {
		names[i] = r.name
	}
	return names
}

// repetition is one repetition of one row.
type repetition struct {
	row      string // the row's name, for progress lines
	n        int    // 1 to -reps
	figFirst bool   // the figure runs before its ceiling; it alternates
}

// pair runs the figure's half and the ceiling's half in the repetition's
// order. An error stops it.
func (rep repetition) pair(fig, ceil func() error) error {
	first, second := fig, ceil
	if !rep.figFirst {
		first, second = ceil, fig
	}
	if err := first(); err != nil {
		return err
	}
	return second()
}

// sample is what one repetition of a row measured.
type sample struct {
	fig         float64
	ceil, ratio float64 // for a row with a ceiling
	// series are other values for the notes, in their order there. The
	// suffix of a name picks its format in writeReport.
	series  []namedValue
	printed string // what a subprocess printed for the notes, if anything
}

type namedValue struct {
	name string
	v    float64
}

func (s *sample) add(name string, v float64) { s.series = append(s.series, namedValue{name, v}) }
