package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/actions"
	"github.com/navarch-io/navarch/internal/browser"
	"github.com/navarch-io/navarch/internal/devfleet"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

// An operator opens the dashboard on the demo fleet: the matrix shows every example in its
// cluster's column; a change made behind Git's back on a workload cluster turns the cell
// OutOfSync and, once synced again, Synced, without a reload; the Sync button syncs an
// Application after a confirmation and shows the result; the ApplicationSet and Clusters pages
// show the rollout and the clusters. Screenshots of each page go to $NAVARCH_SCREENSHOTS
// (make screenshots) or the test's artifact directory.
func TestDashboardShowsTheFleetLiveAndSyncsAnApplication(t *testing.T) {
	stateDir := t.TempDir()
	t.Cleanup(func() {
		if _, err := devfleet.ReadState(stateDir); err == nil {
			if t.Failed() {
				logTail(t, "the controller's log", filepath.Join(stateDir, "controller.log"), 80)
			}
			_ = devfleet.Down(stateDir, os.Stderr)
		}
	})
	out := navarch(t, "demo", "--state-dir", stateDir, "--examples", filepath.Join("..", "examples"), "--timeout", "8m")
	if !strings.Contains(out, "every Application is Synced and Healthy") {
		t.Fatalf("navarch demo did not report success:\n%s", out)
	}
	state, err := devfleet.ReadState(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	mgmt := clientFor(t, state.Management.Kubeconfig)
	base := startDashboard(t, state.Management.Kubeconfig)

	// A web site that points its own name at 127.0.0.1 (DNS rebinding) is same-origin with
	// itself: the dashboard, acting with the user's kubeconfig, must not answer it.
	t.Run("a page of another site rebound to 127.0.0.1 cannot read the dashboard", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodGet, base+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "rebound.example.com:" + req.URL.Port()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("GET / with Host %s: %s, want 421 Misdirected Request", req.Host, resp.Status)
		}
	})

	t.Run("the matrix shows every example Application in its cluster's column", func(t *testing.T) {
		b := newBrowser(t)
		var apps navarchv1.ApplicationList
		if err := mgmt.List(context.Background(), &apps, client.InNamespace("demo")); err != nil {
			t.Fatal(err)
		}
		if len(apps.Items) < 10 {
			t.Fatalf("the demo has %d Applications, want at least 10", len(apps.Items))
		}
		b.Navigate(base + "/")
		b.WaitVisible("#matrix")
		// Each Application's link → the head of its cell's column.
		columns := browser.Eval[map[string]string](b, `(() => {
			const heads = [...document.querySelectorAll('#matrix thead th')].map(th => th.dataset.cluster || '');
			const out = {};
			for (const a of document.querySelectorAll('#matrix td.cell a')) {
				const td = a.closest('td');
				out[a.getAttribute('href')] = heads[td.cellIndex] + ' ' + td.textContent.trim();
			}
			return out;
		})()`)
		for _, app := range apps.Items {
			want := app.Spec.Destination.Name
			if want == "" {
				want = navarchv1.InClusterName
			}
			got, ok := columns["/applications/demo/"+app.Name]
			if !ok {
				t.Errorf("the matrix has no cell for Application %s (cells: %v)", app.Name, columns)
				continue
			}
			if !strings.HasPrefix(got, want+" ") || !strings.Contains(got, "Synced · Healthy") {
				t.Errorf("Application %s is shown in column %q, want %s and Synced · Healthy", app.Name, got, want)
			}
		}
		b.Screenshot("dashboard-fleet")
	})

	t.Run("pausing the rollout asks for confirmation and shows the result", func(t *testing.T) {
		b := newBrowser(t)
		navigateLive(t, b, base+"/applicationsets/demo/apps")
		b.WaitText("#rollout", "Completed", time.Minute)
		b.AcceptDialogs()
		b.Click("#action-pause")
		waitAcrossNavigation(t, b, "#flash", "Paused the rollout of ApplicationSet demo/apps")
		b.WaitText("#rollout", "Paused by the navarch.io/rollout-paused annotation", time.Minute)
		set := &navarchv1.ApplicationSet{}
		if err := mgmt.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "apps"}, set); err != nil {
			t.Fatal(err)
		}
		if _, ok := set.Annotations[navarchv1.AnnotationRolloutPaused]; !ok {
			t.Fatalf("after Pause, ApplicationSet apps has no %s annotation", navarchv1.AnnotationRolloutPaused)
		}
	})

	t.Run("a change on a workload cluster turns the cell OutOfSync and back, live", func(t *testing.T) {
		b := newBrowser(t)
		navigateLive(t, b, base+"/")
		b.WaitVisible("#matrix")
		// Record every text the cell takes, with the time, and mark the page: a reload
		// would lose the mark.
		browser.Eval[bool](b, `(() => {
			window.__noReload = true;
			window.__cellHistory = [];
			const text = () => {
				const a = document.querySelector('a[href="/applications/demo/guestbook-dev-1"]');
				return a ? a.closest('td').textContent.trim() : '';
			};
			let last = text();
			new MutationObserver(() => {
				const t = text();
				if (t !== last) { last = t; window.__cellHistory.push([Date.now(), t]); }
			}).observe(document.getElementById('matrix'), {subtree: true, childList: true, characterData: true});
			return true;
		})()`)

		dev := clusterState(t, state, "dev-1")
		workload := clientFor(t, dev.Kubeconfig)
		svc := &corev1.Service{}
		key := client.ObjectKey{Namespace: "guestbook", Name: "guestbook"}
		watchSeen := watchOutOfSync(t, state.Management.Kubeconfig, "guestbook-dev-1")
		edited := time.Now()
		// A selector value, not a port: server-side apply merges a list of ports, so a
		// changed port would leave two.
		testenv.Update(t, workload, svcWithKey(svc, key), func(s *corev1.Service) { s.Spec.Selector["app"] = "drifted" })

		var seenAt time.Time
		testenv.EventuallyWithin(t, 2*time.Minute, "the guestbook-dev-1 cell turns OutOfSync without a reload", func() string {
			history := browser.Eval[[][]any](b, `window.__noReload ? window.__cellHistory : null`)
			for _, h := range history {
				if strings.Contains(fmt.Sprint(h[1]), "OutOfSync") {
					seenAt = time.UnixMilli(int64(h[0].(float64)))
					return ""
				}
			}
			return fmt.Sprintf("cell history %v", history)
		})
		t.Logf("SSE latency: the cell showed OutOfSync %s after the edit on dev-1", seenAt.Sub(edited).Round(time.Millisecond))
		if w := watchSeen(); !w.IsZero() {
			t.Logf("SSE latency: the cell showed OutOfSync %s after a watch of the management cluster saw the status change",
				seenAt.Sub(w).Round(time.Millisecond))
		}
		b.Screenshot("dashboard-fleet-outofsync")

		// Resume the rollout (as navarch appset resume does): it syncs the drifted Application.
		set := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "apps"}}
		testenv.Update(t, mgmt, set, func(s *navarchv1.ApplicationSet) { delete(s.Annotations, navarchv1.AnnotationRolloutPaused) })
		testenv.EventuallyWithin(t, 3*time.Minute, "the guestbook-dev-1 cell turns Synced · Healthy again without a reload", func() string {
			history := browser.Eval[[][]any](b, `window.__noReload ? window.__cellHistory : null`)
			if n := len(history); n > 0 && fmt.Sprint(history[n-1][1]) == "Synced · Healthy" {
				return ""
			}
			return fmt.Sprintf("cell history %v", history)
		})
		testenv.Update(t, workload, svcWithKey(svc, key), func(*corev1.Service) {})
		if got := svc.Spec.Selector["app"]; got != "guestbook" {
			t.Errorf("the rollout's sync left the Service's selector app=%s, want app=guestbook as in Git", got)
			for _, h := range browser.Eval[[][]any](b, `window.__cellHistory`) {
				t.Logf("the cell showed %q at %s", h[1], time.UnixMilli(int64(h[0].(float64))).Format("15:04:05.000"))
			}
			t.Logf("edited at %s; the Service's managers: %s", edited.Format("15:04:05.000"), managers(svc.ManagedFields))
		}
	})

	t.Run("the Sync button syncs after a confirmation and shows the result", func(t *testing.T) {
		// The resumed rollout syncs guestbook-dev-1 and soaks it; a sync it requests after the
		// click would replace the one this test follows, so click once the rollout is done.
		testenv.EventuallyWithin(t, 3*time.Minute, "the rollout is done with guestbook-dev-1", func() string {
			set, app := &navarchv1.ApplicationSet{}, &navarchv1.Application{}
			if err := mgmt.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "apps"}, set); err != nil {
				return err.Error()
			}
			if err := mgmt.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "guestbook-dev-1"}, app); err != nil {
				return err.Error()
			}
			if r := set.Status.Rollout; r == nil || r.Phase != navarchv1.RolloutPhaseCompleted {
				return fmt.Sprintf("the rollout is %+v", r)
			}
			if app.Operation != nil || actions.Running(app.Status.OperationState) {
				return "guestbook-dev-1 has an operation requested or running"
			}
			return ""
		})
		b := newBrowser(t)
		navigateLive(t, b, base+"/applications/demo/guestbook-dev-1")
		b.WaitText("main", "Resources", time.Minute)
		b.AcceptDialogs()
		clicked := time.Now()
		b.Click("#action-sync")
		waitAcrossNavigation(t, b, "#flash", "Requested a sync of Application demo/guestbook-dev-1")
		if d := b.Dialogs(); len(d) == 0 || !strings.Contains(d[len(d)-1], "Sync demo/guestbook-dev-1 with Git now?") {
			t.Errorf("the Sync button asked %q, want a confirmation", d)
		}
		app := &navarchv1.Application{}
		testenv.EventuallyWithin(t, 3*time.Minute, "the requested sync succeeds", func() string {
			if err := mgmt.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: "guestbook-dev-1"}, app); err != nil {
				return err.Error()
			}
			op := app.Status.OperationState
			if op == nil || op.StartedAt.Add(time.Second).Before(clicked) || op.Phase != navarchv1.OperationSucceeded || op.Operation.InitiatedBy.Automated {
				return fmt.Sprintf("operation %+v", op)
			}
			return ""
		})
		// The page updates itself: the operation line shows the phase, and the history the
		// user's sync (the operation line may show a later one by the rollout).
		b.WaitText("#operation", "Succeeded", time.Minute)
		b.WaitText("#history", app.Status.OperationState.Operation.InitiatedBy.Username, time.Minute)
		if !browser.Eval[bool](b, `document.getElementById("stale").hidden`) {
			t.Errorf("the Application page says it cannot update in place; it follows its Application live")
		}
		text := b.Text("main")
		for _, want := range []string{"Conditions", "Differences from Git", "Resources", "Service", "Deployment", "History", "Sync · wave"} {
			if !strings.Contains(text, want) {
				t.Errorf("the Application page lacks %q:\n%s", want, text)
			}
		}
		b.Screenshot("dashboard-application")
	})

	t.Run("the ApplicationSet and Clusters pages show the rollout and the clusters", func(t *testing.T) {
		b := newBrowser(t)
		b.Navigate(base + "/applicationsets/demo/apps")
		b.WaitText("#rollout", "Completed", 2*time.Minute)
		text := b.Text("main")
		for _, want := range []string{"Rollout", "env In (dev)", "Generated Applications", "guestbook-dev-1", "podinfo-prod-3"} {
			if !strings.Contains(text, want) {
				t.Errorf("the ApplicationSet page lacks %q:\n%s", want, text)
			}
		}
		b.Screenshot("dashboard-applicationset")

		b.Navigate(base + "/clusters")
		text = b.WaitText("#clusters", "prod-3", time.Minute)
		for _, want := range []string{"dev-1", "staging-2", "prod-3", "Ready", "env=prod", "v1."} {
			if !strings.Contains(text, want) {
				t.Errorf("the Clusters page lacks %q:\n%s", want, text)
			}
		}
		b.Screenshot("dashboard-clusters")
	})
}

