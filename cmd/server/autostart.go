package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// autostartWait bounds how long a hook or memoryd mcp waits for the
// memoryd it started to answer.
const autostartWait = 60 * time.Second

// sharedIdleExit is the --idle-exit of a memoryd a coding agent's hook or
// MCP server starts, the Pi extension's: it stops 30 minutes after the
// last request with the token.
const sharedIdleExit = "30m"

// autostart reports whether a hook or memoryd mcp that finds nothing on
// addr starts memoryd there: on a loopback address, unless
// MEMORYD_AUTOSTART=0, as for the Pi extension.
func autostart(getenv func(string) string, addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && getenv("MEMORYD_AUTOSTART") != "0" && (host == "localhost" || (ip != nil && ip.IsLoopback()))
}

// startShared starts this memoryd serving db on addr in the background,
// its output appended to memoryd.log beside the database, and waits until
// a memoryd answers there: the one it started, or another one that won
// the address first.
func startShared(ctx context.Context, getenv func(string) string, addr, db string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if strings.HasSuffix(filepath.Base(exe), ".test") {
		return errors.New("a Go test binary does not start memoryd: it would run its tests")
	}
	dir, err := databaseFolder(getenv, db)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	logPath := filepath.Join(dir, "memoryd.log")
	log, err := openAppendPrivate(logPath)
	if err != nil {
		return fmt.Errorf("open memoryd's log %s: %w", logPath, err)
	}
	defer log.Close()
	args := []string{"serve", "--addr", addr, "--idle-exit", sharedIdleExit}
	if db != "" {
		args = append(args, "--db", db)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start memoryd: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(autostartWait)
	for {
		if probe(ctx, addr).memoryd {
			return nil
		}
		select {
		case err := <-exited:
			// It lost the address to another memoryd starting at once,
			// or could not start: the log says which.
			if h := probe(ctx, addr); h.memoryd {
				return nil
			}
			return fmt.Errorf("the memoryd started on %s exited (%v): see %s", addr, err, logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("the memoryd started on " + addr + " did not answer within " + autostartWait.String() + ": see " + logPath)
		}
	}
}
