package scm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v57/github"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
)

// Providers serves the generators of one pass over an ApplicationSet: credentials are read
// from its namespace. It implements generators.PullRequestLister and generators.SCMProvider,
// and remembers whether a credential's rate limit ran low during the pass.
type Providers struct {
	g         *GitHub
	namespace string
	fresh     bool

	mu       sync.Mutex
	until    time.Time
	notices  []string
	reported map[string]bool
	// clients holds the client of each credential the pass used: its Secret is read once
	// per pass, not once per listing, path lookup or commit status.
	clients map[string]*client
}

// For returns the Providers of one pass over an ApplicationSet in namespace.
func (g *GitHub) For(namespace string) *Providers {
	return &Providers{g: g, namespace: namespace, reported: map[string]bool{}, clients: map[string]*client{}}
}

// client returns the client of the credentials that api, tokenRef and appName name.
func (p *Providers) client(ctx context.Context, api string, tokenRef *navarchv1.SecretKeyRef, appName string) (*client, error) {
	key := api + "\x00" + appName
	if tokenRef != nil {
		key += "\x00" + tokenRef.SecretName + "\x00" + tokenRef.Key
	}
	p.mu.Lock()
	c, ok := p.clients[key]
	p.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := p.g.client(ctx, p.namespace, credentials{api: api, tokenRef: tokenRef, appName: appName})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.clients[key] = c
	p.mu.Unlock()
	return c, nil
}

// Fresh makes the pass list again rather than share a listing of the poll window, as a
// user's refresh asks. The listing is still a conditional request.
func (p *Providers) Fresh() *Providers {
	p.fresh = true
	return p
}

// Throttle reports whether a credential used in the pass is running low on its rate limit:
// the caller should not poll again before until, and say why (message).
func (p *Providers) Throttle() (until time.Time, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.until, strings.Join(p.notices, "; ")
}

