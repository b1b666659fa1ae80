// Package scm reads pull requests and repositories from GitHub and GitHub Enterprise for the
// pullRequest and scmProvider generators, and writes the commit statuses of previews.
//
// Polling is made cheap, GitHub's rate limit being what users of pull-request generators run
// out of first:
//   - every GET is conditional (see conditional): an unchanged listing costs a 304, which
//     GitHub does not count;
//   - a listing is shared for PollWindow by every ApplicationSet and matrix child that asks
//     for the same repository with the same credential, and a webhook drops it (Invalidate);
//   - the rate limit GitHub reports is tracked per credential: when it is exhausted, or a
//     secondary limit asks to wait (Retry-After), no request is sent until then, and when it
//     runs low, Providers.Throttle tells the caller to poll less often.
//
// Credentials come from Secrets in the ApplicationSet's namespace: a token (tokenRef) or a
// GitHub App installation (appSecretName). Errors name the Secret and key, never the token.
package scm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v57/github"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
)

// The keys of a GitHub App Secret (appSecretName), as Argo CD names them.
const (
	KeyAppID             = "githubAppID"
	KeyAppInstallationID = "githubAppInstallationID"
	KeyAppPrivateKey     = "githubAppPrivateKey"
)

// Defaults of Options.
const (
	DefaultPollWindow = 15 * time.Second
	DefaultTimeout    = 30 * time.Second
	// lowRateLimit is the fraction of the rate limit below which polling is stretched.
	lowRateLimit = 0.1
)

// SecretGetter reads one Secret.
type SecretGetter func(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error)

