// Package browser drives headless Chromium for the console's browser tests
// and screenshots, with chromedp. It uses the machine's chromium (Debian's
// package; scripts/deps.sh installs it), never a downloaded build.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/chromedp"

	"github.com/pgconsole/console/internal/testdb"
)

// Path returns the Chromium executable, or an error that says how to get it.
func Path() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH: install it with `apt-get install chromium` (make test does)")
}

// New starts a headless browser for one test and returns a context whose
// chromedp actions run in a fresh tab. Everything is closed at cleanup; the
// whole test is bounded by timeout.
func New(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	testdb.SkipShort(t, "a browser test")
	exe, err := Path()
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1440, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// OutputDir is where browser tests write screenshots: $TEST_OUTPUT_DIR, or
// test-output/screenshots at the repository root.
func OutputDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("TEST_OUTPUT_DIR")
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "test-output", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Screenshot saves a full-page PNG named name.png in OutputDir.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(OutputDir(t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StepTimeout bounds one Do or Get, so a step that never happens fails
// while the browser is still alive to show what it was looking at.
const StepTimeout = 30 * time.Second

// Do runs browser steps and fails the test on the first error, with a
// screenshot of the page as it was.
func Do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, StepTimeout)
	defer cancel()
	for _, step := range steps {
		if _, err := againIfStale(sctx, func() (chromedp.Void, error) { return chromedp.Run(sctx, step) }); err != nil {
			t.Fatalf("browser: %v%s", err, failureShot(t, ctx))
		}
	}
}

// failureShot saves what the page looked like when a step failed, for the
// failure message. The test's own context may be spent, so it uses a short
// fresh deadline on the same tab.
func failureShot(t testing.TB, ctx context.Context) string {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		return ""
	}
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	path := filepath.Join(OutputDir(t), "failure-"+name+".png")
	if os.WriteFile(path, png, 0o644) != nil {
		return ""
	}
	url, _ := chromedp.Run(sctx, chromedp.Location())
	return fmt.Sprintf(" (page %s, screenshot %s)", url, path)
}

// Get runs one browser action that returns a value (Text, Location,
// Evaluate...) and fails the test on error.
func Get[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, StepTimeout)
	defer cancel()
	v, err := againIfStale(sctx, func() (T, error) { return chromedp.Run(sctx, a) })
	if err != nil {
		t.Fatalf("browser: %v%s", err, failureShot(t, ctx))
	}
	return v
}

// againIfStale runs a step again while it fails only because the node it
// found is gone. A query action finds its node, then acts on the node's id;
// when Chromium replaces the document in between (a navigation can announce
// its new document more than once, and each announcement voids every id
// handed out), the id no longer resolves. Ids are resolved before any click
// or key is dispatched, so such a step did nothing and is safe to run again
// with a fresh query, until the step's deadline.
func againIfStale[T any](ctx context.Context, step func() (T, error)) (T, error) {
	for {
		v, err := step()
		if err == nil || !staleNode(err) || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// staleNode reports whether err is Chromium refusing a node id that was
// valid when the query returned it.
func staleNode(err error) bool {
	var e *cdproto.Error
	if !errors.As(err, &e) {
		return false
	}
	return strings.Contains(e.Message, "No node with given id") ||
		strings.Contains(e.Message, "Could not find node with given id")
}
