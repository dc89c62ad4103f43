// Command bench measures memoryd against the ceilings of the machine it
// runs on and prints the result as a Markdown document.
//
// Every figure is measured twice in the same repetition, once through
// memoryd and once as its ceiling. memoryd runs as a subprocess over HTTP,
// with synchronous=FULL and the read audit on. The ceiling is the same job
// done by raw SQLite or a bare net/http handler on the same disk and cores.
// The report gives each figure as a ratio against its ceiling, because these
// machines are noisy. The rss and startup rows have absolute targets.
// Progress goes to stderr and the document to stdout.
//
//	go run ./cmd/bench > docs/benchmarks.md
//	go run ./cmd/bench -history-bytes 64MiB -events 100000 -dur 1s   # quick run
//	go run ./cmd/bench -compare-at-rest -rows append1-http,search-rare   # encrypted at rest ÷ plain
//
// Run "bench -h" for the flags and the rows.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		if _, ok := err.(*usageError); ok {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a command line bench cannot run. main exits 2 on it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// run is the whole program, writing the report to stdout and progress to
// stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == bareVerb {
		return runBareServer(ctx, args[1:], stdout)
	}
	if len(args) > 0 && args[0] == durableVerb {
		return runDurableServer(ctx, args[1:], stdout)
	}
	if len(args) > 0 && args[0] == scanVerb {
		return runScan(args[1:], stdout)
	}
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	if cfg == nil { // -h
		return nil
	}
	return runBench(ctx, cfg, stdout, stderr)
}