func (p *Providers) check(c *client) {
	low, until, msg := c.low(p.g.opts.Now())
	if !low {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if until.After(p.until) {
		p.until = until
	}
	if !p.reported[c.name] {
		p.reported[c.name] = true
		p.notices = append(p.notices, msg)
	}
}

// ListPullRequests implements generators.PullRequestLister: the open pull requests.
func (p *Providers) ListPullRequests(ctx context.Context, spec *navarchv1.PullRequestGenerator) ([]generators.PullRequest, error) {
	gh := spec.Github
	c, err := p.client(ctx, gh.API, gh.TokenRef, gh.AppSecretName)
	if err != nil {
		return nil, err
	}
	defer p.check(c)
	return p.g.listPullRequests(ctx, c, gh.Owner, gh.Repo, p.fresh)
}

// ListRepositories implements generators.SCMProvider.
func (p *Providers) ListRepositories(ctx context.Context, spec *navarchv1.SCMProviderGenerator) ([]generators.Repository, error) {
	gh := spec.Github
	c, err := p.client(ctx, gh.API, gh.TokenRef, gh.AppSecretName)
	if err != nil {
		return nil, err
	}
	defer p.check(c)
	sub := "default"
	if gh.AllBranches {
		sub = "all"
	}
	key := listingKey{client: c.key, kind: "repos", owner: strings.ToLower(gh.Organization), sub: sub}
	l, err := p.g.shared(ctx, c, key, p.fresh, func(ctx context.Context) (listing, error) {
		repos, err := listRepositories(ctx, c.gh, gh.Organization, gh.AllBranches)
		return listing{repos: repos}, err
	})
	return l.repos, err
}

func listRepositories(ctx context.Context, gh *github.Client, org string, allBranches bool) ([]generators.Repository, error) {
	var out []generators.Repository
	opts := &github.RepositoryListByOrgOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		repos, resp, err := gh.Repositories.ListByOrg(ctx, org, opts)
		if err != nil {
			return nil, err
		}
		for _, r := range repos {
			branches, err := repositoryBranches(ctx, gh, r, allBranches)
			if err != nil {
				return nil, err
			}
			for _, b := range branches {
				out = append(out, generators.Repository{
					Organization: org, Name: r.GetName(),
					SSHURL: r.GetSSHURL(), HTTPSURL: r.GetCloneURL(),
					Branch: b.GetName(), SHA: b.GetCommit().GetSHA(), Labels: r.Topics,
				})
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// repositoryBranches returns every branch of r, or its default branch only.
func repositoryBranches(ctx context.Context, gh *github.Client, r *github.Repository, all bool) ([]*github.Branch, error) {
	owner, name := r.GetOwner().GetLogin(), r.GetName()
	if !all {
		if r.GetDefaultBranch() == "" {
			return nil, nil // an empty repository has no branch
		}
		b, _, err := gh.Repositories.GetBranch(ctx, owner, name, r.GetDefaultBranch(), 1)
		if err != nil {
			return nil, err
		}
		return []*github.Branch{b}, nil
	}
	var out []*github.Branch
	opts := &github.BranchListOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		bs, resp, err := gh.Repositories.ListBranches(ctx, owner, name, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, bs...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// pathKey is one path lookup at one commit: its answer never changes.
type pathKey struct {
	client               clientKey
	org, repo, sha, path string
}

// maxPathAnswers bounds the remembered path lookups; past it they are forgotten at once.
const maxPathAnswers = 16384

// PathExists implements generators.SCMProvider. It asks at the branch's commit, so each
// answer is remembered.
func (p *Providers) PathExists(ctx context.Context, spec *navarchv1.SCMProviderGenerator, repo generators.Repository, path string) (bool, error) {
	gh := spec.Github
	c, err := p.client(ctx, gh.API, gh.TokenRef, gh.AppSecretName)
	if err != nil {
		return false, err
	}
	defer p.check(c)
	ref := repo.SHA
	if ref == "" {
		ref = repo.Branch
	}
	key := pathKey{client: c.key, org: repo.Organization, repo: repo.Name, sha: ref, path: path}
	p.g.mu.Lock()
	exists, ok := p.g.paths[key]
	p.g.mu.Unlock()
	if ok {
		return exists, nil
	}
	if err := c.blocked(p.g.opts.Now()); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.g.opts.Timeout)
	defer cancel()
	_, _, _, err = c.gh.Repositories.GetContents(ctx, repo.Organization, repo.Name, strings.TrimPrefix(path, "/"), &github.RepositoryContentGetOptions{Ref: ref})
	var resp *github.ErrorResponse
	switch {
	case err == nil:
		exists = true
	case errors.As(err, &resp) && resp.Response != nil && resp.Response.StatusCode == 404:
		exists = false
	default:
		return false, c.explain(err, p.g.opts.Now())
	}
	p.g.mu.Lock()
	if len(p.g.paths) >= maxPathAnswers {
		clear(p.g.paths)
	}
	p.g.paths[key] = exists
	p.g.mu.Unlock()
	return exists, nil
}

// CommitStatus is one commit status.
type CommitStatus struct {
	// State is pending, success, failure or error.
	State string
	// Description is one line; GitHub keeps 140 characters.
	Description string
	// Context names the status.
	Context string
	// TargetURL is an optional link.
	TargetURL string
}

// SetCommitStatus writes a commit status on sha of owner/repo with the credentials of gh.
func (p *Providers) SetCommitStatus(ctx context.Context, gh *navarchv1.PullRequestGeneratorGithub, sha string, st CommitStatus) error {
	c, err := p.client(ctx, gh.API, gh.TokenRef, gh.AppSecretName)
	if err != nil {
		return err
	}
	defer p.check(c)
	if err := c.blocked(p.g.opts.Now()); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.g.opts.Timeout)
	defer cancel()
	status := &github.RepoStatus{State: &st.State, Context: &st.Context}
	if d := st.Description; d != "" {
		if r := []rune(d); len(r) > 140 {
			d = string(r[:137]) + "..."
		}
		status.Description = &d
	}
	if st.TargetURL != "" {
		status.TargetURL = &st.TargetURL
	}
	if _, _, err := c.gh.Repositories.CreateStatus(ctx, gh.Owner, gh.Repo, sha, status); err != nil {
		return fmt.Errorf("set commit status %s on %s/%s@%s: %w", st.Context, gh.Owner, gh.Repo, sha, c.explain(err, p.g.opts.Now()))
	}
	return nil
}
