// Package browser drives a real headless Chromium from Go tests, for the tests of the web
// dashboard: what a user sees and clicks, Server-Sent Events updating the page live, and
// confirm() dialogs before an action.
//
// It is test support, imported only by _test.go files, but an ordinary package so that the
// e2e tests and the internal packages share one harness. A test starts a browser with New,
// which stops it, and every process it started, when the test ends:
//
//	b := browser.New(t)
//	b.AcceptDialogs()
//	b.Navigate(srv.URL + "/apps")
//	b.WaitText("#app-api .sync", "Synced", time.Minute)
//	b.Click("#app-api button.sync")
//	b.Screenshot("app-list")
//
// Every helper waits at most the browser's timeout (DefaultTimeout, see SetTimeout) and fails
// the test with a message naming the step, so a hung browser fails instead of hanging. An
// uncaught JavaScript exception on the page fails the test too.
//
// Chromium comes from Debian's chromium package (`make chromium` installs it).
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const (
	// ScreenshotsEnv names the environment variable that holds the directory Screenshot writes
	// to; `make screenshots` sets it to docs/images. Unset, screenshots go to the test's
	// artifact directory.
	ScreenshotsEnv = "NAVARCH_SCREENSHOTS"

	// DefaultTimeout bounds each step of a Browser (see SetTimeout).
	DefaultTimeout = 30 * time.Second

	// startTimeout bounds the start of Chromium and the opening of its first tab.
	startTimeout = time.Minute

	// Width is the width of the window in CSS pixels, and so of the screenshots.
	Width = 1400
	// Height is the height of the window in CSS pixels; a screenshot is as high as the page.
	Height = 900
)

// executables are the names Chromium goes by, in the order New looks for them.
var executables = []string{"chromium", "chromium-browser", "google-chrome"}

// Browser is one headless Chromium with one tab. Its methods run on the test's goroutine and
// fail the test (t.Fatal) when a step fails or times out.
type Browser struct {
	t       testing.TB
	ctx     context.Context // the tab; never given a deadline, that would stop the browser
	dataDir string
	timeout atomic.Int64   // a time.Duration; SetTimeout may race with the dialog handler
	output  *boundedBuffer // Chromium's stdout and stderr, shown when it fails to start

	mu       sync.Mutex
	console  []string // "type: text" of each console call
	errs     []string // uncaught exceptions not reported yet
	dialogs  []string // messages of the dialogs accepted
	dialogOn bool
}

// New starts a headless Chromium for the test and stops it in t.Cleanup. It fails the test
// when no Chromium is installed (`make chromium` installs it) or when it does not start.
func New(t testing.TB) *Browser {
	t.Helper()
	exe := findExecutable()
	if exe == "" {
		t.Fatalf("browser: no Chromium found (looked for %s on PATH); install it with: make chromium", strings.Join(executables, ", "))
	}
	// A directory of our own, so that the processes of this browser, and only these, can be
	// found by their --user-data-dir.
	dataDir, err := os.MkdirTemp("", "navarch-browser-")
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	b := &Browser{t: t, dataDir: dataDir, output: &boundedBuffer{limit: 64 << 10}}
	b.timeout.Store(int64(DefaultTimeout))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox, // containers run tests as root, where the sandbox cannot start
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(dataDir),
		chromedp.WindowSize(Width, Height),
		chromedp.CombinedOutput(b.output),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	b.ctx = ctx
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		b.reportJSErrors()
		if left := waitGone(dataDir, 5*time.Second); len(left) > 0 {
			t.Errorf("browser: Chromium processes %v still ran after the browser stopped; killed them", left)
		}
		if err := os.RemoveAll(dataDir); err != nil {
			t.Logf("browser: remove %s: %v", dataDir, err)
		}
	})

	// The first call starts Chromium and opens the tab. It must run on the tab's own context
	// (a deadline there would stop the browser later), so the start is bounded from outside.
	started := make(chan error, 1)
	go func() { started <- chromedp.Listen(ctx, b.record) }()
	select {
	case err = <-started:
	case <-time.After(startTimeout):
		cancelTab()
		err = fmt.Errorf("did not start within %s", startTimeout)
	}
	if err != nil {
		t.Fatalf("browser: start %s: %v\nChromium's output:\n%s", exe, err, b.output.String())
	}
	return b
}

func findExecutable() string {
	for _, name := range executables {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// record keeps console calls and uncaught exceptions. It runs in chromedp's read loop, so it
// only appends.
func (b *Browser) record(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		args := make([]string, 0, len(ev.Args))
		for _, a := range ev.Args {
			args = append(args, remoteText(a))
		}
		b.mu.Lock()
		b.console = append(b.console, string(ev.Type)+": "+strings.Join(args, " "))
		b.mu.Unlock()
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg = d.Exception.Description
		}
		where := fmt.Sprintf("%s:%d:%d", d.URL, d.LineNumber+1, d.ColumnNumber+1)
		b.mu.Lock()
		b.errs = append(b.errs, msg+" (at "+where+")")
		b.mu.Unlock()
	}
}

func remoteText(o *runtime.RemoteObject) string {
	switch {
	case o == nil:
		return ""
	case o.Type == runtime.RemoteObjectTypeString && len(o.Value) > 0:
		var s string
		if err := json.Unmarshal([]byte(o.Value), &s); err == nil {
			return s
		}
	case len(o.Value) > 0:
		return string(o.Value)
	case o.UnserializableValue != "":
		return string(o.UnserializableValue)
	}
	return o.Description
}

// reportJSErrors fails the test for the uncaught exceptions not reported yet.
func (b *Browser) reportJSErrors() {
	b.t.Helper()
	b.mu.Lock()
	errs := b.errs
	b.errs = nil
	b.mu.Unlock()
	for _, e := range errs {
		b.t.Errorf("browser: uncaught JavaScript exception: %s", e)
	}
}

