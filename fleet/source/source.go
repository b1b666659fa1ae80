// Package source fetches an Application's manifests: it resolves the source's revision to a
// commit in Git, reads that commit's tree and renders the source path with package render.
//
// Resolving a branch costs a round trip to the Git server, so a Fetcher remembers each
// resolution for the polling interval (a refresh skips that); rendering costs CPU, so it
// remembers the rendered objects per commit and source options.
package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
	"github.com/navarch-io/navarch/internal/gitrepo"
)

// DefaultPollInterval is how long a resolved revision is trusted before Git is asked again.
const DefaultPollInterval = 3 * time.Minute

// Fetcher fetches and renders sources. It is safe for concurrent use.
type Fetcher struct {
	git          *gitrepo.Reader
	credentials  func(ctx context.Context, repoURL string) (*gitrepo.Credentials, error)
	pollInterval time.Duration
	now          func() time.Time

	lookups  singleflight.Group
	mu       sync.Mutex
	resolved map[resolveKey]resolution
	rendered *lru.Cache // renderKey → []*unstructured.Unstructured
}

// Options configure a Fetcher.
type Options struct {
	// Git reads repositories.
	Git *gitrepo.Reader
	// Credentials returns the credentials of a repository, or nil.
	Credentials func(ctx context.Context, repoURL string) (*gitrepo.Credentials, error)
	// PollInterval is how long a resolved branch or tag is trusted. Default DefaultPollInterval.
	PollInterval time.Duration
	// CachedRenders is how many rendered sources are kept. Default 1024.
	CachedRenders int
}

type resolveKey struct{ url, revision string }

type resolution struct {
	commit string
	at     time.Time
	// forgotten marks a resolution dropped by Forget at time at: it answers no Fetch, and
	// a lookup that began before it is not remembered.
	forgotten bool
}

// Manifests are the rendered objects of a source at a commit.
type Manifests struct {
	// Commit is the full SHA the source was rendered at.
	Commit string
	// Objects are shared with the cache: deep-copy before changing them.
	Objects []*unstructured.Unstructured
	// NextPoll is how long until the revision should be resolved again.
	NextPoll time.Duration
}

// New returns a Fetcher.
func New(opts Options) *Fetcher {
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.CachedRenders <= 0 {
		opts.CachedRenders = 1024
	}
	if opts.Credentials == nil {
		opts.Credentials = func(context.Context, string) (*gitrepo.Credentials, error) { return nil, nil }
	}
	return &Fetcher{
		git:          opts.Git,
		credentials:  opts.Credentials,
		pollInterval: opts.PollInterval,
		now:          time.Now,
		resolved:     map[resolveKey]resolution{},
		rendered:     lru.New(opts.CachedRenders),
	}
}

// PollInterval is how long a resolved branch or tag is trusted: a source that failed to fetch
// or render can be fixed by a new commit no sooner than this.
func (f *Fetcher) PollInterval() time.Duration { return f.pollInterval }

// Fetch renders src at revision (empty: src.TargetRevision). With refresh it asks Git for the
// revision's commit even if it resolved it recently.
func (f *Fetcher) Fetch(ctx context.Context, src navarchv1.ApplicationSource, revision string, refresh bool) (*Manifests, error) {
	if revision == "" {
		revision = src.TargetRevision
	}
	creds, err := f.credentials(ctx, src.RepoURL)
	if err != nil {
		return nil, err
	}
	commit, nextPoll, err := f.resolve(ctx, src.RepoURL, revision, creds, refresh)
	if err != nil {
		return nil, err
	}
	key, err := renderKey(commit, src)
	if err != nil {
		return nil, err
	}
	if objs, ok := f.rendered.Get(key); ok {
		return &Manifests{Commit: commit, Objects: objs.([]*unstructured.Unstructured), NextPoll: nextPoll}, nil
	}
	snap, err := f.git.Snapshot(ctx, src.RepoURL, commit, creds)
	if err != nil {
		return nil, err
	}
	objs, err := render.Render(ctx, snap.FS(), src, render.Options{})
	if err != nil {
		return nil, fmt.Errorf("render %s at %.8s: %w", src.RepoURL, commit, err)
	}
	f.rendered.Add(key, objs)
	return &Manifests{Commit: commit, Objects: objs, NextPoll: nextPoll}, nil
}

func (f *Fetcher) resolve(ctx context.Context, url, revision string, creds *gitrepo.Credentials, refresh bool) (string, time.Duration, error) {
	key := resolveKey{url, revision}
	now := f.now()
	f.mu.Lock()
	r, ok := f.resolved[key]
	f.mu.Unlock()
	if ok && !r.forgotten && !refresh && now.Sub(r.at) < f.pollInterval {
		return r.commit, f.pollInterval - now.Sub(r.at), nil
	}
	// Every Application of a repository asks at about the same time: one lookup answers all.
	v, err, _ := f.lookups.Do(url+"\x00"+revision, func() (any, error) {
		commit, err := f.git.Resolve(ctx, url, revision, creds)
		if err != nil {
			return "", err
		}
		f.mu.Lock()
		if cur, ok := f.resolved[key]; !ok || !cur.at.After(now) {
			f.resolved[key] = resolution{commit: commit, at: now}
		}
		f.mu.Unlock()
		return commit, nil
	})
	if err != nil {
		return "", 0, err
	}
	return v.(string), f.pollInterval, nil
}

// Forget drops what the Fetcher remembers of revision in the repository at repoURL (both as
// an Application's source names them), because the revision is known to have moved: a
// webhook reported a push. The next Fetch asks Git again; a lookup already under way, which
// may have seen the old commit, is neither joined by later Fetches nor remembered.
func (f *Fetcher) Forget(repoURL, revision string) {
	f.mu.Lock()
	f.resolved[resolveKey{repoURL, revision}] = resolution{at: f.now(), forgotten: true}
	f.mu.Unlock()
	f.lookups.Forget(repoURL + "\x00" + revision)
}

// renderKey identifies a rendering: the commit and every source option that affects it.
func renderKey(commit string, src navarchv1.ApplicationSource) (string, error) {
	src.TargetRevision = ""
	data, err := json.Marshal(src)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(commit), data...))
	return hex.EncodeToString(sum[:]), nil
}
