package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// receiver is a real HTTP server that answers each request with the next status of
// statuses (200 once they run out) and keeps what it received.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []received
}

type received struct {
	header http.Header
	body   []byte
	status int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := http.StatusOK
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		r.got = append(r.got, received{req.Header.Clone(), body, status})
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startNotifier runs a Notifier with config until the test ends.
func startNotifier(t *testing.T, config string, secret map[string][]byte) *Notifier {
	t.Helper()
	cfg, err := Parse(map[string]string{ConfigKey: config}, secret)
	if err != nil {
		t.Fatal(err)
	}
	n := New(Options{Backoff: 10 * time.Millisecond})
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

func TestWebhookBodyIsSignedWithTheSecretKey(t *testing.T) {
	hook := newReceiver(t)
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
	waitFor(t, "one request", func() bool { return len(hook.requests()) == 1 })
	r := hook.requests()[0]

	// What a receiver does: recompute the HMAC of the raw body with the shared key.
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write(r.body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(r.header.Get(HeaderSignature)), []byte(want)) {
		t.Errorf("%s = %q, want %q", HeaderSignature, r.header.Get(HeaderSignature), want)
	}
	var msg Message
	if err := json.Unmarshal(r.body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Trigger != OutOfSync || msg.Severity != "warning" || msg.Subscription != "prod" || msg.Application == nil ||
		msg.Application.Name != "web" || msg.Application.Sync != navarchv1.SyncStatusOutOfSync || msg.Application.Project != "default" {
		t.Errorf("body = %s", r.body)
	}
	if r.header.Get(HeaderDelivery) != msg.ID || len(msg.ID) != 32 || r.header.Get(HeaderTimestamp) == "" ||
		r.header.Get("X-Team") != "shop" || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("headers = %v, id %q", r.header, msg.ID)
	}
}

func TestSlackBody(t *testing.T) {
	chat := newReceiver(t)
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
	waitFor(t, "one request", func() bool { return len(chat.requests()) == 1 })
	var body map[string]any
	if err := json.Unmarshal(chat.requests()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	text, _ := body["text"].(string)
	if len(body) != 1 || text != ":warning: *OutOfSync* Application ns/web is OutOfSync with 1a2b3c4d (project default, destination )" {
		t.Errorf("Slack body = %v", body)
	}
}

func TestRetriesUntilTheReceiverAccepts(t *testing.T) {
	flaky := newReceiver(t, 500, 503, 200)
	gone := newReceiver(t, 404, 200)
	n := startNotifier(t, `
destinations:
- {name: flaky, webhook: {url: '`+flaky.URL+`'}}
- {name: gone, webhook: {url: '`+gone.URL+`'}}
subscriptions:
- {name: all, triggers: [OutOfSync], destinations: [flaky, gone]}
`, nil)
	drift(n)
	waitFor(t, "three attempts", func() bool { return len(flaky.requests()) == 3 })
	reqs := flaky.requests()
	if id := reqs[0].header.Get(HeaderDelivery); id == "" || reqs[1].header.Get(HeaderDelivery) != id || reqs[2].header.Get(HeaderDelivery) != id {
		t.Errorf("retries carry delivery ids %q, %q, %q; want one id", id, reqs[1].header.Get(HeaderDelivery), reqs[2].header.Get(HeaderDelivery))
	}
	// A 404 is final: the receiver answers 200 next time, but there is no next time.
	time.Sleep(200 * time.Millisecond) // 20 times the first backoff
	if got := len(gone.requests()); got != 1 {
		t.Errorf("a destination answering 404 got %d attempts, want 1", got)
	}
	if got := len(flaky.requests()); got != 3 {
		t.Errorf("after a success, %d attempts, want 3", got)
	}
}

func TestOneMessagePerDestination(t *testing.T) {
	hook := newReceiver(t)
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
	waitFor(t, "one request", func() bool { return len(hook.requests()) == 1 })
	time.Sleep(100 * time.Millisecond)
	if got := len(hook.requests()); got != 1 {
		t.Errorf("%d requests, want 1 for two matching subscriptions", got)
	}
	if !strings.Contains(string(hook.requests()[0].body), `"subscription":"prod"`) {
		t.Errorf("body %s, want the first matching subscription", hook.requests()[0].body)
	}
}

func ExampleSign() {
	body := []byte(`{"id":"0f3c","trigger":"OutOfSync"}`)
	// A receiver compares this with the X-Navarch-Signature header, in constant time.
	fmt.Println(Sign([]byte("key"), body))
	// Output: sha256=b9a3345db229fe2c3a9112ba48c3353cd2597296c8a8e0bf8a8f6200a59f6432
}
