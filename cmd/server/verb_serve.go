package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/inspector"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/version"
)

var serveVerb = verb{
	name:     "serve",
	synopsis: "[serve] [--addr HOST:PORT] [--db F] [--sync full|normal] [flags]",
	summary:  "run the HTTP service (the default verb)",
	about: `
Serves the HTTP API of docs/API.md on --addr (loopback, 127.0.0.1:7411, by default) for the
database --db, created with its token on first start. Prints "listening on http://HOST:PORT" on
stdout once it listens, logs JSON lines on stderr, and runs until SIGINT (Ctrl+C) or SIGTERM: it
then finishes the requests in flight (--shutdown-grace), closes the database and exits 0.
A port alone (":7411", ":0" for a free port) listens on 127.0.0.1; to listen beyond this machine
name the host ("0.0.0.0:7411", "[::]:7411", a LAN address) and give --tls-cert and --tls-key, which
serve HTTPS ("listening on https://..."), or --insecure-plaintext for plain HTTP; the Host check is
then off. Every /v1 request needs "Authorization: Bearer TOKEN": env MEMORYD_TOKEN, else the file
"token" beside the database. SECURITY.md says what each defends. The other verbs: memoryd help.`,
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		o := &serveOptions{}
		fs.StringVar(&o.addr, "addr", envOr(getenv, "MEMORYD_ADDR", "127.0.0.1:7411"), "listen address `HOST:PORT` (env MEMORYD_ADDR); a port alone (:7411, :0 for a free one) is on 127.0.0.1")
		fs.StringVar(&o.db, "db", "", "database `F`: an SQLite file, or a postgres:// URL (env MEMORYD_DB; default $XDG_DATA_HOME/memoryd/memory.db, else ~/.local/share/memoryd/memory.db)")
		fs.Int64Var(&o.maxBody, "max-body", 8<<20, "largest request body in `bytes`")
		fs.Int64Var(&o.inspectorScratch, "inspector-scratch", 2<<30, "disk the web inspector's past states (?at=P, copies of the log up to P in the data folder's scratch/) may take, in `bytes`; a page whose copy would pass it says so")
		fs.StringVar(&o.sync, "sync", "full", "SQLite synchronous mode: full (every acknowledged write survives power loss) or normal (faster; see docs/durability.md)")
		fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
		fs.BoolVar(&o.audit, "audit-calls", true, "record every tool call (reads included) as an audit event, in batches off the read path")
		fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile (go tool pprof) of the whole run to `FILE`, for performance work")
		fs.DurationVar(&o.grace, "shutdown-grace", 10*time.Second, "on SIGINT/SIGTERM, how long requests in flight may take to finish before their connections are closed")
		fs.DurationVar(&o.idleExit, "idle-exit", 0, "stop (as on SIGTERM) after this long without an authenticated request (one with the token, or an inspector page in a session), e.g. 30m; 0 never (the Pi extension's shared service uses it)")
		fs.StringVar(&o.tlsCert, "tls-cert", getenv("MEMORYD_TLS_CERT"), "serve HTTPS with the certificate in `FILE` (PEM: the server's certificate, then any intermediates; env MEMORYD_TLS_CERT); needs --tls-key")
		fs.StringVar(&o.tlsKey, "tls-key", getenv("MEMORYD_TLS_KEY"), "the private key of --tls-cert, in `FILE` (PEM; env MEMORYD_TLS_KEY)")
		fs.BoolVar(&o.insecurePlaintext, "insecure-plaintext", false, "serve plain HTTP on a non-loopback --addr: the token and the notes cross the network unencrypted (only where the network encrypts, e.g. a VPN)")
		return o.run
	},
}

// serveOptions are the serve verb's flags.
type serveOptions struct {
	addr, db, sync, logLevel, cpuProfile string
	tlsCert, tlsKey                      string
	maxBody, inspectorScratch            int64
	audit, insecurePlaintext             bool
	grace, idleExit                      time.Duration
}

