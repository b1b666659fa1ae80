package githubserver_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-github/v57/github"

	"github.com/navarch-io/navarch/internal/githubserver"
)

// uuidPattern matches a version 4 UUID, the form of X-GitHub-Delivery.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// delivery is a webhook a receiver accepted.
type delivery struct {
	event   string
	payload any // go-github's type for the event
}

// receiver is a webhook endpoint that checks each delivery as a GitHub
// webhook receiver must: the HMAC-SHA256 signature of the body with the
// shared secret, and GitHub's headers.
type receiver struct {
	t      *testing.T
	secret string
	srv    *httptest.Server

	mu  sync.Mutex
	got []delivery
}

// newReceiver starts a receiver that verifies signatures with secret.
func newReceiver(t *testing.T, secret string) *receiver {
	t.Helper()
	rc := &receiver{t: t, secret: secret}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rc.t.Errorf("receiver: read body: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	mac := hmac.New(sha256.New, []byte(rc.secret))
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if got := r.Header.Get("X-Hub-Signature-256"); !hmac.Equal([]byte(got), []byte(want)) {
		rc.t.Errorf("receiver: X-Hub-Signature-256 = %q, want %q", got, want)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	for name, ok := range map[string]bool{
		"Content-Type":      r.Header.Get("Content-Type") == "application/json",
		"User-Agent":        strings.HasPrefix(r.Header.Get("User-Agent"), "GitHub-Hookshot/"),
		"X-GitHub-Delivery": uuidPattern.MatchString(r.Header.Get("X-GitHub-Delivery")),
		"method":            r.Method == http.MethodPost,
	} {
		if !ok {
			rc.t.Errorf("receiver: unexpected %s in %s %v", name, r.Method, r.Header)
		}
	}
	event := r.Header.Get("X-GitHub-Event")
	payload, err := github.ParseWebHook(event, body)
	if err != nil {
		rc.t.Errorf("receiver: go-github cannot parse the %s payload: %v", event, err)
	}
	rc.mu.Lock()
	rc.got = append(rc.got, delivery{event: event, payload: payload})
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// take returns and forgets what the receiver got so far.
func (rc *receiver) take() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	got := rc.got
	rc.got = nil
	return got
}

// describe names deliveries as event/action for comparison.
func describe(ds []delivery) string {
	var names []string
	for _, d := range ds {
		name := d.event
		if ev, ok := d.payload.(*github.PullRequestEvent); ok {
			name += "/" + ev.GetAction()
		}
		names = append(names, name)
	}
	return strings.Join(names, " ")
}

func TestChangesDeliverSignedWebhooks(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	first := newReceiver(t, "s3cret")
	second := newReceiver(t, "another")
	s.AddHook("acme", "app", first.srv.URL, first.secret)
	s.AddHook("acme", "app", second.srv.URL, second.secret)
	s.AddRepo("acme", "quiet", githubserver.Repo{})

	pr := func(t *testing.T, d delivery) *github.PullRequestEvent {
		t.Helper()
		ev, ok := d.payload.(*github.PullRequestEvent)
		if !ok {
			t.Fatalf("payload is %T, want *github.PullRequestEvent", d.payload)
		}
		if ev.GetRepo().GetFullName() != "acme/app" || ev.GetSender().GetLogin() == "" {
			t.Errorf("repository %q, sender %q; want acme/app and a sender", ev.GetRepo().GetFullName(), ev.GetSender().GetLogin())
		}
		if ev.GetNumber() != 1 || ev.GetPullRequest().GetNumber() != 1 {
			t.Errorf("number = %d / %d, want 1", ev.GetNumber(), ev.GetPullRequest().GetNumber())
		}
		return ev
	}
	steps := []struct {
		name   string
		change func()
		want   string
		check  func(t *testing.T, got []delivery)
	}{
		{"open", func() {
			s.OpenPR("acme", "app", githubserver.PullRequest{Title: "Login", Head: "feature/login", Author: "alice", Labels: []string{"preview"}})
		}, "pull_request/opened", func(t *testing.T, got []delivery) {
			ev := pr(t, got[0])
			p := ev.GetPullRequest()
			if p.GetState() != "open" || p.GetHead().GetSHA() != sha("login") || p.GetHead().GetRef() != "feature/login" ||
				p.GetUser().GetLogin() != "alice" || len(p.Labels) != 1 || p.GetBase().GetRepo().GetFullName() != "acme/app" {
				t.Errorf("pull_request = %+v", p)
			}
		}},
		{"push to the pull request", func() { s.PushPR("acme", "app", 1, sha("second")) },
			"pull_request/synchronize", func(t *testing.T, got []delivery) {
				ev := pr(t, got[0])
				if ev.GetBefore() != sha("login") || ev.GetAfter() != sha("second") || ev.GetPullRequest().GetHead().GetSHA() != sha("second") {
					t.Errorf("before %s, after %s, head %s", ev.GetBefore(), ev.GetAfter(), ev.GetPullRequest().GetHead().GetSHA())
				}
			}},
		{"add a label", func() {
			s.EditPR("acme", "app", 1, func(p *githubserver.PullRequest) { p.Labels = append(p.Labels, "team:web") })
		}, "pull_request/labeled", func(t *testing.T, got []delivery) {
			ev := pr(t, got[0])
			if ev.GetLabel().GetName() != "team:web" || len(ev.GetPullRequest().Labels) != 2 {
				t.Errorf("label %q, %d labels; want team:web of 2", ev.GetLabel().GetName(), len(ev.GetPullRequest().Labels))
			}
		}},
		{"remove a label", func() {
			s.EditPR("acme", "app", 1, func(p *githubserver.PullRequest) { p.Labels = []string{"team:web"} })
		}, "pull_request/unlabeled", func(t *testing.T, got []delivery) {
			if ev := pr(t, got[0]); ev.GetLabel().GetName() != "preview" {
				t.Errorf("label = %q, want preview", ev.GetLabel().GetName())
			}
		}},
		{"retitle", func() {
			s.EditPR("acme", "app", 1, func(p *githubserver.PullRequest) { p.Title = "Login page" })
		}, "pull_request/edited", func(t *testing.T, got []delivery) {
			ev := pr(t, got[0])
			if ev.GetChanges().GetTitle().GetFrom() != "Login" || ev.GetPullRequest().GetTitle() != "Login page" {
				t.Errorf("changes.title.from %q, title %q", ev.GetChanges().GetTitle().GetFrom(), ev.GetPullRequest().GetTitle())
			}
		}},
		{"edit that changes nothing", func() {
			s.EditPR("acme", "app", 1, func(*githubserver.PullRequest) {})
		}, "", nil},
		{"push the head branch", func() { s.Push("acme", "app", "feature/login", sha("third")) },
			"push pull_request/synchronize", func(t *testing.T, got []delivery) {
				push, ok := got[0].payload.(*github.PushEvent)
				if !ok {
					t.Fatalf("payload is %T, want *github.PushEvent", got[0].payload)
				}
				repo := push.GetRepo()
				if push.GetRef() != "refs/heads/feature/login" || push.GetBefore() != sha("second") || push.GetAfter() != sha("third") ||
					repo.GetName() != "app" || repo.GetFullName() != "acme/app" || repo.GetOwner().GetLogin() != "acme" ||
					repo.GetOwner().GetName() != "acme" || repo.GetCloneURL() != s.URL()+"/acme/app.git" ||
					repo.GetHTMLURL() != s.URL()+"/acme/app" || repo.GetDefaultBranch() != "main" || push.GetCreated() {
					t.Errorf("push = %+v, repository = %+v", push, repo)
				}
				if ev := pr(t, got[1]); ev.GetAfter() != sha("third") {
					t.Errorf("synchronize after = %s, want %s", ev.GetAfter(), sha("third"))
				}
			}},
		{"push another branch", func() { s.Push("acme", "app", "docs", sha("docs")) },
			"push", func(t *testing.T, got []delivery) {
				if push := got[0].payload.(*github.PushEvent); !push.GetCreated() || push.GetBefore() != strings.Repeat("0", 40) {
					t.Errorf("new branch: created %v, before %s", push.GetCreated(), push.GetBefore())
				}
			}},
		{"push the same commit again", func() { s.Push("acme", "app", "docs", sha("docs")) }, "", nil},
		{"merge", func() { s.ClosePR("acme", "app", 1, true) },
			"pull_request/closed", func(t *testing.T, got []delivery) {
				if p := pr(t, got[0]).GetPullRequest(); !p.GetMerged() || p.GetState() != "closed" || p.MergedAt == nil {
					t.Errorf("merged %v, state %s, merged_at %v", p.GetMerged(), p.GetState(), p.MergedAt)
				}
			}},
		{"close again", func() { s.ClosePR("acme", "app", 1, false) }, "", nil},
		{"a repository without hooks", func() {
			s.OpenPR("acme", "quiet", githubserver.PullRequest{Head: "x"})
		}, "", nil},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.change()
			// Deliveries are synchronous: they have arrived when the
			// change returns.
			got, other := first.take(), second.take()
			if describe(got) != step.want || describe(other) != step.want {
				t.Fatalf("deliveries = %q and %q, want %q at each hook", describe(got), describe(other), step.want)
			}
			if step.check != nil {
				step.check(t, got)
			}
		})
	}

	for _, d := range s.Deliveries() {
		if d.StatusCode != http.StatusNoContent || d.Err != nil || !uuidPattern.MatchString(d.ID) {
			t.Errorf("delivery %+v, want each answered 204", d)
		}
	}
	if got := len(s.Deliveries()); got != 2*9 {
		t.Errorf("Deliveries() has %d entries, want 18 (9 events at 2 hooks)", got)
	}
}