// step runs one chromedp action within the timeout, then fails the test if it failed or if
// the page threw meanwhile.
func step[T any](b *Browser, what string, timeout time.Duration, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	b.reportJSErrors()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		b.t.Fatalf("browser: %s: %v (page %s)", what, err, b.location())
	}
	return v
}

// location is the page's URL for failure messages, or "?" when the browser does not answer.
func (b *Browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "?"
	}
	return url
}

// SetTimeout changes how long each later step may take (DefaultTimeout to begin with).
func (b *Browser) SetTimeout(d time.Duration) { b.timeout.Store(int64(d)) }

func (b *Browser) stepTimeout() time.Duration { return time.Duration(b.timeout.Load()) }

// Context is the tab's chromedp context, for actions the helpers do not cover. Derive a
// context with a timeout from it for each chromedp.Run; never cancel it.
func (b *Browser) Context() context.Context { return b.ctx }

// UserDataDir is the browser's profile directory; every Chromium process of this browser has
// it on its command line.
func (b *Browser) UserDataDir() string { return b.dataDir }

// Navigate opens url and waits for the page to load.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	step(b, "navigate to "+url, b.stepTimeout(), chromedp.Navigate(url))
}

// WaitVisible waits until the element that the CSS selector finds is visible.
func (b *Browser) WaitVisible(selector string) {
	b.t.Helper()
	step(b, fmt.Sprintf("wait for %q to be visible", selector), b.stepTimeout(), chromedp.WaitVisible(chromedp.CSS(selector)))
}

// Text waits for the element that the CSS selector finds and returns its rendered text
// (innerText).
func (b *Browser) Text(selector string) string {
	b.t.Helper()
	return step(b, fmt.Sprintf("text of %q", selector), b.stepTimeout(), chromedp.Text(chromedp.CSS(selector)))
}

// WaitText waits up to timeout until the rendered text of the element that the CSS selector
// finds contains substring, and returns that text. It polls the DOM, so it sees updates that
// the page makes by itself, such as those pushed over Server-Sent Events.
func (b *Browser) WaitText(selector, substring string, timeout time.Duration) string {
	b.t.Helper()
	const pred = `(sel, sub) => { const e = document.querySelector(sel); return e && e.innerText.includes(sub) ? e.innerText : false; }`
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.PollFunction[string](pred,
		chromedp.WithPollingArgs(selector, substring),
		chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(0)))
	b.reportJSErrors()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		b.t.Fatalf("browser: wait for the text of %q to contain %q: %v; the text is %s (page %s)",
			selector, substring, err, b.currentText(selector), b.location())
	}
	return text
}

// currentText describes the element's text for failure messages.
func (b *Browser) currentText(selector string) string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	// A one-element array is truthy, so the poll returns at once, also for a missing element.
	const js = `(sel) => { const e = document.querySelector(sel); return [e ? e.innerText : null]; }`
	text, err := chromedp.Run(ctx, chromedp.PollFunction[[]*string](js, chromedp.WithPollingArgs(selector)))
	switch {
	case err != nil:
		return fmt.Sprintf("unknown (%v)", err)
	case len(text) == 0 || text[0] == nil:
		return "missing: no element matches"
	}
	return fmt.Sprintf("%q", *text[0])
}

// Click waits for the element that the CSS selector finds to be visible, and clicks it.
// Call AcceptDialogs first when the click opens a confirm() dialog: the click returns only
// once the dialog is closed.
func (b *Browser) Click(selector string) {
	b.t.Helper()
	step(b, fmt.Sprintf("click %q", selector), b.stepTimeout(), chromedp.Click(chromedp.CSS(selector)))
}

// AcceptDialogs makes the browser accept every later alert(), confirm() and prompt() dialog
// (prompt() gets its default text), as a user clicking OK would. Dialogs returns their
// messages.
func (b *Browser) AcceptDialogs() {
	b.t.Helper()
	b.mu.Lock()
	on := b.dialogOn
	b.dialogOn = true
	b.mu.Unlock()
	if on {
		return
	}
	// Events subscribes before it returns, so no dialog opened after this call is missed.
	opening := chromedp.Events(b.ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range opening {
			if err != nil {
				return // the browser stopped
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			ctx, cancel := context.WithTimeout(b.ctx, b.stepTimeout())
			_, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true, PromptText: ev.DefaultPrompt})
			cancel()
			if err != nil && b.ctx.Err() == nil {
				b.t.Errorf("browser: accept the dialog %q: %v", ev.Message, err)
			}
		}
	}()
}

// Dialogs returns the messages of the dialogs accepted so far.
func (b *Browser) Dialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.dialogs...)
}

// Console returns the page's console calls so far, each as "type: text", e.g.
// "log: connected".
func (b *Browser) Console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.console...)
}

// Screenshot writes a PNG of the whole page, beyond the window, to $NAVARCH_SCREENSHOTS/name.png
// when that variable is set (`make screenshots`), else to the test's artifact directory, and
// returns the file's path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	png := step(b, "screenshot "+name, b.stepTimeout(), chromedp.FullScreenshot(100))
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		dir = b.t.ArtifactDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o600); err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	return path
}

// Eval evaluates a JavaScript expression in the page and returns its value decoded into T, as
// chromedp.Evaluate does; it fails the test when the expression throws.
func Eval[T any](b *Browser, expression string) T {
	b.t.Helper()
	return step(b, "evaluate "+expression, b.stepTimeout(), chromedp.Evaluate[T](expression))
}

// boundedBuffer keeps the first limit bytes written to it; Chromium is chatty.
type boundedBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int
}

func (w *boundedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.limit - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (w *boundedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
