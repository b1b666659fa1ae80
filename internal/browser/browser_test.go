package browser

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const counterPage = `<!doctype html>
<html><head><title>harness</title></head>
<body>
<h1>Counter</h1>
<p>Count: <span id="counter">waiting</span></p>
<button id="post">Post</button>
<p id="result"></p>
<script>
const events = new EventSource("/events");
events.onmessage = (e) => { document.getElementById("counter").textContent = e.data; };
document.getElementById("post").addEventListener("click", async () => {
	if (!confirm("Post the counter?")) return;
	const resp = await fetch("/action", {method: "POST"});
	document.getElementById("result").textContent = await resp.text();
	console.log("posted", resp.status);
});
</script>
</body></html>`

// counterServer serves counterPage, pushes "tick N" over Server-Sent Events every 50ms, and counts the
// POSTs to /action.
func counterServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var posts atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, counterPage)
	})
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for n := 1; ; n++ {
			fmt.Fprintf(w, "data: tick %d\n\n", n)
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})
	mux.HandleFunc("POST /action", func(w http.ResponseWriter, _ *http.Request) {
		posts.Add(1)
		fmt.Fprint(w, "done")
	})
	mux.HandleFunc("GET /throws", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><p id="p">hello</p><script>throw new Error("boom from the page")</script>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close) // registered before the browser's, so it runs after the browser stopped
	return srv, &posts
}

func TestBrowserFollowsServerSentEventsAndAcceptsConfirm(t *testing.T) {
	srv, posts := counterServer(t)
	t.Setenv(ScreenshotsEnv, "")

	var dataDir string
	t.Run("user", func(t *testing.T) {
		start := time.Now()
		b := New(t)
		t.Logf("Chromium started in %s", time.Since(start).Round(time.Millisecond))
		dataDir = b.UserDataDir()
		if len(processesUsing(dataDir)) == 0 {
			t.Fatalf("no process has --user-data-dir=%s while the browser runs", dataDir)
		}
		b.AcceptDialogs()
		b.Navigate(srv.URL)
		b.WaitVisible("#post")

		// The server pushes the counter; the page shows it without a reload.
		b.WaitText("#counter", "tick 3", 10*time.Second)
		b.WaitText("#counter", "tick 6", 10*time.Second)

		b.Click("#post")
		if got := b.WaitText("#result", "done", 10*time.Second); got != "done" {
			t.Errorf("result = %q, want done", got)
		}
		if n := posts.Load(); n != 1 {
			t.Errorf("the server saw %d POSTs, want 1", n)
		}
		if got, want := b.Dialogs(), []string{"Post the counter?"}; !slices.Equal(got, want) {
			t.Errorf("dialogs = %q, want %q", got, want)
		}
		if got := b.Console(); !slices.Contains(got, "log: posted 200") {
			t.Errorf("console = %q, want it to hold %q", got, "log: posted 200")
		}
		if got := Eval[string](b, "document.title"); got != "harness" {
			t.Errorf("title = %q, want harness", got)
		}

		path := b.Screenshot("harness")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("screenshot %s is no PNG: %v", path, err)
		}
		if size := img.Bounds().Size(); size.X == 0 || size.Y == 0 {
			t.Errorf("screenshot is %v, want a non-empty image", size)
		}
	})
	if left := processesUsing(dataDir); len(left) > 0 {
		t.Errorf("Chromium processes %v outlived the test", left)
	}
}

func TestScreenshotGoesToTheDirectoryOfTheEnvironment(t *testing.T) {
	srv, _ := counterServer(t)
	dir := t.TempDir() + "/images"
	t.Setenv(ScreenshotsEnv, dir)
	b := New(t)
	b.Navigate(srv.URL)
	if got, want := b.Screenshot("page"), dir+"/page.png"; got != want {
		t.Errorf("screenshot written to %s, want %s", got, want)
	}
	if _, err := os.Stat(dir + "/page.png"); err != nil {
		t.Error(err)
	}
}

// recorder is a testing.TB that records failures instead of failing the test.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.failed)
}

// run calls f as a test body would: a Fatalf ends it.
func (r *recorder) run(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

func TestUncaughtJavaScriptExceptionFailsTheTest(t *testing.T) {
	srv, _ := counterServer(t)
	r := &recorder{TB: t}
	r.run(func() {
		b := New(r)
		b.Navigate(srv.URL + "/throws")
		b.Text("#p")
	})
	failed := r.failures()
	if len(failed) != 1 || !strings.Contains(failed[0], "uncaught JavaScript exception") || !strings.Contains(failed[0], "boom from the page") {
		t.Errorf("failures = %q, want one naming the uncaught exception", failed)
	}
}

func TestMissingChromiumNamesMakeChromium(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r := &recorder{TB: t}
	r.run(func() { New(r) })
	failed := r.failures()
	if len(failed) != 1 || !strings.Contains(failed[0], "make chromium") {
		t.Errorf("failures = %q, want one telling to run make chromium", failed)
	}
}

func TestTimedOutWaitSaysWhatItWaitedFor(t *testing.T) {
	srv, _ := counterServer(t)
	r := &recorder{TB: t}
	r.run(func() {
		b := New(r)
		b.Navigate(srv.URL)
		b.WaitText("#counter", "never shown", 500*time.Millisecond)
	})
	failed := r.failures()
	if len(failed) != 1 || !strings.Contains(failed[0], `wait for the text of "#counter" to contain "never shown": timed out after 500ms; the text is "tick`) {
		t.Errorf("failures = %q, want one saying what the wait waited for and what the page showed", failed)
	}
}
