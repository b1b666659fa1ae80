package scm

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
	"github.com/navarch-io/navarch/internal/githubserver"
)

const token = "ghp_secret-token-value"

// secrets serves Secrets from a map, as the API reader would.
type secrets map[types.NamespacedName]map[string][]byte

func (s secrets) get(_ context.Context, key types.NamespacedName) (*corev1.Secret, error) {
	data, ok := s[key]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	return &corev1.Secret{Data: data}, nil
}

// fixture is a GitHub with one repository, acme/app, whose pull requests need a token.
type fixture struct {
	server *githubserver.Server
	github *GitHub
	clock  *clock
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	server, err := githubserver.Start(githubserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	server.AddToken(token)
	server.RequireAuth(true)
	server.AddRepo("acme", "app", githubserver.Repo{DefaultBranch: "main", Branches: map[string]string{"main": "aaaa"}})
	c := &clock{now: time.Now()}
	if opts.Secrets == nil {
		opts.Secrets = secrets{
			{Namespace: "team-a", Name: "gh"}:  {"token": []byte(token + "\n")},
			{Namespace: "team-a", Name: "bad"}: {"token": []byte("ghp_not-a-valid-token")},
		}.get
	}
	if opts.Now == nil {
		opts.Now = c.Now
	}
	return &fixture{server: server, github: New(opts), clock: c}
}

func (f *fixture) spec(secret string) *navarchv1.PullRequestGenerator {
	return &navarchv1.PullRequestGenerator{Github: &navarchv1.PullRequestGeneratorGithub{
		Owner: "acme", Repo: "app", API: f.server.APIURL(),
		TokenRef: &navarchv1.SecretKeyRef{SecretName: secret, Key: "token"},
	}}
}

func (f *fixture) requests(path string) []githubserver.Request {
	var out []githubserver.Request
	for _, r := range f.server.Requests() {
		if strings.HasSuffix(r.Path, path) {
			out = append(out, r)
		}
	}
	return out
}

func TestOpenPullRequestsAcrossPages(t *testing.T) {
	f := newFixture(t, Options{})
	for i := range 205 {
		f.server.OpenPR("acme", "app", githubserver.PullRequest{Title: fmt.Sprintf("pr %d", i), Head: fmt.Sprintf("b%d", i), Base: "main",
			HeadSHA: fmt.Sprintf("%040d", i), Author: "ana", Labels: []string{"preview"}})
	}
	f.server.ClosePR("acme", "app", 7, true)
	prs, err := f.github.For("team-a").ListPullRequests(context.Background(), f.spec("gh"))
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 204 {
		t.Fatalf("listed %d open pull requests, want 204", len(prs))
	}
	for _, pr := range prs {
		if pr.Number == 7 {
			t.Errorf("closed pull request #7 listed")
		}
	}
	first := prs[0]
	if first.Branch == "" || first.TargetBranch != "main" || len(first.HeadSHA) != 40 || first.Author != "ana" || len(first.Labels) != 1 {
		t.Errorf("pull request fields not carried over: %+v", first)
	}
	if got := len(f.requests("/repos/acme/app/pulls")); got != 3 {
		t.Errorf("%d requests for 205 pull requests, want 3 pages of 100", got)
	}
}

// The budget: a poll of an unchanged repository costs no rate limit. Every poll after the
// first is answered 304 Not Modified, counted on the server.
func TestPollsOfAnUnchangedRepositoryAreNotModified(t *testing.T) {
	f := newFixture(t, Options{})
	f.server.OpenPR("acme", "app", githubserver.PullRequest{Title: "a", Head: "a", Base: "main", HeadSHA: "1111", Author: "ana"})
	prov := f.github.For("team-a")
	for poll := range 10 {
		prs, err := prov.ListPullRequests(context.Background(), f.spec("gh"))
		if err != nil || len(prs) != 1 || prs[0].HeadSHA != "1111" {
			t.Fatalf("poll %d: %d pull requests, error %v", poll, len(prs), err)
		}
		f.clock.Add(DefaultPollWindow) // the next poll lists again
	}
	reqs := f.requests("/repos/acme/app/pulls")
	if len(reqs) != 10 {
		t.Fatalf("%d requests for 10 polls, want 10", len(reqs))
	}
	if reqs[0].Status != http.StatusOK {
		t.Errorf("first poll answered %d, want 200", reqs[0].Status)
	}
	for i, r := range reqs[1:] {
		if r.Status != http.StatusNotModified || !r.Conditional {
			t.Errorf("poll %d answered %d (conditional %v), want a conditional request answered 304", i+2, r.Status, r.Conditional)
		}
	}

	// A change is seen at the next poll.
	f.server.PushPR("acme", "app", 1, "2222")
	prs, err := prov.ListPullRequests(context.Background(), f.spec("gh"))
	if err != nil || len(prs) != 1 || prs[0].HeadSHA != "2222" {
		t.Fatalf("after a push: %+v, error %v; want head 2222", prs, err)
	}
}

// However many ApplicationSets (and matrix children) ask in one poll window, the repository
// is listed once per credential; a webhook's Invalidate makes the next one list again.
func TestOneListingPerRepositoryAndCredential(t *testing.T) {
	f := newFixture(t, Options{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := f.github.For("team-a").ListPullRequests(context.Background(), f.spec("gh")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := len(f.requests("/repos/acme/app/pulls")); got != 1 {
		t.Errorf("20 generators in one poll window made %d requests, want 1", got)
	}
	f.github.Invalidate("ACME", "App")
	if _, err := f.github.For("team-a").ListPullRequests(context.Background(), f.spec("gh")); err != nil {
		t.Fatal(err)
	}
	if got := len(f.requests("/repos/acme/app/pulls")); got != 2 {
		t.Errorf("after Invalidate: %d requests, want 2", got)
	}
}

func TestGitHubErrors(t *testing.T) {
	tests := []struct {
		name    string
		secret  string
		fault   func(*githubserver.Server)
		timeout time.Duration
		// want are phrases of the error; check tests it further.
		want  []string
		check func(t *testing.T, err error)
	}{
		{
			name: "server error", secret: "gh",
			fault: func(s *githubserver.Server) { s.Fail(http.StatusInternalServerError) },
			want:  []string{"500"},
		},
		{
			name: "bad token names the Secret and key, never the token", secret: "bad",
			want: []string{"401", "Secret team-a/bad key token"},
		},
		{
			name: "missing Secret", secret: "nope",
			want: []string{"tokenRef: read Secret team-a/nope"},
		},
		{
			name: "timeout", secret: "gh", timeout: 200 * time.Millisecond,
			fault: func(s *githubserver.Server) { s.Delay(2 * time.Second) },
			want:  []string{"deadline exceeded"},
		},
		{
			name: "exhausted rate limit", secret: "gh",
			fault: func(s *githubserver.Server) { s.SetRateLimit(5000, 0, time.Now().Add(time.Hour)) },
			want:  []string{"rate limit of the token in Secret team-a/gh key token is exhausted"},
			check: func(t *testing.T, err error) {
				var rl *RateLimitedError
				if !errors.As(err, &rl) || rl.Secondary || time.Until(rl.Until) < 50*time.Minute {
					t.Errorf("error %v is not a RateLimitedError until the reset", err)
				}
			},
		},
		{
			name: "secondary rate limit", secret: "gh",
			fault: func(s *githubserver.Server) { s.SecondaryLimit(http.StatusTooManyRequests, 90*time.Second) },
			want:  []string{"secondary rate limit"},
			check: func(t *testing.T, err error) {
				var rl *RateLimitedError
				if !errors.As(err, &rl) || !rl.Secondary || time.Until(rl.Until) < 80*time.Second {
					t.Errorf("error %v is not a secondary RateLimitedError of about 90 s", err)
				}
			},
		},
		{
			name: "repository not found", secret: "gh",
			fault: func(s *githubserver.Server) {},
			check: func(t *testing.T, err error) {
				if !errors.Is(err, generators.ErrRepositoryNotFound) {
					t.Errorf("error %v does not wrap ErrRepositoryNotFound", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Options{Timeout: tt.timeout, Now: time.Now})
			spec := f.spec(tt.secret)
			if tt.name == "repository not found" {
				spec.Github.Repo = "gone"
			}
			if tt.fault != nil {
				tt.fault(f.server)
			}
			_, err := f.github.For("team-a").ListPullRequests(context.Background(), spec)
			if err == nil {
				t.Fatal("no error")
			}
			for _, phrase := range tt.want {
				if !strings.Contains(err.Error(), phrase) {
					t.Errorf("error %q does not say %q", err, phrase)
				}
			}
			if strings.Contains(err.Error(), "ghp_") {
				t.Errorf("error reveals a token: %v", err)
			}
			if tt.check != nil {
				tt.check(t, err)
			}
		})
	}
}

// Once GitHub said to wait, nothing is sent until then.
func TestNoRequestWhileGitHubAsksToWait(t *testing.T) {
	f := newFixture(t, Options{Now: time.Now})
	f.server.SecondaryLimit(http.StatusForbidden, time.Minute)
	prov := f.github.For("team-a")
	if _, err := prov.ListPullRequests(context.Background(), f.spec("gh")); err == nil {
		t.Fatal("no error under a secondary limit")
	}
	sent := len(f.server.Requests())
	for range 5 {
		f.github.Invalidate("acme", "app")
		if _, err := prov.ListPullRequests(context.Background(), f.spec("gh")); err == nil {
			t.Fatal("no error while waiting out the secondary limit")
		}
	}
	if got := len(f.server.Requests()); got != sent {
		t.Errorf("%d requests sent while GitHub asked to wait", got-sent)
	}
}

// A low rate limit stretches polling until its reset, and says so.
func TestALowRateLimitThrottles(t *testing.T) {
	f := newFixture(t, Options{Now: time.Now})
	reset := time.Now().Add(40 * time.Minute).Truncate(time.Second)
	f.server.SetRateLimit(5000, 300, reset)
	prov := f.github.For("team-a")
	if _, err := prov.ListPullRequests(context.Background(), f.spec("gh")); err != nil {
		t.Fatal(err)
	}
	until, msg := prov.Throttle()
	if !until.Equal(reset) || !strings.Contains(msg, "is low (299 of 5000 left") {
		t.Errorf("Throttle() = %v, %q; want the reset %v and a message with the remaining count", until, msg, reset)
	}
	f.server.SetRateLimit(5000, 4000, reset)
	prov = f.github.For("team-a")
	f.github.Invalidate("acme", "app")
	if _, err := prov.ListPullRequests(context.Background(), f.spec("gh")); err != nil {
		t.Fatal(err)
	}
	if until, msg := prov.Throttle(); msg != "" || !until.IsZero() {
		t.Errorf("with room left, Throttle() = %v, %q", until, msg)
	}
}

func TestGitHubAppInstallation(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	f := newFixture(t, Options{Secrets: secrets{
		{Namespace: "team-a", Name: "app"}:   {KeyAppID: []byte("42"), KeyAppInstallationID: []byte("7"), KeyAppPrivateKey: pemKey},
		{Namespace: "team-a", Name: "no-id"}: {KeyAppInstallationID: []byte("7"), KeyAppPrivateKey: pemKey},
	}.get})
	f.server.AddApp(42, 7, &key.PublicKey)
	f.server.OpenPR("acme", "app", githubserver.PullRequest{Title: "a", Head: "a", Base: "main", HeadSHA: "1111", Author: "ana"})
	spec := f.spec("")
	spec.Github.TokenRef, spec.Github.AppSecretName = nil, "app"
	prs, err := f.github.For("team-a").ListPullRequests(context.Background(), spec)
	if err != nil || len(prs) != 1 {
		t.Fatalf("listed %d pull requests as the app, error %v", len(prs), err)
	}
	if got := len(f.requests("/app/installations/7/access_tokens")); got != 1 {
		t.Errorf("%d installation token requests, want 1", got)
	}
	for _, r := range f.requests("/repos/acme/app/pulls") {
		if r.Token == "" {
			t.Errorf("the listing was not made with the installation token")
		}
	}
	spec.Github.AppSecretName = "no-id"
	if _, err := f.github.For("team-a").ListPullRequests(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "key githubAppID must hold a positive number") {
		t.Errorf("an app Secret without its ID: error %v", err)
	}
}

func TestOrganisationRepositories(t *testing.T) {
	f := newFixture(t, Options{})
	f.server.AddRepo("acme", "api", githubserver.Repo{DefaultBranch: "main", Topics: []string{"team-a"},
		Branches: map[string]string{"main": "1111", "feature": "2222"},
		Files:    map[string][]string{"main": {"deploy/kustomization.yaml"}, "feature": {"README.md"}}})
	spec := &navarchv1.SCMProviderGenerator{Github: &navarchv1.SCMProviderGeneratorGithub{
		Organization: "acme", API: f.server.APIURL(), TokenRef: &navarchv1.SecretKeyRef{SecretName: "gh", Key: "token"},
	}}
	prov := f.github.For("team-a")
	repos, err := prov.ListRepositories(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]generators.Repository{}
	for _, r := range repos {
		byName[r.Name+"@"+r.Branch] = r
	}
	api, ok := byName["api@main"]
	if len(repos) != 2 || !ok || api.SHA != "1111" || api.Labels[0] != "team-a" || api.SSHURL == "" || api.HTTPSURL == "" {
		t.Fatalf("default branches: %+v", repos)
	}
	spec.Github.AllBranches = true
	repos, err = prov.ListRepositories(context.Background(), spec)
	if err != nil || len(repos) != 3 {
		t.Fatalf("all branches: %d repositories, error %v; want 3", len(repos), err)
	}
	for _, tt := range []struct {
		path string
		want bool
	}{{"deploy", true}, {"deploy/kustomization.yaml", true}, {"charts", false}} {
		got, err := prov.PathExists(context.Background(), spec, api, tt.path)
		if err != nil || got != tt.want {
			t.Errorf("PathExists(%q) = %v, %v; want %v", tt.path, got, err, tt.want)
		}
	}
	before := len(f.server.Requests())
	if _, err := prov.PathExists(context.Background(), spec, api, "deploy"); err != nil {
		t.Fatal(err)
	}
	if got := len(f.server.Requests()) - before; got != 0 {
		t.Errorf("a path looked up again at the same commit made %d requests", got)
	}
}

func TestCommitStatuses(t *testing.T) {
	f := newFixture(t, Options{})
	gh := f.spec("gh").Github
	long := strings.Repeat("é", 200)
	if err := f.github.For("team-a").SetCommitStatus(context.Background(), gh, "abcdef0123", CommitStatus{
		State: "failure", Description: long, Context: "navarch/pr-1", TargetURL: "http://preview.example",
	}); err != nil {
		t.Fatal(err)
	}
	got := f.server.Statuses("acme", "app", "abcdef0123")
	if len(got) != 1 || got[0].State != "failure" || got[0].Context != "navarch/pr-1" || got[0].TargetURL != "http://preview.example" {
		t.Fatalf("statuses %+v", got)
	}
	if n := len([]rune(got[0].Description)); n > 140 {
		t.Errorf("description of %d characters", n)
	}
}

// A pass reads each credential's Secret once, however many listings, path lookups and commit
// statuses it makes.
func TestAPassReadsEachSecretOnce(t *testing.T) {
	reads := 0
	f := newFixture(t, Options{Secrets: func(_ context.Context, key types.NamespacedName) (*corev1.Secret, error) {
		reads++
		return &corev1.Secret{Data: map[string][]byte{"token": []byte(token)}}, nil
	}})
	prov := f.github.For("team-a")
	spec := f.spec("gh")
	for range 3 {
		if _, err := prov.ListPullRequests(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		if err := prov.SetCommitStatus(context.Background(), spec.Github, "abc", CommitStatus{State: "pending", Context: "navarch/x"}); err != nil {
			t.Fatal(err)
		}
	}
	if reads != 1 {
		t.Errorf("one pass read the Secret %d times, want 1", reads)
	}
	if _, err := f.github.For("team-a").ListPullRequests(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if reads != 2 {
		t.Errorf("the next pass did not read the Secret again (%d reads): a rotated token must be seen", reads)
	}
}
