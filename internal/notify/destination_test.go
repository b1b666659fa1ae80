package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/notify/notifytest"
)

// startNotifier runs a Notifier with config until the test ends.
func startNotifier(t *testing.T, config string, secret map[string][]byte) *Notifier {
	return startNotifierWith(t, Options{}, config, secret)
}

// startNotifierWith is startNotifier with opts.
func startNotifierWith(t *testing.T, opts Options, config string, secret map[string][]byte) *Notifier {
	t.Helper()
	cfg, err := Parse(map[string]string{ConfigKey: config}, secret)
	if err != nil {
		t.Fatal(err)
	}
	opts.Backoff = 10 * time.Millisecond
	n := New(opts)
	n.SetConfig(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = n.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return n
}

// drift makes web go from Synced to OutOfSync.
func drift(n *Notifier) {
	web := app(navarchv1.SyncStatusSynced, navarchv1.HealthHealthy, "", 0)
	web.Labels = map[string]string{"env": "prod"}
	n.Application(web)
	web = web.DeepCopy()
	web.Status.Sync.Status = navarchv1.SyncStatusOutOfSync
	n.Application(web)
}

// The controller's cache keeps part of an Application's status encoded: the Notifier finds
// transitions on the Application as observed, and asks for the whole one only to notify.
func TestOnlyAnApplicationThatFiresATriggerIsMadeWhole(t *testing.T) {
	hook := notifytest.NewReceiver(t)
	var mu sync.Mutex
	wholes := 0
	whole := func(app *navarchv1.Application) (*navarchv1.Application, error) {
		mu.Lock()
		defer mu.Unlock()
		wholes++
		c := app.DeepCopy()
		c.Status.Health.Message = "decoded for the notification"
		return c, nil
	}
	n := startNotifierWith(t, Options{Whole: whole}, `
destinations:
- name: ops
  webhook: {urlSecretKey: url}
subscriptions:
- name: prod
  triggers: [OutOfSync]
  destinations: [ops]
`, map[string][]byte{"url": []byte(hook.URL)})
	drift(n)
	fixture.WaitFor(t, "one request", func() bool { return len(hook.Requests()) == 1 })
	mu.Lock()
	defer mu.Unlock()
	if wholes != 1 {
		t.Errorf("Whole called %d times for a first sight and one transition; want 1", wholes)
	}
	if body := string(hook.Requests()[0].Body); !strings.Contains(body, "decoded for the notification") {
		t.Errorf("the notification was not made from the whole Application: %s", body)
	}
}

func TestWebhookBodyIsSignedWithTheSecretKey(t *testing.T) {
	hook := notifytest.NewReceiver(t)
	n := startNotifier(t, `
destinations:
- name: ops
  webhook: {urlSecretKey: url, hmacSecretKey: hmac, headers: {X-Team: shop}}
subscriptions:
- name: prod
  triggers: [OutOfSync]
  destinations: [ops]
`, map[string][]byte{"url": []byte(hook.URL), "hmac": []byte("s3cret")})
	drift(n)
	fixture.WaitFor(t, "one request", func() bool { return len(hook.Requests()) == 1 })
	r := hook.Requests()[0]

	// What a receiver does: recompute the HMAC of the timestamp, ".", and the raw body with
	// the shared key.
	ts := r.Header.Get(HeaderTimestamp)
	if sent, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(sent, 0)).Abs() > time.Minute {
		t.Errorf("%s = %q, want the Unix time of the attempt", HeaderTimestamp, ts)
	}
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte(ts + "."))
	mac.Write(r.Body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(r.Header.Get(HeaderSignature)), []byte(want)) {
		t.Errorf("%s = %q, want %q", HeaderSignature, r.Header.Get(HeaderSignature), want)
	}
	// The timestamp is signed: a replay with a fresh timestamp does not verify.
	if replayed := Sign([]byte("s3cret"), "9999999999", r.Body); replayed == r.Header.Get(HeaderSignature) {
		t.Errorf("the signature does not depend on the timestamp")
	}
	var msg Message
	if err := json.Unmarshal(r.Body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Trigger != OutOfSync || msg.Severity != "warning" || msg.Subscription != "prod" || msg.Application == nil ||
		msg.Application.Name != "web" || msg.Application.Sync != navarchv1.SyncStatusOutOfSync || msg.Application.Project != "default" {
		t.Errorf("body = %s", r.Body)
	}
	if r.Header.Get(HeaderDelivery) != msg.ID || len(msg.ID) != 32 || r.Header.Get(HeaderTimestamp) == "" ||
		r.Header.Get("X-Team") != "shop" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v, id %q", r.Header, msg.ID)
	}
}

