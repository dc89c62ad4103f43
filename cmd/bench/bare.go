package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// bareVerb is the hidden verb that runs a bare server answering with FILE.
// It is the read8 ceiling and append16's bound, in its own process like memoryd.
const bareVerb = "bare-server"

// durableVerb is the hidden verb that runs append16's durable reference.
// It is the bare server, but it answers only once it has stored the request
// durably, the cheapest way SQLite allows.
const durableVerb = "durable-server"

// runBareServer runs "bench bare-server FILE", answering every request with
// FILE's bytes until SIGTERM.
func runBareServer(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return &usageError{"usage: bench " + bareVerb + " FILE"}
	}
	body, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	reply := replyWith(body)
	return serve(ctx, stdout, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the body is read to EOF
		reply(w)
	}))
}

// replyWith returns the reply both servers answer with, body as JSON.
func replyWith(body []byte) func(http.ResponseWriter) {
	length := strconv.Itoa(len(body))
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", length)
		w.Write(body)
	}
}

// runDurableServer runs "bench durable-server DB FILE", a bare server that
// stores each request before it answers. It parses, checks and projects
// nothing, the least any durable HTTP append server does here.
func runDurableServer(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 2 {
		return &usageError{"usage: bench " + durableVerb + " DB FILE"}
	}
	body, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	// DB is a fresh raw database with the ceiling's schema and settings.
	db, stmt, err := openRaw(ctx, args[0], "FULL")
	if err != nil {
		return err
	}
	defer removeDB(args[0])
	defer db.Close()
	type write struct {
		body string
		done chan error
	}
	writes := make(chan write, 1024)
	wctx, stopWriter := context.WithCancel(context.Background())
	writerDone := make(chan struct{})
	// A single writer inserts each body as one row, committing the requests
	// waiting together in one transaction of at most 256.
	go func() {
		defer close(writerDone)
		g := newRawEventGen()
		batch := make([]write, 0, 256)
		for {
			select {
			case w := <-writes:
				batch = append(batch[:0], w)
			case <-wctx.Done():
				return
			}
		more:
			for len(batch) < cap(batch) {
				select {
				case w := <-writes:
					batch = append(batch, w)
				default:
					break more
				}
			}
			err := func() error {
				tx, err := db.BeginTx(wctx, nil)
				if err != nil {
					return err
				}
				st := tx.StmtContext(wctx, stmt)
				for _, w := range batch {
					if err := g.execBody(wctx, st, w.body); err != nil {
						tx.Rollback()
						return err
					}
				}
				return tx.Commit()
			}()
			for _, w := range batch {
				w.done <- err
			}
		}
	}()
	defer func() { stopWriter(); <-writerDone }()
	reply := replyWith(body)
	return serve(ctx, stdout, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		done := make(chan error, 1)
		writes <- write{string(req), done}
		if err := <-done; err != nil { // answered only once its transaction commits
			http.Error(w, "not stored", http.StatusServiceUnavailable)
			return
		}
		reply(w)
	}))
}

// serve runs handler on a free loopback port until ctx ends or SIGTERM.
func serve(ctx context.Context, stdout io.Writer, handler http.Handler) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
