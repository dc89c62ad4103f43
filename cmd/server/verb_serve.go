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
	"github.com/memoryd/memoryd/internal/redact"
	"github.com/memoryd/memoryd/internal/retention"
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
		fs.StringVar(&o.redact, "redact", envOr(getenv, "MEMORYD_REDACT", redactDefault), "take secrets out of history entries and notes before they are stored: `MODE` default (key blocks and known token formats), all (also assignments and high-entropy strings) or off (env MEMORYD_REDACT; docs/redaction.md)")
		fs.StringVar(&o.redactRules, "redact-rules", getenv("MEMORYD_REDACT_RULES"), "more redaction rules, in the TOML `FILE` docs/redaction.md describes (env MEMORYD_REDACT_RULES)")
		fs.StringVar(&o.retain, "retain", getenv("MEMORYD_RETAIN"), "erase the tasks with no activity for this `PERIOD` (a whole number and h, d or w: 12h, 90d, 2w), at the start and every hour, each logged; off or empty: none (the tasks' own policies, memoryd retain TASK, still apply) (env MEMORYD_RETAIN; docs/forgetting.md)")
		fs.BoolVar(&o.encrypt, "encrypt", false, "make a new database encrypted at rest, with the key in MEMORYD_ENCRYPTION_KEY, else in the file encryption.key beside the database, made if missing (env MEMORYD_ENCRYPT=1; docs/encryption.md); a database encrypted already is opened with its key without it")
		fs.BoolVar(&o.insecurePlaintext, "insecure-plaintext", false, "serve plain HTTP on a non-loopback --addr: the token and the notes cross the network unencrypted (only where the network encrypts, e.g. a VPN)")
		return o.run
	},
}

// serveOptions are the serve verb's flags.
type serveOptions struct {
	addr, db, sync, logLevel, cpuProfile string
	tlsCert, tlsKey                      string
	redact, redactRules                  string
	retain                               string
	maxBody, inspectorScratch            int64
	audit, insecurePlaintext, encrypt    bool
	grace, idleExit                      time.Duration
}

// run serves until ctx ends or a signal comes, then drains the requests in
// flight and closes the database once no handler runs.
func (o *serveOptions) run(ctx context.Context, in *invocation) error {
	plan, err := o.validate(in.getenv)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(in.stderr, &slog.HandlerOptions{Level: plan.level}))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, idleStop := context.WithCancel(ctx)
	defer idleStop()

	// The listener comes before the token and the database, so a busy port
	// fails at once. The listener knows whether a host name resolves to
	// loopback, and a refusal leaves nothing behind.
	ln, err := o.listen(ctx, plan)
	if err != nil {
		return err
	}
	defer ln.Close()
	tcp := ln.Addr().(*net.TCPAddr)
	loopback := tcp.IP.IsLoopback()
	svc, token, err := o.open(ctx, plan, in.getenv, log)
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
	tuneGC(in.getenv) // after the open, whose rebuild if one is due is a replay
	switch {
	case !loopback && plan.tls != nil:
		log.Warn("listening on a non-loopback address (HTTPS): the Host check is off, anyone who can reach it and has the token can use memoryd", "addr", tcp.String())
	case !loopback:
		log.Warn("listening on a non-loopback address in plain HTTP (--insecure-plaintext): the token and every request and answer cross the network unencrypted, "+
			"and the Host check is off: anyone who can reach it, or read its traffic, and has the token can use memoryd", "addr", tcp.String())
	}
	var idle *idleWatch // --idle-exit
	if o.idleExit > 0 {
		idle = newIdleWatch(time.Now)
	}
	handler, ui := serveHandler(api.Config{Service: svc, Logger: log, Token: token, MaxBody: o.maxBody, CheckHost: loopback, Retain: plan.retain,
		InspectorScratch: o.inspectorScratch, Shutdown: idleStop}, idle)
	defer ui.Close() // its copies of past states; before the store closes
	retain := startRetainer(ctx, svc, plan.retain, testHooksOf(ctx), log)
	defer retain.stop() // before the store closes
	srv := newHTTPServer(handler, plan.tls, log)
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
	scheme := "http"
	if plan.tls != nil {
		scheme = "https"
	}
	fmt.Fprintf(in.stdout, "listening on %s://%s\n", scheme, tcp.String())
	v := version.Get()
	log.Info("serving", "addr", tcp.String(), "scheme", scheme, "db", memory.ParseLocation(plan.dbPath).String(), "sync", o.sync, "pid", os.Getpid(),
		"version", v.Version, "commit", v.Commit)

	if leaveStoreOpen, err = o.serve(ctx, srv, ln, drain, log); err != nil {
		return err
	}
	retain.stop()
	ui.Close()
	// Closing flushes the read audit of the calls answered, then the store.
	if err := svc.Close(); err != nil {
		return err
	}
	log.Info("stopped: the database is closed", "db", memory.ParseLocation(plan.dbPath).String())
	return nil
}