func TestFailedDeliveriesAreRecordedNotFatal(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer refusing.Close()
	s.AddHook("acme", "app", downURL, "x")
	s.AddHook("acme", "app", refusing.URL, "x")

	n := s.OpenPR("acme", "app", githubserver.PullRequest{Head: "feature/login"})
	if n != 1 {
		t.Errorf("OpenPR = %d, want 1", n)
	}
	got := s.Deliveries()
	if len(got) != 2 {
		t.Fatalf("Deliveries() = %+v, want 2", got)
	}
	if got[0].URL != downURL || got[0].Err == nil || got[0].StatusCode != 0 {
		t.Errorf("delivery to a stopped receiver = %+v, want an error and no status", got[0])
	}
	if got[1].URL != refusing.URL || got[1].Err != nil || got[1].StatusCode != http.StatusInternalServerError ||
		got[1].Event != "pull_request" || got[1].Action != "opened" {
		t.Errorf("delivery to a refusing receiver = %+v, want pull_request/opened answered 500", got[1])
	}
}

func TestDeliver(t *testing.T) {
	s := startServer(t)
	rc := newReceiver(t, "shh")
	resp, err := s.Deliver(context.Background(), rc.srv.URL, rc.secret, "ping", map[string]any{"zen": "Keep it logically awesome.", "hook_id": 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("status = %d, want the receiver's 204", resp.StatusCode)
	}
	got := rc.take()
	if len(got) != 1 {
		t.Fatalf("receiver got %d deliveries, want 1", len(got))
	}
	if ping, ok := got[0].payload.(*github.PingEvent); !ok || ping.GetZen() != "Keep it logically awesome." {
		t.Errorf("payload = %#v, want the ping", got[0].payload)
	}

	// Without a secret GitHub sends no signature.
	signatures := make(chan []string, 1)
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		signatures <- r.Header.Values("X-Hub-Signature-256")
	}))
	defer bare.Close()
	resp, err = s.Deliver(context.Background(), bare.URL, "", "push", []byte(`{"ref":"refs/heads/main"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if signature := <-signatures; len(signature) != 0 {
		t.Errorf("X-Hub-Signature-256 = %v without a secret, want none", signature)
	}
	if d := s.Deliveries(); len(d) != 2 || d[0].Event != "ping" || d[1].Event != "push" {
		t.Errorf("Deliveries() = %+v, want the ping and the push", d)
	}
}
