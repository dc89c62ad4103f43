package browsertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestScreenshotWritesOnlyWhenAsked: without UPDATE_SCREENSHOTS=1 a
// screenshot is neither taken nor written (a normal test run leaves the
// committed files alone), so it needs no browser.
func TestScreenshotWritesOnlyWhenAsked(t *testing.T) {
	t.Setenv(UpdateEnv, "")
	Screenshot(t, context.Background(), "browsertest-not-written") // no tab: it would fail if it took one
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "docs", "screenshots", "browsertest-not-written.png")); !os.IsNotExist(err) {
		t.Errorf("a screenshot was written without %s=1: %v", UpdateEnv, err)
	}
}