// servePlan is what the serve verb's flags and environment come to once
// checked.
type servePlan struct {
	addr   string // resolved by listenAddress
	level  slog.Level
	tls    *tls.Config // nil for plain HTTP
	dbPath string
	retain retention.Policy
}

// validate checks the flags and loads what they name before anything
// listens or opens.
func (o *serveOptions) validate(getenv func(string) string) (servePlan, error) {
	var p servePlan
	var err error
	if p.addr, err = listenAddress(o.addr); err != nil {
		return p, err
	}
	switch {
	case !strings.EqualFold(o.sync, "full") && !strings.EqualFold(o.sync, "normal"):
		return p, &usageError{fmt.Sprintf("--sync must be full or normal, got %q", o.sync)}
	case o.redact != redactDefault && o.redact != redactAll && o.redact != redactOff:
		return p, &usageError{fmt.Sprintf("--redact (or MEMORYD_REDACT) must be default, all or off, not %q", o.redact)}
	case o.maxBody < 1:
		return p, &usageError{fmt.Sprintf("--max-body must be at least 1 byte, got %d", o.maxBody)}
	case o.inspectorScratch < 1:
		return p, &usageError{fmt.Sprintf("--inspector-scratch must be at least 1 byte, got %d", o.inspectorScratch)}
	case o.grace < 0:
		return p, &usageError{fmt.Sprintf("--shutdown-grace must not be negative, got %s", o.grace)}
	case o.idleExit < 0:
		return p, &usageError{fmt.Sprintf("--idle-exit must not be negative, got %s", o.idleExit)}
	}
	if p.retain, err = retention.ParseGlobal(o.retain); err != nil {
		return p, &usageError{fmt.Sprintf("--retain (or MEMORYD_RETAIN): %v, or off", err)}
	}
	if err := p.level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return p, &usageError{fmt.Sprintf("--log-level: %v", err)}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return p, &usageError{"--tls-cert and --tls-key (or MEMORYD_TLS_CERT and MEMORYD_TLS_KEY) go together: give both, or neither for plain HTTP"}
	}
	if o.tlsCert != "" && o.insecurePlaintext {
		return p, &usageError{"--insecure-plaintext contradicts --tls-cert (or MEMORYD_TLS_CERT): give one of them"}
	}
	if o.tlsCert != "" {
		if p.tls, err = loadTLS(o.tlsCert, o.tlsKey); err != nil {
			return p, err
		}
	}
	if p.dbPath = o.db; p.dbPath == "" {
		if p.dbPath, err = defaultDBPath(getenv); err != nil {
			return p, err
		}
	}
	return p, nil
}

