package main

import (
	"context"
	"io"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// openStore is openService for the tests' fixtures, which read and write
// the store itself: closing the store closes the database.
func openStore(ctx context.Context, path, synchronous string, stderr io.Writer) (*eventlog.Store, error) {
	svc, err := openService(ctx, path, synchronous, stderr)
	if err != nil {
		return nil, err
	}
	return svc.Store(), nil
}

// openExisting is openExistingService for the tests' fixtures.
func openExisting(ctx context.Context, path string, stderr io.Writer) (*eventlog.Store, error) {
	svc, err := openExistingService(ctx, path, stderr)
	if err != nil {
		return nil, err
	}
	return svc.Store(), nil
}