// run is the serve verb: it listens first (so a busy port fails at once),
// serves until ctx ends or SIGINT/SIGTERM, then drains in-flight requests
// for up to --shutdown-grace (10 s), cuts off what is left, and closes the
// database once no handler runs.
func (o *serveOptions) run(ctx context.Context, in *invocation) error {
	getenv, stdout, stderr := in.getenv, in.stdout, in.stderr
	addr, err := listenAddress(o.addr)
	if err != nil {
		return err
	}
	if !strings.EqualFold(o.sync, "full") && !strings.EqualFold(o.sync, "normal") {
		return &usageError{fmt.Sprintf("--sync must be full or normal, got %q", o.sync)}
	}
	if o.maxBody < 1 {
		return &usageError{fmt.Sprintf("--max-body must be at least 1 byte, got %d", o.maxBody)}
	}
	if o.inspectorScratch < 1 {
		return &usageError{fmt.Sprintf("--inspector-scratch must be at least 1 byte, got %d", o.inspectorScratch)}
	}
	if o.grace < 0 {
		return &usageError{fmt.Sprintf("--shutdown-grace must not be negative, got %s", o.grace)}
	}
	if o.idleExit < 0 {
		return &usageError{fmt.Sprintf("--idle-exit must not be negative, got %s", o.idleExit)}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return &usageError{fmt.Sprintf("--log-level: %v", err)}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return &usageError{"--tls-cert and --tls-key (or MEMORYD_TLS_CERT and MEMORYD_TLS_KEY) go together: give both, or neither for plain HTTP"}
	}
	if o.tlsCert != "" && o.insecurePlaintext {
		return &usageError{"--insecure-plaintext contradicts --tls-cert (or MEMORYD_TLS_CERT): give one of them"}
	}
	var tlsConfig *tls.Config
	if o.tlsCert != "" {
		if tlsConfig, err = loadTLS(o.tlsCert, o.tlsKey); err != nil {
			return err
		}
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	dbPath := o.db
	if dbPath == "" {
		if dbPath, err = defaultDBPath(getenv); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, idleStop := context.WithCancel(ctx)
	defer idleStop()

	// The listener comes before the token and the database: whether the
	// address is loopback is the listener's (a host name resolves), and a
	// refusal leaves nothing behind (the listener closes on return).
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return addrInUse(ctx, addr, err)
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	defer ln.Close()
	tcp := ln.Addr().(*net.TCPAddr)
	loopback := tcp.IP.IsLoopback()
	if !loopback && tlsConfig == nil && !o.insecurePlaintext {
		return &usageError{fmt.Sprintf("--addr %q (or MEMORYD_ADDR) listens beyond this machine (%s): give --tls-cert and --tls-key "+
			"to serve HTTPS, or --insecure-plaintext to send the token and the notes unencrypted", o.addr, tcp)}
	}
	// A token file memoryd must refuse leaves nothing behind (no database).
	if !memory.IsPostgres(dbPath) {
		if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
			return fmt.Errorf("create the database folder: %w", err)
		}
	}
	token, err := loadToken(getenv, dbPath)
	if err != nil {
		return err
	}
	svc, err := memory.Open(ctx, dbPath, memory.OpenOptions{
		Synchronous: o.sync,
		Logf:        func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) },
		Warnf:       func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
		AuditCalls:  o.audit,
		Logger:      log,
		// The first search after the start costs what later ones do.
		PreloadChunkFilters: true,
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
	switch {
	case !loopback && tlsConfig != nil:
		log.Warn("listening on a non-loopback address (HTTPS): the Host check is off, anyone who can reach it and has the token can use memoryd", "addr", tcp.String())
	case !loopback:
		log.Warn("listening on a non-loopback address in plain HTTP (--insecure-plaintext): the token and every request and answer cross the network unencrypted, "+
			"and the Host check is off: anyone who can reach it, or read its traffic, and has the token can use memoryd", "addr", tcp.String())
	}
	var idle *idleWatch // --idle-exit
	if o.idleExit > 0 {
		idle = newIdleWatch(time.Now)
	}
	handler, ui := serveHandler(api.Config{Service: svc, Logger: log, Token: token, MaxBody: o.maxBody, CheckHost: loopback,
		InspectorScratch: o.inspectorScratch, Shutdown: idleStop}, idle)
	defer ui.Close() // its copies of past states; before the store closes
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
		srv.TLSConfig = tlsConfig
		// HTTP/1.1 only, as in plain HTTP: the drain counts a connection in
		// a request as one request, which HTTP/2's streams would break.
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
	}
	drain := newDrain()
	drain.install(srv)
	if idle != nil {
		go idle.run(ctx, o.idleExit, idleTick(o.idleExit), log, idleStop)
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, tcp.String())
	v := version.Get()
	log.Info("serving", "addr", tcp.String(), "scheme", scheme, "db", memory.DatabaseName(dbPath), "sync", o.sync, "pid", os.Getpid(),
		"version", v.Version, "commit", v.Commit)

	errc := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			errc <- srv.ServeTLS(ln, "", "") // the pair is in srv.TLSConfig
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	if err := drain.stop(srv, o.grace, log); err != nil {
		leaveStoreOpen = true
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	ui.Close()
	// Closing flushes the read audit of the calls answered, then the store.
	if err := svc.Close(); err != nil {
		return err
	}
	log.Info("stopped: the database is closed", "db", memory.DatabaseName(dbPath))
	return nil
}

// serveHandler is serve's HTTP handler and its web inspector at /ui (the
// caller closes it once the server stopped). idle, when not nil, is told
// of the requests that passed authentication alone (--idle-exit).
func serveHandler(cfg api.Config, idle *idleWatch) (http.Handler, *inspector.Inspector) {
	if idle != nil {
		cfg.Activity = idle.request
	}
	ui := api.NewInspector(cfg)
	cfg.Inspector = ui
	return api.NewServer(cfg), ui
}

// loadTLS reads the certificate and key files of --tls-cert and --tls-key
// into a server configuration (TLS 1.2 at least). Its errors name the file
// and the flag at fault.
func loadTLS(certFile, keyFile string) (*tls.Config, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: read the TLS certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-key: read the TLS private key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s and --tls-key %s are not a PEM certificate and its private key: %w", certFile, keyFile, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}, nil
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

// listenAddress is the address serve listens on: addr (HOST:PORT), with
// an empty host (":7411", ":0") made 127.0.0.1, so that only a host named
// explicitly (0.0.0.0, [::], a LAN address) exposes memoryd beyond this
// machine. An address without a numeric port is a usage error.
func listenAddress(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", &usageError{fmt.Sprintf("--addr %q (or MEMORYD_ADDR) is not HOST:PORT or :PORT (e.g. 127.0.0.1:7411, :0)", addr)}
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", &usageError{fmt.Sprintf("--addr %q (or MEMORYD_ADDR): the port %q is not a number from 0 to 65535", addr, port)}
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}