// listen listens on the plan's address, and refuses a non-loopback one
// that would serve plain HTTP without --insecure-plaintext.
func (o *serveOptions) listen(ctx context.Context, p servePlan) (net.Listener, error) {
	ln, err := net.Listen("tcp", p.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, addrInUse(ctx, p.addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", p.addr, err)
	}
	tcp := ln.Addr().(*net.TCPAddr)
	if !tcp.IP.IsLoopback() && p.tls == nil && !o.insecurePlaintext {
		ln.Close()
		return nil, &usageError{fmt.Sprintf("--addr %q (or MEMORYD_ADDR) listens beyond this machine (%s): give --tls-cert and --tls-key "+
			"to serve HTTPS, or --insecure-plaintext to send the token and the notes unencrypted", o.addr, tcp)}
	}
	return ln, nil
}

// open loads the token and opens the database. A token file memoryd must
// refuse leaves no database behind.
func (o *serveOptions) open(ctx context.Context, p servePlan, getenv func(string) string, log *slog.Logger) (*memory.Service, string, error) {
	if file, ok := memory.ParseLocation(p.dbPath).File(); ok {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return nil, "", fmt.Errorf("create the database folder: %w", err)
		}
	}
	token, err := loadToken(getenv, p.dbPath)
	if err != nil {
		return nil, "", err
	}
	red, err := o.redactor(getenv, p.dbPath)
	if err != nil {
		return nil, "", err
	}
	encrypt, err := encryptAsked(getenv)
	if err != nil {
		return nil, "", err
	}
	encrypt = encrypt || o.encrypt
	sealer, made, err := atRestKey(getenv, p.dbPath, encrypt)
	if err != nil {
		return nil, "", err
	}
	svc, err := memory.Open(ctx, p.dbPath, memory.OpenOptions{
		Redactor:    red,
		Sealer:      sealer,
		Encrypt:     encrypt,
		Synchronous: o.sync,
		Logf:        func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) },
		Warnf:       func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
		AuditCalls:  o.audit,
		Logger:      log,
		// The first search after the start costs what later ones do.
		PreloadChunkFilters: true,
		Now:                 testHooksOf(ctx).now, // a test's clock; nil: time.Now
	})
	if err != nil {
		return nil, "", atRestError(err, getenv, p.dbPath, made)
	}
	return svc, token, nil
}

// newHTTPServer returns the serve verb's http.Server, with bounded headers
// and timeouts, and HTTPS when tlsConfig is set.
func newHTTPServer(handler http.Handler, tlsConfig *tls.Config, log *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if tlsConfig != nil {
		srv.TLSConfig = tlsConfig
		// HTTP/1.1 only, as in plain HTTP. The drain counts a connection in
		// a request as one request, which HTTP/2's streams would break.
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
	}
	return srv
}

// serve serves on ln until ctx ends, then drains the requests in flight
// for up to --shutdown-grace. leaveStoreOpen reports a handler that
// outlived the drain and may still use the store.
func (o *serveOptions) serve(ctx context.Context, srv *http.Server, ln net.Listener, drain *drain, log *slog.Logger) (leaveStoreOpen bool, err error) {
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "") // the pair is in srv.TLSConfig
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return false, fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	if err := drain.stop(srv, o.grace, log); err != nil {
		return true, err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return false, fmt.Errorf("serve: %w", err)
	}
	return false, nil
}

// serveHandler returns the API's handler with the inspector mounted,
// noting each authenticated request in idle.
func serveHandler(cfg api.Config, idle *idleWatch) (http.Handler, *inspector.Inspector) {
	if idle != nil { // nil without --idle-exit
		cfg.Activity = idle.request
	}
	ui := api.NewInspector(cfg)
	cfg.Inspector = ui
	return api.NewServer(cfg), ui
}

// loadTLS reads the files of --tls-cert and --tls-key into a server
// configuration. Its errors name the file and the flag at fault.
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

// serveGCPercent and serveMemoryLimit tune garbage collection while
// serving. A request's garbage dies young and the live heap is small, so
// collecting less often saves CPU, and the soft limit bounds a burst.
// docs/performance.md has the figures.
const (
	serveGCPercent   = 400
	serveMemoryLimit = 96 << 20
)

// tuneGC sets serve's garbage collection unless GOGC or GOMEMLIMIT say
// otherwise. Replays and imports keep Go's default, as their live heap is
// a whole segment.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}

// listenAddress returns the address serve listens on for addr. An address
// without a numeric port is a usage error.
func listenAddress(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", &usageError{fmt.Sprintf("--addr %q (or MEMORYD_ADDR) is not HOST:PORT or :PORT (e.g. 127.0.0.1:7411, :0)", addr)}
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", &usageError{fmt.Sprintf("--addr %q (or MEMORYD_ADDR): the port %q is not a number from 0 to 65535", addr, port)}
	}
	if host == "" {
		// Only a host named explicitly exposes memoryd beyond this machine.
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// envOr returns the environment variable key, or def when it is empty.
func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// redactor returns the redaction of --redact and --redact-rules, keyed by
// the database's redaction key, or nil for --redact off (no key made).
func (o *serveOptions) redactor(getenv func(string) string, db string) (*redact.Redactor, error) {
	if o.redact == redactOff {
		return nil, nil
	}
	key, err := loadSecret(getenv, db, redactionKeyFile)
	if err != nil {
		return nil, err
	}
	return newRedactor(o.redact, o.redactRules, key)
}