// Options configure a GitHub.
type Options struct {
	// Secrets reads credential Secrets; required.
	Secrets SecretGetter
	// Transport sends the requests; default a clone of http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds each listing or write; default DefaultTimeout.
	Timeout time.Duration
	// PollWindow is how long a listing is shared; default DefaultPollWindow.
	PollWindow time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// GitHub is a shared GitHub client for every ApplicationSet. It is safe for concurrent use.
type GitHub struct {
	opts Options

	mu      sync.Mutex
	clients map[clientKey]*client
	// listings holds the last listing of each repository or organisation per client.
	listings map[listingKey]listing
	paths    map[pathKey]bool

	flight singleflight.Group
}

// New returns a GitHub.
func New(opts Options) *GitHub {
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.PollWindow <= 0 {
		opts.PollWindow = DefaultPollWindow
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &GitHub{opts: opts, clients: map[clientKey]*client{}, listings: map[listingKey]listing{}, paths: map[pathKey]bool{}}
}

// credentials is where a generator's credentials are: a token, an app, or neither.
type credentials struct {
	api      string
	tokenRef *navarchv1.SecretKeyRef
	appName  string
}

type clientKey struct{ api, fingerprint string }

// client is one go-github client: one API and one credential, with that credential's rate
// limit as GitHub last reported it.
type client struct {
	gh   *github.Client
	key  clientKey
	name string // the credential as users know it, for messages and metrics

	mu         sync.Mutex
	limit      int
	remaining  int
	reset      time.Time
	retryAfter time.Time
}

func (c *client) seen(limit, remaining int, reset time.Time) {
	c.mu.Lock()
	c.limit, c.remaining, c.reset = limit, remaining, reset
	c.mu.Unlock()
	rateLimitRemaining.WithLabelValues(c.key.api, c.name).Set(float64(remaining))
}

// RateLimitedError says that GitHub asked not to be called before Until.
type RateLimitedError struct {
	Credential string
	Until      time.Time
	Secondary  bool
}

func (e *RateLimitedError) Error() string {
	if e.Secondary {
		return fmt.Sprintf("GitHub's secondary rate limit for %s: no request before %s", e.Credential, e.Until.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("the GitHub API rate limit of %s is exhausted until %s", e.Credential, e.Until.UTC().Format(time.RFC3339))
}

// blocked returns a *RateLimitedError while GitHub asked to wait.
func (c *client) blocked(now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Before(c.retryAfter) {
		return &RateLimitedError{Credential: c.name, Until: c.retryAfter, Secondary: true}
	}
	if c.limit > 0 && c.remaining == 0 && now.Before(c.reset) {
		return &RateLimitedError{Credential: c.name, Until: c.reset}
	}
	return nil
}

// low reports when the rate limit is running low, and until when.
func (c *client) low(now time.Time) (bool, time.Time, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit == 0 || float64(c.remaining) >= lowRateLimit*float64(c.limit) || !now.Before(c.reset) {
		return false, time.Time{}, ""
	}
	return true, c.reset, fmt.Sprintf("the GitHub API rate limit of %s is low (%d of %d left until %s): polling waits for its reset",
		c.name, c.remaining, c.limit, c.reset.UTC().Format(time.RFC3339))
}

// explain turns a go-github error into one a user can act on, and records the waits GitHub
// asks for.
func (c *client) explain(err error, now time.Time) error {
	var rle *github.RateLimitError
	var abuse *github.AbuseRateLimitError
	var resp *github.ErrorResponse
	switch {
	case errors.As(err, &rle):
		c.seen(rle.Rate.Limit, 0, rle.Rate.Reset.Time)
		return &RateLimitedError{Credential: c.name, Until: rle.Rate.Reset.Time}
	case errors.As(err, &abuse):
		wait := time.Minute // GitHub's advice when it sends no Retry-After
		if abuse.RetryAfter != nil {
			wait = *abuse.RetryAfter
		}
		c.mu.Lock()
		c.retryAfter = now.Add(wait)
		c.mu.Unlock()
		return &RateLimitedError{Credential: c.name, Until: now.Add(wait), Secondary: true}
	case errors.As(err, &resp) && resp.Response != nil:
		switch resp.Response.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("GitHub refused %s: %d %s", c.name, resp.Response.StatusCode, resp.Message)
		case http.StatusNotFound:
			return fmt.Errorf("%s %s: %w (GitHub answers 404 also when %s may not see it)",
				resp.Response.Request.Method, resp.Response.Request.URL.Path, generators.ErrRepositoryNotFound, c.name)
		case http.StatusTooManyRequests, http.StatusForbidden:
			if ra := resp.Response.Header.Get("Retry-After"); ra != "" {
				if s, perr := strconv.Atoi(ra); perr == nil {
					c.mu.Lock()
					c.retryAfter = now.Add(time.Duration(s) * time.Second)
					c.mu.Unlock()
					return &RateLimitedError{Credential: c.name, Until: now.Add(time.Duration(s) * time.Second), Secondary: true}
				}
			}
		}
		return fmt.Errorf("GitHub answered %d to %s %s: %s", resp.Response.StatusCode,
			resp.Response.Request.Method, resp.Response.Request.URL.Path, resp.Message)
	}
	return err
}

// client returns the client for a credential, reading its Secret.
func (g *GitHub) client(ctx context.Context, namespace string, cred credentials) (*client, error) {
	token, app, name, err := g.readCredentials(ctx, namespace, cred)
	if err != nil {
		return nil, err
	}
	sum := sha256.New()
	switch {
	case app != nil:
		fmt.Fprintf(sum, "app\x00%d\x00%d\x00", app.id, app.installation)
		sum.Write(app.key)
	case token != "":
		fmt.Fprintf(sum, "token\x00%s", token)
	}
	key := clientKey{api: cred.api, fingerprint: hex.EncodeToString(sum.Sum(nil))}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.clients[key]; ok {
		return c, nil
	}
	c := &client{key: key, name: name}
	cond := newConditional(g.opts.Transport, apiHost(cred.api), c.seen)
	gh := github.NewClient(&http.Client{Transport: cond})
	if cred.api != "" {
		if gh, err = gh.WithEnterpriseURLs(cred.api, cred.api); err != nil {
			return nil, fmt.Errorf("api %q: %w", cred.api, err)
		}
	}
	switch {
	case app != nil:
		itr, err := ghinstallation.New(cond, app.id, app.installation, app.key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		itr.BaseURL = strings.TrimSuffix(gh.BaseURL.String(), "/")
		base := gh.BaseURL
		gh = github.NewClient(&http.Client{Transport: itr})
		gh.BaseURL, gh.UploadURL = base, base
	case token != "":
		gh = gh.WithAuthToken(token)
	}
	c.gh = gh
	g.clients[key] = c
	return c, nil
}

type appCredentials struct {
	id, installation int64
	key              []byte
}

// readCredentials reads the token or app of cred from Secrets in namespace. name describes
// the credential without revealing it.
func (g *GitHub) readCredentials(ctx context.Context, namespace string, cred credentials) (token string, app *appCredentials, name string, err error) {
	switch {
	case cred.appName != "":
		name = fmt.Sprintf("the GitHub App of Secret %s/%s", namespace, cred.appName)
		secret, err := g.opts.Secrets(ctx, types.NamespacedName{Namespace: namespace, Name: cred.appName})
		if err != nil {
			return "", nil, name, fmt.Errorf("appSecretName: read Secret %s/%s: %w", namespace, cred.appName, err)
		}
		app = &appCredentials{key: secret.Data[KeyAppPrivateKey]}
		for _, f := range []struct {
			key string
			dst *int64
		}{{KeyAppID, &app.id}, {KeyAppInstallationID, &app.installation}} {
			v, perr := strconv.ParseInt(strings.TrimSpace(string(secret.Data[f.key])), 10, 64)
			if perr != nil || v <= 0 {
				return "", nil, name, fmt.Errorf("appSecretName: Secret %s/%s: key %s must hold a positive number", namespace, cred.appName, f.key)
			}
			*f.dst = v
		}
		if len(app.key) == 0 {
			return "", nil, name, fmt.Errorf("appSecretName: Secret %s/%s has no key %s", namespace, cred.appName, KeyAppPrivateKey)
		}
		return "", app, name, nil
	case cred.tokenRef != nil:
		ref := cred.tokenRef
		name = fmt.Sprintf("the token in Secret %s/%s key %s", namespace, ref.SecretName, ref.Key)
		secret, err := g.opts.Secrets(ctx, types.NamespacedName{Namespace: namespace, Name: ref.SecretName})
		if err != nil {
			return "", nil, name, fmt.Errorf("tokenRef: read Secret %s/%s: %w", namespace, ref.SecretName, err)
		}
		token = strings.TrimSpace(string(secret.Data[ref.Key]))
		if token == "" {
			return "", nil, name, fmt.Errorf("tokenRef: Secret %s/%s has no key %s, or it is empty", namespace, ref.SecretName, ref.Key)
		}
		return token, nil, name, nil
	}
	return "", nil, "anonymous access", nil
}

func apiHost(api string) string {
	if api == "" {
		return "api.github.com"
	}
	host := api
	if _, rest, ok := strings.Cut(api, "://"); ok {
		host = rest
	}
	host, _, _ = strings.Cut(host, "/")
	return host
}

type listingKey struct {
	client     clientKey
	kind       string // "pulls" or "repos"
	owner, sub string // owner and repository, or organisation and "all" for every branch
}

type listing struct {
	at    time.Time
	pulls []generators.PullRequest
	repos []generators.Repository
}

// shared returns the listing of key, listed at most PollWindow ago (unless fresh), or lists
// it once however many callers ask at the same time.
func (g *GitHub) shared(ctx context.Context, c *client, key listingKey, fresh bool, list func(context.Context) (listing, error)) (listing, error) {
	now := g.opts.Now()
	g.mu.Lock()
	l, ok := g.listings[key]
	g.mu.Unlock()
	if ok && !fresh && now.Sub(l.at) < g.opts.PollWindow {
		return l, nil
	}
	if err := c.blocked(now); err != nil {
		return listing{}, err
	}
	flight := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s", key.client.api, key.client.fingerprint, key.kind, key.owner, key.sub)
	v, err, _ := g.flight.Do(flight, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.Timeout)
		defer cancel()
		l, err := list(ctx)
		if err != nil {
			// The last listing is no longer what GitHub says: the passes that follow must
			// fail too, not go back to it, until GitHub answers.
			g.mu.Lock()
			delete(g.listings, key)
			g.mu.Unlock()
			return listing{}, c.explain(err, g.opts.Now())
		}
		l.at = g.opts.Now()
		g.mu.Lock()
		g.listings[key] = l
		g.mu.Unlock()
		return l, nil
	})
	return v.(listing), err
}

// Invalidate drops the listings of a repository and of its owner's repositories, so the next
// pass lists them again: a webhook said they changed.
func (g *GitHub) Invalidate(owner, repo string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.listings {
		if strings.EqualFold(k.owner, owner) && (k.kind == "repos" || strings.EqualFold(k.sub, repo)) {
			delete(g.listings, k)
		}
	}
}

func (g *GitHub) listPullRequests(ctx context.Context, c *client, owner, repo string, fresh bool) ([]generators.PullRequest, error) {
	key := listingKey{client: c.key, kind: "pulls", owner: strings.ToLower(owner), sub: strings.ToLower(repo)}
	l, err := g.shared(ctx, c, key, fresh, func(ctx context.Context) (listing, error) {
		var out []generators.PullRequest
		opts := &github.PullRequestListOptions{State: "open", ListOptions: github.ListOptions{PerPage: 100}}
		for {
			prs, resp, err := c.gh.PullRequests.List(ctx, owner, repo, opts)
			if err != nil {
				return listing{}, err
			}
			for _, pr := range prs {
				out = append(out, pullRequest(pr))
			}
			if resp.NextPage == 0 {
				return listing{pulls: out}, nil
			}
			opts.Page = resp.NextPage
		}
	})
	return l.pulls, err
}

func pullRequest(pr *github.PullRequest) generators.PullRequest {
	out := generators.PullRequest{
		Number:       pr.GetNumber(),
		Title:        pr.GetTitle(),
		Branch:       pr.GetHead().GetRef(),
		TargetBranch: pr.GetBase().GetRef(),
		HeadSHA:      pr.GetHead().GetSHA(),
		Author:       pr.GetUser().GetLogin(),
	}
	for _, l := range pr.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}
