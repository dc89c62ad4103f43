package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/memoryd/memoryd/internal/browsertest"
)

// childEnv set to "serve" makes the test binary the memoryd server: it
// runs run() with its own arguments and exits. Tests that need a real
// server process they can SIGKILL (crash_test.go) re-execute themselves
// with it instead of building a separate binary. Such a child exits when
// its stdin closes, so it cannot outlive the test process. This is the
// package's only TestMain; add to it rather than writing another.
const childEnv = "MEMORYD_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "serve" {
		go func() { // the parent test holds stdin open while it lives
			io.Copy(io.Discard, os.Stdin)
			os.Exit(3)
		}()
		useScratchFolder(os.Getenv, os.Stderr) // as main does
		if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "memoryd:", err)
			os.Exit(exitCode(err))
		}
		os.Exit(0)
	}
	os.Exit(browsertest.Main(m)) // stops the browser of inspect_browser_test.go after the tests
}
