// Package browsertest drives a real headless Chromium from Go tests through
// chromedp, so the web inspector's tests can assert on what a browser shows.
//
// The tests see the inspector's CSS under its Content-Security-Policy, its
// forms and its cookie. A test binary starts one browser on first use and
// gives each test its own tab in its own browser context. With no Chromium
// installed the tests fail, never skip. Only tests import this package.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Width and Height are every tab's viewport, so that screenshots have
// one size.
const (
	Width  = 1100
	Height = 700
)

// TabTimeout bounds everything a test does in its tab. The browser answers
// in milliseconds; the margin is for a loaded machine running -race.
const TabTimeout = 90 * time.Second

// binaries are the names Chromium is installed under by Debian's package,
// other distributions, Google and the headless shell image.
var binaries = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"}

var browser struct {
	mu      sync.Mutex
	started bool
	err     error
	ctx     context.Context // the browser's; tabs are made from it
	cancel  func()          // stops the browser, then its allocator
	dataDir string
}

// Tab returns the context of a new tab in a browser context of its own,
// closed when t ends. It fails t when no browser can be started.
func Tab(t testing.TB) context.Context {
	t.Helper()
	parent, err := start()
	if err != nil {
		t.Fatalf("browser test: %v", err)
	}
	// Cookies are kept per host, not per port, so two test servers on
	// 127.0.0.1 would otherwise share a session cookie.
	tab, closeTab := chromedp.NewContext(parent, chromedp.WithNewBrowserContext())
	ctx, cancel := context.WithTimeout(tab, TabTimeout)
	t.Cleanup(func() { cancel(); closeTab() })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(Width, Height)); err != nil {
		t.Fatalf("browser test: open a tab: %v", err)
	}
	return ctx
}

// start starts the test binary's browser once.
func start() (context.Context, error) {
	browser.mu.Lock()
	defer browser.mu.Unlock()
	if browser.started {
		return browser.ctx, browser.err
	}
	browser.started = true
	browser.err = launch()
	return browser.ctx, browser.err
}

func launch() error {
	path := ""
	for _, name := range binaries {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		return fmt.Errorf("no Chromium found on PATH (looked for %v): install it (Debian: apt-get install chromium); .ci/run installs it when it runs as root", binaries)
	}
	dir, err := os.MkdirTemp("", "memoryd-chromium-")
	if err != nil {
		return err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], // headless, no first-run UI
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir), // a fresh profile, removed by Close
		chromedp.WindowSize(Width, Height),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to start as root with its sandbox on, and CI
		// containers run as root. The pages it opens are the test's own
		// server's, on loopback.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// The first context made from the allocator owns the browser. It
	// lives until Close, and tests get tabs made from it.
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	browser.ctx, browser.dataDir = ctx, dir
	browser.cancel = func() { cancelBrowser(); cancelAlloc() }
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }() // starts it, with a blank tab
	select {
	case err := <-started:
		if err != nil {
			return fmt.Errorf("start %s: %w", path, err)
		}
		return nil
	case <-time.After(startTimeout):
		return fmt.Errorf("start %s: no answer after %s", path, startTimeout)
	}
}

// startTimeout bounds the wait for the browser to start.
const startTimeout = 60 * time.Second

// Close stops the browser, if one was started, and removes its profile.
func Close() {
	browser.mu.Lock()
	defer browser.mu.Unlock()
	if browser.cancel != nil {
		browser.cancel()
		browser.cancel = nil
	}
	if browser.dataDir != "" {
		os.RemoveAll(browser.dataDir)
		browser.dataDir = ""
	}
}

// Main runs the tests of m and then stops the browser. A package with
// browser tests calls os.Exit(Main(m)) from its TestMain.
func Main(m *testing.M) int {
	defer Close()
	return m.Run()
}

// UpdateEnv is the variable that makes Screenshot write docs/screenshots
// when set to 1. A normal test run writes nothing.
const UpdateEnv = "UPDATE_SCREENSHOTS"

// Screenshot writes the tab's viewport as PNG to docs/screenshots/NAME.png
// in the module when UPDATE_SCREENSHOTS=1.
func Screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv(UpdateEnv) != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/screenshots/%s.png", name)
}

// moduleRoot returns the nearest folder holding go.mod above the working
// directory, which is a test's package folder.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the test's folder")
		}
		dir = up
	}
}