func TestSlackBody(t *testing.T) {
	chat := notifytest.NewReceiver(t)
	n := startNotifier(t, `
destinations:
- name: chat
  slack: {urlSecretKey: slack}
subscriptions:
- name: prod
  triggers: [OutOfSync]
  destinations: [chat]
`, map[string][]byte{"slack": []byte(chat.URL + "/services/T0/B0/x")})
	drift(n)
	fixture.WaitFor(t, "one request", func() bool { return len(chat.Requests()) == 1 })
	var body map[string]any
	if err := json.Unmarshal(chat.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	text, _ := body["text"].(string)
	if len(body) != 1 || text != ":warning: *OutOfSync* Application ns/web is OutOfSync with 1a2b3c4d (project default, no destination)" {
		t.Errorf("Slack body = %v", body)
	}
}

func TestSummaryNamesTheDestination(t *testing.T) {
	for _, tc := range []struct {
		dest navarchv1.ApplicationDestination
		want string
	}{
		{navarchv1.ApplicationDestination{}, "(project default, no destination)"},
		{navarchv1.ApplicationDestination{Name: "east"}, "(project default, destination east)"},
		{navarchv1.ApplicationDestination{Name: "east", Namespace: "web"}, "(project default, destination east/web)"},
		{navarchv1.ApplicationDestination{Server: "https://east.example:6443", Namespace: "web"}, "(project default, destination https://east.example:6443/web)"},
	} {
		a := app(navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy, "", 0)
		a.Spec.Destination = tc.dest
		if got := ApplicationMessage(OutOfSync, a, time.Now()).Summary; !strings.HasSuffix(got, " "+tc.want) || strings.Contains(got, " )") {
			t.Errorf("destination %+v: summary %q, want it to end with %q", tc.dest, got, tc.want)
		}
	}
}

// A webhook that redirects elsewhere is not followed: the other host never sees the
// signature or the configured headers, and the delivery fails at once, as a 404 does.
func TestRedirectsAreNotFollowed(t *testing.T) {
	elsewhere := notifytest.NewReceiver(t)
	redirecting := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/collect", http.StatusTemporaryRedirect))
	t.Cleanup(redirecting.Close)
	n := startNotifier(t, `
destinations:
- name: ops
  webhook: {url: '`+redirecting.URL+`', hmacSecretKey: hmac, headers: {X-Api-Key: team-token}}
subscriptions:
- {name: all, triggers: [OutOfSync], destinations: [ops]}
`, map[string][]byte{"hmac": []byte("s3cret")})
	failedBefore := failures("ops")
	drift(n)
	fixture.WaitFor(t, "the delivery to fail", func() bool {
		return failures("ops") > failedBefore
	})
	if got := len(elsewhere.Requests()); got != 0 {
		t.Errorf("the redirect's target received %d requests, with headers %v", got, elsewhere.Requests()[0].Header)
	}
	if got := n.pendingRetries(); got != 0 {
		t.Errorf("a redirect is retried (%d pending), want a final failure", got)
	}

	// A caller's client that would follow redirects does not.
	own := &http.Client{Timeout: time.Second}
	if New(Options{HTTPClient: own}).opts.HTTPClient.CheckRedirect == nil || own.CheckRedirect != nil {
		t.Errorf("a caller's HTTP client follows redirects, or was modified")
	}
}

// failures reads navarch_notifications_failed_total for dest's OutOfSync messages.
func failures(dest string) float64 {
	var m dto.Metric
	if err := failedTotal.WithLabelValues(dest, string(OutOfSync)).Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// A 429 or 503 with Retry-After is retried no sooner than it says, however short the backoff.
func TestRetryAfterIsHonoured(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		times = append(times, time.Now())
		if len(times) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	t.Cleanup(busy.Close)
	n := startNotifier(t, `
destinations:
- {name: busy, webhook: {url: '`+busy.URL+`'}}
subscriptions:
- {name: all, triggers: [OutOfSync], destinations: [busy]}
`, nil)
	drift(n)
	fixture.WaitFor(t, "the retry", func() bool { mu.Lock(); defer mu.Unlock(); return len(times) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if gap := times[1].Sub(times[0]); gap < time.Second {
		t.Errorf("retried %s after a 429 with Retry-After: 1, want at least 1s (the backoff is 10ms)", gap)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"86400", maxRetryAfter, true},
		{"99999999999999999", maxRetryAfter, true},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{now.Add(24 * time.Hour).Format(http.TimeFormat), maxRetryAfter, true},
	} {
		got, ok := retryAfter(tc.value, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %s, %v; want %s, %v", tc.value, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoffDoublesUpToItsCap(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 10: maxBackoff, 200: maxBackoff} {
		if got := backoff(time.Second, attempt); got != want {
			t.Errorf("backoff after attempt %d = %s, want %s", attempt, got, want)
		}
	}
}

// When the Notifier stops, the retries waiting are abandoned at once: no timer outlives it
// and the receiver hears nothing more.
func TestStopAbandonsPendingRetries(t *testing.T) {
	down := notifytest.NewReceiver(t, 500, 500, 500, 500)
	cfg, err := Parse(map[string]string{ConfigKey: `
destinations:
- {name: down, webhook: {url: '` + down.URL + `'}}
subscriptions:
- {name: all, triggers: [OutOfSync], destinations: [down]}
`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := New(Options{Backoff: time.Second})
	n.SetConfig(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = n.Start(ctx); close(done) }()
	drift(n)
	fixture.WaitFor(t, "a retry waiting", func() bool { return n.pendingRetries() == 1 })
	cancel()
	<-done
	if got := n.pendingRetries(); got != 0 {
		t.Errorf("%d retries still pending after Start returned", got)
	}
	n.retryAfter(&delivery{}, time.Millisecond)
	if got := n.pendingRetries(); got != 0 {
		t.Errorf("a retry was scheduled after Start returned")
	}
	deadline := time.Now().Add(1500 * time.Millisecond) // past the first retry's backoff
	for time.Now().Before(deadline) {
		if got := len(down.Requests()); got != 1 {
			t.Fatalf("the receiver got %d requests after the Notifier stopped, want 1", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRetriesUntilTheReceiverAccepts(t *testing.T) {
	flaky := notifytest.NewReceiver(t, 500, 503, 200)
	gone := notifytest.NewReceiver(t, 404, 200)
	n := startNotifier(t, `
destinations:
- {name: flaky, webhook: {url: '`+flaky.URL+`'}}
- {name: gone, webhook: {url: '`+gone.URL+`'}}
subscriptions:
- {name: all, triggers: [OutOfSync], destinations: [flaky, gone]}
`, nil)
	drift(n)
	fixture.WaitFor(t, "three attempts", func() bool { return len(flaky.Requests()) == 3 })
	reqs := flaky.Requests()
	if id := reqs[0].Header.Get(HeaderDelivery); id == "" || reqs[1].Header.Get(HeaderDelivery) != id || reqs[2].Header.Get(HeaderDelivery) != id {
		t.Errorf("retries carry delivery ids %q, %q, %q; want one id", id, reqs[1].Header.Get(HeaderDelivery), reqs[2].Header.Get(HeaderDelivery))
	}
	// A 404 is final: the receiver answers 200 next time, but there is no next time.
	time.Sleep(200 * time.Millisecond) // 20 times the first backoff
	if got := len(gone.Requests()); got != 1 {
		t.Errorf("a destination answering 404 got %d attempts, want 1", got)
	}
	if got := len(flaky.Requests()); got != 3 {
		t.Errorf("after a success, %d attempts, want 3", got)
	}
}

func TestOneMessagePerDestination(t *testing.T) {
	hook := notifytest.NewReceiver(t)
	n := startNotifier(t, `
destinations:
- {name: ops, webhook: {url: '`+hook.URL+`'}}
subscriptions:
- {name: prod, triggers: [OutOfSync], destinations: [ops], selector: {labels: env=prod}}
- {name: all, triggers: [OutOfSync, Degraded], destinations: [ops]}
- {name: dev, triggers: [OutOfSync], destinations: [ops], selector: {labels: env=dev}}
`, nil)
	drift(n)
	set := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{UID: "s", Name: "apps", Namespace: "ns"}}
	n.ApplicationSet(set)
	fixture.WaitFor(t, "one request", func() bool { return len(hook.Requests()) == 1 })
	time.Sleep(100 * time.Millisecond)
	if got := len(hook.Requests()); got != 1 {
		t.Errorf("%d requests, want 1 for two matching subscriptions", got)
	}
	if !strings.Contains(string(hook.Requests()[0].Body), `"subscription":"prod"`) {
		t.Errorf("body %s, want the first matching subscription", hook.Requests()[0].Body)
	}
}

func ExampleSign() {
	body := []byte(`{"id":"0f3c","trigger":"OutOfSync"}`)
	// A receiver compares this with the X-Navarch-Signature header, in constant time.
	// X-Navarch-Timestamp is signed with the body: a receiver rejects old timestamps.
	fmt.Println(Sign([]byte("key"), "1767225600", body))
	// Output: sha256=84eb58195d053c341cd0479b199db90b7d299073cd6833e9acf8ae2e32425c3a
}
