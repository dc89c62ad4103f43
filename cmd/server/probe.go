package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// holder describes what answers on an address, as its /healthz says.
type holder struct {
	answered bool   // something accepted the connection and spoke HTTP
	memoryd  bool   // its /healthz says "service":"memoryd"
	status   int    // the status of its /healthz
	version  string // a memoryd's version, commit and process id
	commit   string
	pid      int
}

// probeTimeout bounds each request of probe and of memoryd stop.
const probeTimeout = 3 * time.Second

// probe asks addr's /healthz who holds addr. A connection refused is the
// zero holder.
func probe(ctx context.Context, addr string) holder {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+dialable(addr)+"/healthz", nil)
	if err != nil {
		return holder{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return holder{}
	}
	defer resp.Body.Close()
	h := holder{answered: true, status: resp.StatusCode}
	var body struct {
		Service string `json:"service"`
		Version string `json:"version"`
		Commit  string `json:"commit"`
		PID     int    `json:"pid"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body) == nil && body.Service == "memoryd" {
		h.memoryd, h.version, h.commit, h.pid = true, body.Version, body.Commit, body.PID
	}
	return h
}

// dialable returns addr with a wildcard host made loopback, where the
// listener can be reached.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// describe says who holds addr in words for a message.
func (h holder) describe(addr string) string {
	switch {
	case h.memoryd && h.version != "":
		return fmt.Sprintf("memoryd %s (commit %s, pid %d)", h.version, h.commit, h.pid)
	case h.memoryd:
		return "a memoryd older than memoryd version (it does not say its version or pid)"
	case h.answered:
		return fmt.Sprintf("a program that is not memoryd (GET http://%s/healthz answered %d)", dialable(addr), h.status)
	default:
		return "a program that does not answer HTTP"
	}
}

// addrInUse returns the error of a serve whose address is taken. It says
// who holds the address and what to do.
func addrInUse(ctx context.Context, addr string, listenErr error) error {
	h := probe(ctx, addr)
	what := "serve this one on a free port with --addr 127.0.0.1:0, or free " + addr
	if h.memoryd {
		what = fmt.Sprintf("stop it with \"memoryd stop --addr %s\", or serve this one on a free port with --addr 127.0.0.1:0", addr)
	}
	return fmt.Errorf("listen on %s: the address is in use by %s: %s (%v)", addr, h.describe(addr), what, listenErr)
}
