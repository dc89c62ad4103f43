package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/memory"
)

// serveUsage is the serve verb's line of the usage text.
const serveUsage = "server [serve] [flags]"

// runServe is the serve verb: it listens first (so a busy port fails at
// once), serves until ctx ends or SIGINT/SIGTERM, then drains in-flight
// requests for up to --shutdown-grace (10 s), cuts off what is left, and
// closes the database once no handler runs.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	addr := fs.String("addr", envOr(getenv, "MEMORYD_ADDR", "127.0.0.1:7411"), "listen address (env MEMORYD_ADDR); :0 picks a free port")
	dbFlag := fs.String("db", "", "database file (env MEMORYD_DB; default $XDG_DATA_HOME/memoryd/memory.db)")
	maxBody := fs.Int64("max-body", 8<<20, "largest request body in bytes")
	syncMode := fs.String("sync", "full", "SQLite synchronous mode: full (every acknowledged write survives power loss) or normal (faster; see docs/durability.md)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	audit := fs.Bool("audit-calls", true, "record every tool call (reads included) as an audit event, in batches off the read path")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the whole run to this file, for performance work")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "on SIGINT/SIGTERM, how long requests in flight may take to finish before their connections are closed")
	idleExit := fs.Duration("idle-exit", 0, "stop (as on SIGTERM) after this long without a request, e.g. 30m; 0 never (the Pi extension's shared service uses it)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("serve takes no arguments, got %q", fs.Args())}
	}
	if *grace < 0 {
		return &usageError{fmt.Sprintf("--shutdown-grace must not be negative, got %s", *grace)}
	}
	if *idleExit < 0 {
		return &usageError{fmt.Sprintf("--idle-exit must not be negative, got %s", *idleExit)}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return &usageError{fmt.Sprintf("--log-level: %v", err)}
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	dbPath := *dbFlag
	if dbPath == "" {
		var err error
		if dbPath, err = defaultDBPath(getenv); err != nil {
			return err
		}
	}
	// The token comes first: a token file memoryd must refuse leaves nothing
	// behind (no database, no listener).
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
		return fmt.Errorf("create the database folder: %w", err)
	}
	token, err := loadToken(getenv, dbPath)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, idleStop := context.WithCancel(ctx)
	defer idleStop()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *addr, err)
	}
	defer ln.Close()
	svc, err := memory.Open(ctx, dbPath, memory.OpenOptions{
		Synchronous: *syncMode,
		Logf:        func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) },
		Warnf:       func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
		AuditCalls:  *audit,
		Logger:      log,
	})
	if err != nil {
		return err
	}
	leaveStoreOpen := false // set when a handler outlived the shutdown and may still use the store
	defer func() {
		if leaveStoreOpen {
			svc.StopAudit()
		} else {
			svc.Close()
		}
	}()
	tuneGC(getenv) // after the open, whose rebuild (if one is due) is a replay
	tcp := ln.Addr().(*net.TCPAddr)
	loopback := tcp.IP.IsLoopback()
	if !loopback {
		log.Warn("listening on a non-loopback address: the Host check is off, anyone who can reach it and has the token can use memoryd", "addr", tcp.String())
	}
	srv := &http.Server{
		Handler: api.NewServer(api.Config{
			Service: svc, Logger: log, Token: token, MaxBody: *maxBody, CheckHost: loopback,
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	drain := newDrain()
	drain.install(srv)
	if *idleExit > 0 {
		idle := newIdleWatch(time.Now)
		next := srv.Handler
		srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			idle.begin()
			defer idle.end()
			next.ServeHTTP(w, r)
		})
		go idle.run(ctx, *idleExit, idleTick(*idleExit), log, idleStop)
	}
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	fmt.Fprintf(stdout, "listening on http://%s\n", tcp.String())
	log.Info("serving", "addr", tcp.String(), "db", dbPath, "sync", *syncMode, "pid", os.Getpid())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	if err := drain.stop(srv, *grace, log); err != nil {
		leaveStoreOpen = true
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return svc.Close() // flushes the read audit of the calls answered, then closes the store
}

// Garbage collection while serving, unless GOGC or GOMEMLIMIT say
// otherwise. A request's garbage dies young and the live heap is small,
// so collecting less often costs little memory and saves most of the
// collector's CPU; the soft limit keeps a burst of garbage (a search that
// reads the whole history) from letting the heap grow with that factor
// (the figures: docs/performance.md). Replays and imports keep Go's
// default: their live heap is a whole segment.
const (
	serveGCPercent   = 400
	serveMemoryLimit = 96 << 20
)

func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
