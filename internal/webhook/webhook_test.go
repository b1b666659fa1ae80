package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
)

var secret = []byte("It's a Secret to Everybody")

// server serves a Handler over real HTTP and records its logs and results.
type server struct {
	*httptest.Server
	h *Handler

	mu      sync.Mutex
	logs    []string
	results []string
}

func newServer(t *testing.T, opts Options) *server {
	t.Helper()
	s := &server{}
	if opts.Secret == nil {
		opts.Secret = func(context.Context) ([]byte, error) { return secret, nil }
	}
	opts.Logger = funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.logs = append(s.logs, args)
	}, funcr.Options{Verbosity: 1})
	opts.Observe = func(event string, r Result) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.results = append(s.results, event+" "+string(r))
	}
	s.h = New(opts)
	mux := http.NewServeMux()
	mux.Handle(Path, s.h)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// delivery is one request to the endpoint.
type delivery struct {
	method, event, id, contentType string
	body                           []byte
	// signature: "" signs body with secret; "-" sends none.
	signature string
	// chunked hides the length of the body, as a client streaming it does.
	chunked bool
}

func (s *server) deliver(t *testing.T, d delivery) (int, string) {
	t.Helper()
	if d.method == "" {
		d.method = http.MethodPost
	}
	var body io.Reader = bytes.NewReader(d.body)
	if d.chunked {
		body = io.MultiReader(body) // no length known to the client
	}
	req, err := http.NewRequest(d.method, s.URL+Path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(HeaderEvent, d.event)
	req.Header.Set(HeaderDelivery, d.id)
	if d.contentType == "" {
		d.contentType = "application/json"
	}
	req.Header.Set("Content-Type", d.contentType)
	switch d.signature {
	case "":
		req.Header.Set(HeaderSignature, Sign(secret, d.body))
	case "-":
	default:
		req.Header.Set(HeaderSignature, d.signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(text)
}

func TestDeliveries(t *testing.T) {
	otherBody := []byte(strings.Replace(pushPayload, "refs/heads/main", "refs/heads/release", 1))
	big := append([]byte(pushPayload[:len(pushPayload)-1]), []byte(`, "padding": "`+strings.Repeat("x", 2<<20)+`"}`)...)
	form := []byte("payload=" + url.QueryEscape(pushPayload))
	for _, tc := range []struct {
		name   string
		d      delivery
		status int
		result string
	}{
		{"a signed push is queued", delivery{event: EventPush, body: []byte(pushPayload)}, http.StatusAccepted, "push queued"},
		{"a signed pull request is queued", delivery{event: EventPullRequest, body: []byte(pullRequestPayload)}, http.StatusAccepted, "pull_request queued"},
		{"a form-encoded push is queued", delivery{event: EventPush, body: form, contentType: "application/x-www-form-urlencoded"}, http.StatusAccepted, "push queued"},
		{"ping", delivery{event: EventPing, body: []byte(`{"zen": "Keep it logically awesome.", "hook_id": 1}`)}, http.StatusOK, "ping ping"},
		{"wrong signature", delivery{event: EventPush, body: []byte(pushPayload), signature: Sign([]byte("guess"), []byte(pushPayload))}, http.StatusUnauthorized, "push unauthorized"},
		{"no signature", delivery{event: EventPush, body: []byte(pushPayload), signature: "-"}, http.StatusUnauthorized, "push unauthorized"},
		{"a SHA-1 signature only", delivery{event: EventPush, body: []byte(pushPayload), signature: "sha1=0123"}, http.StatusUnauthorized, "push unauthorized"},
		{"signature not hex", delivery{event: EventPush, body: []byte(pushPayload), signature: "sha256=zz"}, http.StatusUnauthorized, "push unauthorized"},
		{"another delivery's signature", delivery{event: EventPush, body: otherBody, signature: Sign(secret, []byte(pushPayload))}, http.StatusUnauthorized, "push unauthorized"},
		{"too large, length announced", delivery{event: EventPush, body: big}, http.StatusRequestEntityTooLarge, "push too_large"},
		{"too large, length hidden", delivery{event: EventPush, body: big, chunked: true}, http.StatusRequestEntityTooLarge, "push too_large"},
		{"GET", delivery{method: http.MethodGet, event: EventPush}, http.StatusMethodNotAllowed, "push method_not_allowed"},
		{"PUT", delivery{method: http.MethodPut, event: EventPush, body: []byte(pushPayload)}, http.StatusMethodNotAllowed, "push method_not_allowed"},
		{"an event not acted on", delivery{event: "issues", body: []byte(`{"action": "opened"}`)}, http.StatusOK, "other ignored"},
		{"a pull request action not acted on", delivery{event: EventPullRequest, body: []byte(strings.Replace(pullRequestPayload, "synchronize", "assigned", 1))}, http.StatusOK, "pull_request ignored"},
		{"a signed payload that does not parse", delivery{event: EventPush, body: []byte(`{"ref": 1}`)}, http.StatusBadRequest, "push bad_payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, Options{})
			tc.d.id = "delivery-" + strings.ReplaceAll(tc.name, " ", "-")
			status, text := s.deliver(t, tc.d)
			if status != tc.status {
				t.Errorf("status %d (%q), want %d", status, text, tc.status)
			}
			if len(s.results) != 1 || s.results[0] != tc.result {
				t.Errorf("results %q, want [%q]", s.results, tc.result)
			}
			for _, line := range s.logs {
				if strings.Contains(line, string(secret)) || strings.Contains(line, "apps/web/deploy.yaml") || strings.Contains(line, "xxxxxxxx") {
					t.Errorf("a log line holds the secret or the payload: %s", line)
				}
			}
			if tc.status >= 400 && !logged(s.logs, "Webhook delivery refused", tc.d.id) {
				t.Errorf("no log line names the refused delivery %s: %q", tc.d.id, s.logs)
			}
		})
	}
}

func logged(lines []string, msg, delivery string) bool {
	for _, l := range lines {
		if strings.Contains(l, msg) && strings.Contains(l, fmt.Sprintf("%q", delivery)) {
			return true
		}
	}
	return false
}

// Without a secret there is no way to tell GitHub from anyone else: every delivery is refused,
// and nothing is queued.
func TestNoSecretRefusesEverything(t *testing.T) {
	for name, get := range map[string]func(context.Context) ([]byte, error){
		"empty":      func(context.Context) ([]byte, error) { return nil, nil },
		"unreadable": func(context.Context) ([]byte, error) { return nil, errors.New("secrets is forbidden") },
	} {
		s := newServer(t, Options{Secret: get})
		for _, sig := range []string{"-", Sign(nil, []byte(pushPayload)), Sign(secret, []byte(pushPayload))} {
			if status, text := s.deliver(t, delivery{event: EventPush, body: []byte(pushPayload), signature: sig}); status != http.StatusServiceUnavailable {
				t.Errorf("%s secret, signature %q: status %d (%q), want 503", name, sig, status, text)
			}
		}
		if n := len(s.h.queue); n != 0 {
			t.Errorf("%s secret: %d events queued", name, n)
		}
	}
}

// A full queue refuses with 503, which GitHub shows as a failed delivery; the worker taking an
// event makes room again.
func TestQueueFull(t *testing.T) {
	s := newServer(t, Options{QueueSize: 2})
	push := delivery{event: EventPush, body: []byte(pushPayload)}
	for i, want := range []int{http.StatusAccepted, http.StatusAccepted, http.StatusServiceUnavailable} {
		if status, text := s.deliver(t, push); status != want {
			t.Fatalf("delivery %d: status %d (%q), want %d", i+1, status, text, want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Event)
	done := make(chan error)
	go func() { done <- s.h.Run(ctx, func(_ context.Context, ev Event) { got <- ev }) }()
	for range 2 {
		select {
		case ev := <-got:
			if ev.Name != EventPush || ev.Push == nil || ev.Push.Repository.FullName() != "Acme/Platform" {
				t.Errorf("worker got %+v", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the worker got no event")
		}
	}
	go func() {
		ev := <-got
		if ev.PullRequest == nil || ev.PullRequest.Number != 42 {
			t.Errorf("worker got %+v", ev)
		}
	}()
	if status, text := s.deliver(t, delivery{event: EventPullRequest, body: []byte(pullRequestPayload)}); status != http.StatusAccepted {
		t.Errorf("delivery after the queue drained: status %d (%q), want 202", status, text)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"zen": "Design for failure."}`)
	// GitHub's documented example: secret "It's a Secret to Everybody", payload "Hello, World!".
	if !Verify(secret, []byte("Hello, World!"), "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17") {
		t.Errorf("GitHub's documented example does not verify")
	}
	for _, tc := range []struct {
		name      string
		secret    []byte
		signature string
		want      bool
	}{
		{"signed", secret, Sign(secret, body), true},
		{"upper-case hex", secret, "sha256=" + strings.ToUpper(strings.TrimPrefix(Sign(secret, body), "sha256=")), true},
		{"other secret", secret, Sign([]byte("other"), body), false},
		{"empty secret", nil, Sign(nil, body), false},
		{"no prefix", secret, strings.TrimPrefix(Sign(secret, body), "sha256="), false},
		{"truncated", secret, Sign(secret, body)[:40], false},
		{"empty", secret, "", false},
	} {
		if got := Verify(tc.secret, body, tc.signature); got != tc.want {
			t.Errorf("%s: Verify = %t, want %t", tc.name, got, tc.want)
		}
	}
}