// newBrowser starts a browser for one subtest (the harness fails the test it was made for).
func newBrowser(t *testing.T) *browser.Browser {
	b := browser.New(t)
	b.SetTimeout(time.Minute)
	return b
}

// navigateLive opens a page and waits until it has taken in the fetch its event stream's
// connection makes: until then that fetch may replace the part of the page a click aims at.
func navigateLive(t *testing.T, b *browser.Browser, url string) {
	t.Helper()
	b.Navigate(url)
	testenv.EventuallyWithin(t, time.Minute, "the page takes in its first live refresh", func() string {
		if browser.Eval[string](b, `document.body.dataset.refreshed || ""`) == "" {
			return "no refresh yet"
		}
		return ""
	})
}

// waitAcrossNavigation waits until the element's text contains substring, also while a form
// post and its redirect replace the page (the harness's WaitText fails when the page it
// polls goes away).
func waitAcrossNavigation(t *testing.T, b *browser.Browser, selector, substring string) {
	t.Helper()
	var text string
	testenv.EventuallyWithin(t, time.Minute, fmt.Sprintf("the text of %s contains %q", selector, substring), func() string {
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
		defer cancel()
		js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : ""; })()`, selector)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			return err.Error()
		}
		text = got
		if !strings.Contains(text, substring) {
			return fmt.Sprintf("the text is %q", text)
		}
		return ""
	})
}

// startDashboard runs navarch dashboard against the management cluster on a free loopback
// port and returns its URL; the test's cleanup stops it.
func startDashboard(t *testing.T, kubeconfig string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(navarchBinary, "dashboard", "--kubeconfig", kubeconfig, "--address", addr)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "dashboard.log")
	stderr, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = stderr.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logFile); err == nil {
				t.Logf("navarch dashboard's log:\n%s", data)
			}
		}
	})
	ready := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if _, url, ok := strings.Cut(lines.Text(), "navarch dashboard: "); ok {
				ready <- strings.Fields(url)[0]
			}
		}
	}()
	select {
	case url := <-ready:
		return strings.TrimSuffix(url, "/")
	case <-time.After(3 * time.Minute):
		data, _ := os.ReadFile(logFile)
		t.Fatalf("navarch dashboard did not print its URL within 3m; its log:\n%s", data)
	}
	return ""
}

func clusterState(t *testing.T, state *devfleet.State, name string) devfleet.ClusterState {
	t.Helper()
	for _, c := range state.Clusters {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("the dev fleet has no cluster %s", name)
	return devfleet.ClusterState{}
}

func svcWithKey(svc *corev1.Service, key client.ObjectKey) *corev1.Service {
	svc.Namespace, svc.Name = key.Namespace, key.Name
	return svc
}

// watchOutOfSync watches an Application of the demo namespace and returns a function that
// tells when the watch first saw it OutOfSync (zero if not yet).
func watchOutOfSync(t *testing.T, kubeconfig, name string) func() time.Time {
	t.Helper()
	wc, err := client.NewWithWatch(restConfig(t, kubeconfig), client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := wc.Watch(ctx, &navarchv1.ApplicationList{}, client.InNamespace("demo"))
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan time.Time, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if app, ok := ev.Object.(*navarchv1.Application); ok && app.Name == name && app.Status.Sync.Status == navarchv1.SyncStatusOutOfSync {
				seen <- time.Now()
				return
			}
		}
	}()
	var at time.Time
	return func() time.Time {
		select {
		case at = <-seen:
		default:
		}
		return at
	}
}

// logTail logs the last n lines of a file, to explain a failure.
func logTail(t *testing.T, what, path string, n int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Logf("%s: %v", what, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	t.Logf("the last %d lines of %s (%s):\n%s", min(n, len(lines)), what, path, strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// managers says who last wrote which fields of an object, and when.
func managers(fields []metav1.ManagedFieldsEntry) string {
	var out []string
	for _, f := range fields {
		out = append(out, fmt.Sprintf("%s %s at %s", f.Manager, f.Operation, f.Time.UTC().Format(time.TimeOnly)))
	}
	return strings.Join(out, ", ")
}
