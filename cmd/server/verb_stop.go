package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/api"
)

var stopVerb = verb{
	name:     "stop",
	synopsis: "stop [--addr HOST:PORT] [--db F] [--wait D]",
	summary:  "stop the memoryd serving on --addr (the Pi extension's shared one by default), cleanly",
	about: `
Stops the memoryd that listens on --addr (default 127.0.0.1:7411, where the Pi extension starts its
shared one) as SIGTERM would: requests in flight finish, the read audit is flushed, the database is
closed. It first asks that memoryd to prove that it holds this user's token (GET /v1/proof: the
token itself is sent only to a memoryd that proved it), then sends POST /v1/shutdown with the token,
and waits up to --wait for the address to be free. The token is MEMORYD_TOKEN, else the file token
beside --db (default: the database serve uses). Nothing listening is nothing to stop (exit 0); a
program that is not memoryd, or a memoryd that does not hold this token (another user's, another
database's), is left running (exit 1).`,
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		addr := fs.String("addr", envOr(getenv, "MEMORYD_ADDR", "127.0.0.1:7411"), "the address of the memoryd to stop, `HOST:PORT` (env MEMORYD_ADDR)")
		db := fs.String("db", "", "the database whose token to use, `F` (env MEMORYD_DB; default the one serve uses)")
		wait := fs.Duration("wait", 30*time.Second, "how long to wait for it to stop")
		return func(ctx context.Context, in *invocation) error {
			a, err := listenAddress(*addr)
			if err != nil {
				return err
			}
			if *wait <= 0 {
				return &usageError{fmt.Sprintf("--wait must be positive, got %s", *wait)}
			}
			return stopMemoryd(ctx, in, dialable(a), *db, *wait)
		}
	},
}

func stopMemoryd(ctx context.Context, in *invocation, addr, db string, wait time.Duration) error {
	h := probe(ctx, addr)
	switch {
	case !h.answered:
		fmt.Fprintf(in.stdout, "no memoryd listens on %s: nothing to stop\n", addr)
		return nil
	case !h.memoryd:
		return fmt.Errorf("%s is held by %s: not stopping it", addr, h.describe(addr))
	}
	token, err := existingToken(in.getenv, db)
	if err != nil {
		return err
	}
	if err := checkProof(ctx, addr, token); err != nil {
		return fmt.Errorf("%s is held by %s, which %v: not stopping it (stop it as its own user, or with its own token in MEMORYD_TOKEN)", addr, h.describe(addr), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/shutdown", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: probeTimeout}).Do(req)
	if err != nil {
		return fmt.Errorf("ask the memoryd on %s to stop: %w", addr, err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("the memoryd on %s (%s) is older than memoryd stop: stop it with kill %d (SIGTERM)", addr, h.describe(addr), h.pid)
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("the memoryd on %s refused to stop: %d %s", addr, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(in.stderr, "asked %s on %s to stop; waiting for it (at most %s)\n", h.describe(addr), addr, wait)
	deadline := time.Now().Add(wait)
	for probe(ctx, addr).answered {
		if time.Now().After(deadline) {
			return fmt.Errorf("the memoryd on %s still answers %s after it was asked to stop: its requests in flight may take up to its --shutdown-grace", addr, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	fmt.Fprintf(in.stdout, "stopped memoryd (pid %d) on %s\n", h.pid, addr)
	return nil
}

// existingToken returns the token memoryd stop sends, MEMORYD_TOKEN or
// else the token file beside db. It never makes one.
func existingToken(getenv func(string) string, db string) (string, error) {
	if t := getenv("MEMORYD_TOKEN"); t != "" {
		return t, nil
	}
	dir, err := databaseFolder(getenv, db)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "token")
	b, err := readTokenFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("no token file at %s: give the token of the memoryd in MEMORYD_TOKEN, or its database with --db", path)
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// checkProof asks the server on addr to prove it holds token over a fresh
// nonce, before the token is sent.
func checkProof(ctx context.Context, addr, token string) error {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	nonce := hex.EncodeToString(raw)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/proof?nonce="+nonce, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: probeTimeout}).Do(req)
	if err != nil {
		return fmt.Errorf("did not answer the proof: %w", err)
	}
	defer resp.Body.Close()
	var p struct {
		Address string `json:"address"`
		Proof   string `json:"proof"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&p) != nil {
		return fmt.Errorf("gave no proof of holding this token (GET /v1/proof: %d)", resp.StatusCode)
	}
	if p.Address != addr || p.Proof != api.Proof(token, nonce, addr) {
		return errors.New("does not hold this token (its proof does not match)")
	}
	return nil
}
