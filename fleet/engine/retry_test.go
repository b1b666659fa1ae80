package engine

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestBackoff(t *testing.T) {
	factor := func(f int64) *int64 { return &f }
	tests := []struct {
		name    string
		backoff *navarchv1.Backoff
		waits   []time.Duration // before retries 1, 2, 3, …
	}{
		{name: "defaults: 5s, factor 2, at most 3m", waits: []time.Duration{
			5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 3 * time.Minute, 3 * time.Minute,
		}},
		{name: "issue 11's strategy", backoff: &navarchv1.Backoff{Duration: "2s", Factor: factor(2), MaxDuration: "20s"}, waits: []time.Duration{
			2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 20 * time.Second, 20 * time.Second,
		}},
		{name: "factor 1 keeps the wait", backoff: &navarchv1.Backoff{Duration: "1m", Factor: factor(1)}, waits: []time.Duration{
			time.Minute, time.Minute, time.Minute,
		}},
		{name: "a factor below 1 is 2", backoff: &navarchv1.Backoff{Duration: "1s", Factor: factor(0)}, waits: []time.Duration{
			time.Second, 2 * time.Second, 4 * time.Second,
		}},
		{name: "bare numbers are seconds", backoff: &navarchv1.Backoff{Duration: "3", MaxDuration: "10"}, waits: []time.Duration{
			3 * time.Second, 6 * time.Second, 10 * time.Second,
		}},
		{name: "a duration above the maximum is cut", backoff: &navarchv1.Backoff{Duration: "5m"}, waits: []time.Duration{
			3 * time.Minute, 3 * time.Minute,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for n, want := range tc.waits {
				if got := backoff(tc.backoff, int64(n)); got != want {
					t.Errorf("wait before retry %d = %s, want %s", n+1, got, want)
				}
			}
		})
	}
	// A long-running unlimited retry must not overflow.
	if got := backoff(nil, 1<<40); got != 3*time.Minute {
		t.Errorf("wait before retry 2^40 = %s, want 3m", got)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5s", 5 * time.Second, true},
		{"1m30s", 90 * time.Second, true},
		{"10", 10 * time.Second, true},
		{"0.5", 500 * time.Millisecond, true},
		{"", 0, false},
		{"soon", 0, false},
	}
	for _, tc := range tests {
		if got, ok := parseDuration(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("parseDuration(%q) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	spec := &navarchv1.RetryStrategy{Limit: 2, Backoff: &navarchv1.Backoff{Duration: "1s"}}
	own := &navarchv1.RetryStrategy{Limit: -1, Backoff: &navarchv1.Backoff{Duration: "7s"}}
	tests := []struct {
		name     string
		spec, op *navarchv1.RetryStrategy
		retries  int64
		want     time.Duration
		ok       bool
	}{
		{name: "no strategy: no retry"},
		{name: "the Application's strategy", spec: spec, want: time.Second, ok: true},
		{name: "the second retry waits twice as long", spec: spec, retries: 1, want: 2 * time.Second, ok: true},
		{name: "the limit is reached", spec: spec, retries: 2},
		{name: "the operation's strategy wins", spec: spec, op: own, retries: 2, want: 28 * time.Second, ok: true},
		{name: "limit 0 retries never", spec: &navarchv1.RetryStrategy{}},
	}
	e := New(Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := &navarchv1.Application{}
			app.Spec.SyncPolicy = &navarchv1.SyncPolicy{Retry: tc.spec}
			app.Status.OperationState = &navarchv1.OperationState{Operation: navarchv1.Operation{Retry: tc.op}, RetryCount: tc.retries}
			if got, ok := e.retryAfter(app); got != tc.want || ok != tc.ok {
				t.Errorf("retryAfter = %s, %v; want %s, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// Attempt ids differ for operations started within the same second, and for every retry; a
// retry's id is recorded with its schedule, before the attempt runs.
func TestAttemptIDs(t *testing.T) {
	app := &navarchv1.Application{}
	app.Name, app.UID = "shop", "app-uid"
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	first := attemptID(app, &navarchv1.OperationState{StartedAt: metav1.NewTime(at)})
	second := attemptID(app, &navarchv1.OperationState{StartedAt: metav1.NewTime(at.Add(time.Millisecond))})
	ids := []string{first, second, retryID(first, 1), retryID(first, 2), retryID(second, 1)}
	seen := map[string]bool{}
	for _, id := range ids {
		if len(id) != 5 || seen[id] {
			t.Errorf("ids %v: want 5 hex characters each, all distinct", ids)
			break
		}
		seen[id] = true
	}
	if again := retryID(first, 1); again != ids[2] {
		t.Error("retryID is not deterministic")
	}

	h := newHarness(t, widgetManifest)
	h.app.Spec.SyncPolicy.Retry = retry(3, "1s")
	h.start(navarchv1.SyncOperation{})
	id := h.state().ID
	if id == "" {
		t.Fatal("the operation started without an attempt id")
	}
	if out := h.pass(false); out.kind != kindWait || out.reason != waitRetry {
		t.Fatalf("pass: %s, want a retry", out)
	}
	if got := h.state().ID; got != retryID(id, 1) {
		t.Errorf("id while waiting for retry 1: %q, want %q", got, retryID(id, 1))
	}
}
