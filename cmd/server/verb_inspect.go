package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

var inspectVerb = verb{
	name:     "inspect",
	synopsis: "inspect [FILE.jsonl | --db F] [--addr 127.0.0.1:PORT]",
	summary:  "open a log or a database in the web inspector, read-only, on a loopback port",
	about: `
Serves the web inspector (the pages memoryd serve has at /ui) for an exported log FILE.jsonl,
imported into a scratch database (in the data folder's scratch/, 0700) deleted when it stops,
or for the database --db (only read). Nothing else is served: no /v1 route, no write. It listens
on a loopback address (--addr, a free port by default), prints "listening on http://HOST:PORT",
then a one-time login link: opening it logs one browser in (a session cookie) and spends it. The
link holds no token; the login form is off. It stops on SIGINT or SIGTERM.`,
	args: []arg{
		{name: "FILE.jsonl", about: "an exported log (memoryd export), e.g. from a bug report; - for stdin", optional: true},
	},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		o := &inspectOptions{}
		fs.StringVar(&o.db, "db", "", "database `F` to show instead of a log, only read (env MEMORYD_DB; default, without FILE, the one serve uses)")
		fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "loopback address `HOST:PORT` to listen on; :0 picks a free port")
		return o.run
	},
}

type inspectOptions struct {
	db, addr string
}

func (o *inspectOptions) run(ctx context.Context, in *invocation) error {
	if o.db != "" && len(in.args) > 0 {
		return &usageError{"inspect takes FILE.jsonl or --db F, not both"}
	}
	if len(in.args) == 0 {
		var err error
		if o.db, err = databaseToRead(in.getenv, o.db, in.stderr); err != nil {
			return err
		}
	}
	addr, err := listenAddress(o.addr)
	if err != nil {
		return err
	}
	// Listen first. The listener knows whether a host name resolves to
	// loopback, and a refusal then opens no database.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer ln.Close()
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
		return &usageError{fmt.Sprintf("inspect listens on loopback only; --addr %q is not a loopback address", o.addr)}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// leave is set when a page outlived the shutdown and may still read
	// the store, which is then neither closed nor removed.
	leave := false
	var svc *memory.Service
	if o.db != "" {
		if svc, err = openExistingService(ctx, in.getenv, o.db, in.stderr); err != nil {
			return err
		}
		defer func() {
			if !leave {
				svc.Close()
			}
		}()
	} else {
		scratch, cleanup, err := forensics.Scratch(ctx)
		if err != nil {
			return err
		}
		defer func() {
			if !leave {
				cleanup()
			}
		}()
		lr, closeLog, err := openLog(in.args[0], in.stdin)
		if err != nil {
			return err
		}
		_, err = forensics.Import(ctx, scratch, lr.Next)
		closeLog()
		if err != nil {
			return lr.AtLine(err)
		}
		svc = scratch
	}

	log := slog.New(slog.NewTextHandler(in.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := api.Config{Service: svc, Logger: log, CheckHost: true, InspectorOnly: true}
	ui := api.NewInspector(cfg) // no token, as the one-time link is the login
	defer func() {
		if !leave {
			ui.Close()
		}
	}()
	cfg.Inspector = ui
	srv := &http.Server{Handler: api.NewServer(cfg), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(in.stdout, "listening on %s\n", url)
	fmt.Fprintf(in.stdout, "open once to log in: %s%s\n", url, ui.LoginLink())

	d := newDrain()
	d.install(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	if err := d.stop(srv, 5*time.Second, log); err != nil {
		leave = true
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
