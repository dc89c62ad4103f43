// Package atresttest lets the tests of several packages run again on
// databases encrypted at rest: with MEMORYD_TEST_AT_REST=1, the helpers
// that open a test's database give it Sealer's key and ask for
// encryption. Only tests import it.
package atresttest

import (
	"bytes"
	"os"
	"testing"

	"github.com/memoryd/memoryd/internal/atrest"
)

// On reports whether the tests run on databases encrypted at rest
// (MEMORYD_TEST_AT_REST is 1).
func On(tb testing.TB) bool {
	tb.Helper()
	switch e := os.Getenv("MEMORYD_TEST_AT_REST"); e {
	case "", "0":
		return false
	case "1":
		return true
	default:
		tb.Fatalf("MEMORYD_TEST_AT_REST=%q: want 0 or 1", e)
		return false
	}
}

// Sealer returns a sealer of a fixed test key.
func Sealer(tb testing.TB) *atrest.Sealer {
	tb.Helper()
	s, err := atrest.New(bytes.Repeat([]byte{0x5e}, atrest.KeySize))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
