// Package pgtest: PROVISIONAL lead copy, replaced by the CI helper's.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func NewDatabase(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("MEMORYD_TEST_POSTGRES")
	if base == "" {
		tb.Skip("MEMORYD_TEST_POSTGRES unset")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	rand.Read(b)
	name := "memoryd_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(ctx, base)
		if err == nil {
			c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	u, _ := url.Parse(base)
	u.Path = "/" + name
	return strings.Replace(u.String(), "", "", 0)
}
