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

// bareVerb is the hidden verb that runs the read8 ceiling and append16's
// bound: a bare net/http server, in its own process like memoryd,
// answering every request with the bytes of FILE.
const bareVerb = "bare-server"

// runBareServer is "bench bare-server FILE": it listens on a free loopback
// port, prints "listening on http://HOST:PORT" and answers every request
// (body read to EOF) with FILE's bytes as application/json until SIGTERM.
func runBareServer(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return &usageError{"usage: bench " + bareVerb + " FILE"}
	}
	body, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	length := strconv.Itoa(len(body))
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", length)
			w.Write(body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
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
