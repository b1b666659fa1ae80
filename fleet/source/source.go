// Package source fetches an Application's manifests: it resolves each source's revision (a
// Git branch, tag or commit; a Helm chart version or constraint), reads the commit's tree or
// the chart, and renders it with package render (and fleet/helm, through render.Options).
//
// An Application has one source (spec.source) or several (spec.sources). Several sources are
// fetched together: the objects of all of them form one set, and a source's ref makes its
// snapshot available to the others' Helm value files as "$ref/path". A source with a ref
// and neither path nor chart contributes files only.
//
// Resolving a branch costs a round trip to the Git server, so a Fetcher remembers each
// resolution for the polling interval (a refresh skips that); rendering costs CPU, so it
// remembers the rendered objects per set of revisions and source options. Remote kustomize
// bases are resolved through the same cache, and a remembered rendering is used only while
// the bases it read are still at the commits it read.
package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
	charts       Charts
	helm         render.HelmRenderer
	pollInterval time.Duration
	now          func() time.Time

	lookups  singleflight.Group
	mu       sync.Mutex
	resolved map[resolveKey]resolution
	rendered *lru.Cache // renderKey → rendering
}

// Charts resolves chart versions in Helm repositories and OCI registries (fleet/helm/repo).
type Charts interface {
	// Resolve returns the exact version of chart in the repository at repoURL that matches
	// version (exact, a semver constraint, or "" for the latest stable). With refresh it asks
	// the repository even if it did recently.
	Resolve(ctx context.Context, repoURL, chart, version string, refresh bool) (string, error)
}

// Options configure a Fetcher.
type Options struct {
	// Git reads repositories.
	Git *gitrepo.Reader
	// Credentials returns the credentials of a Git repository, or nil.
	Credentials func(ctx context.Context, repoURL string) (*gitrepo.Credentials, error)
	// Charts resolves chart versions of chart sources; nil refuses chart sources.
	Charts Charts
	// Helm renders Helm charts; nil refuses them.
	Helm render.HelmRenderer
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

// rendering is a remembered rendering, with the remote kustomize bases it read.
type rendering struct {
	// usedHelm marks an entry that only says the rendering ran Helm: the rendering itself
	// is under the key that includes the release and the cluster's capabilities.
	usedHelm bool
	objects  []*unstructured.Unstructured
	remotes  map[resolveKey]string  // (repository, ref) → commit
	charts   map[chartLookup]string // chart constraints resolved while rendering → version
	reached  []string               // the repositories read beyond the sources
	// dependencies identifies remotes and charts (see Manifests.Dependencies).
	dependencies string
}

// Manifests are the rendered objects of an Application's sources at their revisions.
type Manifests struct {
	// Commit is the revision rendered: the full commit SHA (or chart version) of a single
	// source; with several sources, their revisions joined by commas (see JoinRevisions).
	Commit string
	// Revisions are the revisions of each source, with several sources; nil with one.
	Revisions []string
	// Objects are shared with the cache: deep-copy before changing them.
	Objects []*unstructured.Unstructured
	// NextPoll is how long until the revisions should be resolved again.
	NextPoll time.Duration
	// Dependencies identifies what rendering read beyond the sources at their revisions: the
	// commits of remote kustomize bases and the versions of chart dependencies it resolved
	// ("" when none). Two fetches of the same request with the same Commit and Dependencies
	// rendered the same objects; a remote base's branch that moved changes Dependencies only.
	Dependencies string
}

// Request is what to fetch: an Application's sources, at revisions, for a destination.
type Request struct {
	// Sources are spec.source, or spec.sources.
	Sources []navarchv1.ApplicationSource
	// Revisions override the targetRevision of the source at the same index; "" or a missing
	// entry keeps it.
	Revisions []string
	// Refresh asks Git and chart repositories again even if they were asked recently.
	Refresh bool
	// ReleaseName and Namespace are the Helm release's defaults: the Application's name and
	// destination namespace.
	ReleaseName string
	Namespace   string
	// Capabilities describe the destination cluster to Helm charts; asked only when a
	// source may be a chart. nil means Helm's defaults.
	Capabilities func() (render.Capabilities, error)
	// AllowRepository says whether a repository that rendering reaches beyond the sources (a
	// remote kustomize base, a chart dependency, a kustomize helmCharts repository) may be
	// read; nil allows any. Checked before each read, and for a remembered rendering
	// against every repository it read.
	AllowRepository func(url string) error
}

func (r Request) allow(url string) error {
	if r.AllowRepository == nil {
		return nil
	}
	return r.AllowRepository(url)
}

func (r Request) capabilities() (render.Capabilities, error) {
	if r.Capabilities == nil {
		return render.Capabilities{}, nil
	}
	return r.Capabilities()
}

// JoinRevisions is the one revision string of several sources' revisions, as status and
// history record it: "rev1,rev2". A single revision is itself.
func JoinRevisions(revisions []string) string { return strings.Join(revisions, ",") }

// SplitRevisions undoes JoinRevisions for n sources; "" gives no revisions.
func SplitRevisions(revision string, n int) []string {
	if revision == "" {
		return nil
	}
	if n <= 1 {
		return []string{revision}
	}
	return strings.Split(revision, ",")
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
		charts:       opts.Charts,
		helm:         opts.Helm,
		pollInterval: opts.PollInterval,
		now:          time.Now,
		resolved:     map[resolveKey]resolution{},
		rendered:     lru.New(opts.CachedRenders),
	}
}

// PollInterval is how long a resolved branch or tag is trusted: a source that failed to fetch
// or render can be fixed by a new commit no sooner than this.
func (f *Fetcher) PollInterval() time.Duration { return f.pollInterval }

// Fetch renders the single source src at revision (empty: src.TargetRevision). With refresh it
// asks Git for the revision's commit even if it resolved it recently.
func (f *Fetcher) Fetch(ctx context.Context, src navarchv1.ApplicationSource, revision string, refresh bool) (*Manifests, error) {
	return f.FetchSources(ctx, Request{Sources: []navarchv1.ApplicationSource{src}, Revisions: []string{revision}, Refresh: refresh})
}

// Revision returns what FetchSources would give as Manifests.Commit and NextPoll for req,
// without rendering nor reading the renderings' cache: the revision of each source, from what
// the Fetcher resolved within the poll interval, or else from Git or the chart repository.
// A pass that found nothing to do asks only this of an unchanged Application whose rendering
// read nothing beyond its sources (Manifests.Dependencies is ""). Its errors are
// FetchSources', without the name of the source among several.
func (f *Fetcher) Revision(ctx context.Context, req Request) (string, time.Duration, error) {
	if len(req.Sources) == 0 {
		return "", 0, errors.New("no source: set spec.source or spec.sources")
	}
	next := f.pollInterval
	revisions := make([]string, 0, 1)
	for i := range req.Sources {
		revision, poll, err := f.revisionOf(ctx, req, i)
		if err != nil {
			return "", 0, err
		}
		revisions, next = append(revisions, revision), min(next, poll)
	}
	if len(revisions) == 1 {
		return revisions[0], next, nil
	}
	return JoinRevisions(revisions), next, nil
}

// revisionOf resolves the revision of req's source i (its targetRevision, or the revision req
// gives it): a chart's version, or a Git commit and how long until it is looked up again (the
// poll interval for a chart, whose versions its repository client keeps).
func (f *Fetcher) revisionOf(ctx context.Context, req Request, i int) (string, time.Duration, error) {
	src, revision := &req.Sources[i], req.Sources[i].TargetRevision
	if i < len(req.Revisions) && req.Revisions[i] != "" {
		revision = req.Revisions[i]
	}
	if src.Chart != "" {
		if f.charts == nil || f.helm == nil {
			return "", 0, fmt.Errorf("chart %q: Helm repositories are not configured", src.Chart)
		}
		version, err := f.charts.Resolve(ctx, src.RepoURL, src.Chart, revision, req.Refresh)
		return version, f.pollInterval, err
	}
	return f.lookup(ctx, src.RepoURL, revision, req.Refresh)
}

// fetched is one source resolved: its revision, and its snapshot (Git sources).
type fetched struct {
	src      navarchv1.ApplicationSource
	revision string
	snap     gitrepo.Snapshot
}

// FetchSources renders the sources of req at their revisions. Errors name the source by its
// position among several ("sources[1] (https://…): …").
func (f *Fetcher) FetchSources(ctx context.Context, req Request) (*Manifests, error) {
	if len(req.Sources) == 0 {
		return nil, errors.New("no source: set spec.source or spec.sources")
	}
	multi := len(req.Sources) > 1
	name := func(i int) string {
		if !multi {
			return ""
		}
		return fmt.Sprintf("sources[%d] (%s): ", i, gitrepo.RedactURL(req.Sources[i].RepoURL))
	}
	refOf := map[string]int{}
	for i, src := range req.Sources {
		if src.Ref == "" {
			continue
		}
		if src.Chart != "" {
			return nil, fmt.Errorf("%sref %q: only Git sources lend their files to value files; a chart source cannot have a ref", name(i), src.Ref)
		}
		if j, ok := refOf[src.Ref]; ok {
			return nil, fmt.Errorf("%sref %q: sources[%d] has the same ref", name(i), src.Ref, j)
		}
		refOf[src.Ref] = i
	}
	nextPoll := f.pollInterval
	all := make([]fetched, len(req.Sources))
	refs := map[string]fs.FS{}
	for i, src := range req.Sources {
		all[i].src = src
		commit, poll, err := f.revisionOf(ctx, req, i)
		if err != nil {
			return nil, fmt.Errorf("%s%w", name(i), err)
		}
		nextPoll = min(nextPoll, poll)
		all[i].revision = commit
		if src.Chart == "" && src.Ref != "" {
			// Value files of other sources read this snapshot.
			snap, err := f.snapshot(ctx, src.RepoURL, commit)
			if err != nil {
				return nil, fmt.Errorf("%s%w", name(i), err)
			}
			all[i].snap = snap
			refs[src.Ref] = snap.FS()
		}
	}
	revisions := make([]string, len(all))
	for i := range all {
		revisions[i] = all[i].revision
	}
	m := &Manifests{Commit: JoinRevisions(revisions), NextPoll: nextPoll}
	if multi {
		m.Revisions = revisions
	}

	key, err := renderKey(all, req, nil)
	if err != nil {
		return nil, err
	}
	if r := f.cached(ctx, key, all, req); r != nil {
		for _, url := range r.reached {
			if err := req.allow(url); err != nil {
				return nil, err
			}
		}
		m.Objects, m.Dependencies = r.objects, r.dependencies
		return m, nil
	}
	lookups := &chartLookups{refresh: req.Refresh, allow: req.allow}
	ctx = context.WithValue(ctx, chartLookupsKey{}, lookups)
	r := &rendering{}
	var remotes sync.Map // resolveKey → commit
	var recorder *helmRecorder
	usedHelm := &helmUse{}
	if f.helm != nil {
		recorder = &helmRecorder{HelmRenderer: f.helm, used: usedHelm, capabilities: req.capabilities}
	}
	for i, s := range all {
		if multi && s.src.Path == "" && s.src.Chart == "" && s.src.Ref != "" {
			continue // files only
		}
		opts := render.Options{
			ReleaseName: req.ReleaseName,
			Namespace:   req.Namespace,
			Refs:        refs,
			Remote: func(ctx context.Context, repoURL, ref string) (fs.FS, error) {
				if err := req.allow(repoURL); err != nil {
					return nil, err
				}
				return f.remote(ctx, repoURL, ref, req.Refresh, &remotes)
			},
		}
		if recorder != nil {
			opts.Helm = recorder
		}
		var objs []*unstructured.Unstructured
		if s.src.Chart != "" {
			chart := render.HelmChart{RepoURL: s.src.RepoURL, Name: s.src.Chart, Version: s.revision,
				Source: fmt.Sprintf("%s %s %s", gitrepo.RedactURL(s.src.RepoURL), s.src.Chart, s.revision)}
			objs, err = recorder.RenderChart(ctx, render.HelmRequestFor(s.src, opts, chart))
			if err != nil {
				return nil, fmt.Errorf("%s%w", name(i), err)
			}
		} else {
			snap := s.snap
			if snap == nil {
				if snap, err = f.snapshot(ctx, s.src.RepoURL, s.revision); err != nil {
					return nil, fmt.Errorf("%s%w", name(i), err)
				}
			}
			objs, err = render.Render(ctx, snap.FS(), s.src, opts)
			if err != nil {
				return nil, fmt.Errorf("%srender %s at %.8s: %w", name(i), gitrepo.RedactURL(s.src.RepoURL), s.revision, err)
			}
		}
		r.objects = append(r.objects, objs...)
	}
	remotes.Range(func(k, v any) bool {
		if r.remotes == nil {
			r.remotes = map[resolveKey]string{}
		}
		r.remotes[k.(resolveKey)] = v.(string)
		return true
	})
	r.charts = lookups.seen
	r.reached = lookups.reachedRepositories(r.remotes)
	r.dependencies = dependenciesOf(r.remotes, r.charts)
	if usedHelm.Load() {
		// Helm's output depends on the release and the cluster: remember it under a key
		// that says which, and that this rendering needs one.
		caps, _ := recorder.caps()
		helmKey, err := renderKey(all, req, &caps)
		if err != nil {
			return nil, err
		}
		f.rendered.Add(key, &rendering{usedHelm: true})
		f.rendered.Add(helmKey, r)
	} else {
		f.rendered.Add(key, r)
	}
	m.Objects, m.Dependencies = r.objects, r.dependencies
	return m, nil
}

// dependenciesOf is Manifests.Dependencies of a rendering that read remotes (remote bases
// at their commits) and charts (constraints and the versions they resolved to): a digest of
// them in a stable order, or "" for none.
func dependenciesOf(remotes map[resolveKey]string, charts map[chartLookup]string) string {
	if len(remotes) == 0 && len(charts) == 0 {
		return ""
	}
	var lines []string
	for k, commit := range remotes {
		lines = append(lines, strings.Join([]string{"remote", k.url, k.revision, commit}, "\x00"))
	}
	for l, version := range charts {
		lines = append(lines, strings.Join([]string{"chart", l.repoURL, l.chart, l.constraint, version}, "\x00"))
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// cached returns the remembered rendering of key (or, for a rendering that ran Helm, of
// helmKey) whose remote bases have not moved, or nil.
func (f *Fetcher) cached(ctx context.Context, key string, all []fetched, req Request) *rendering {
	v, ok := f.rendered.Get(key)
	if !ok {
		return nil
	}
	r := v.(*rendering)
	if r.usedHelm {
		caps, err := req.capabilities()
		if err != nil {
			return nil
		}
		helmKey, err := renderKey(all, req, &caps)
		if err != nil {
			return nil
		}
		if v, ok = f.rendered.Get(helmKey); !ok {
			return nil
		}
		r = v.(*rendering)
	}
	if !f.remotesUnchanged(ctx, r.remotes, req.Refresh) || !f.chartsUnchanged(ctx, r.charts, req.Refresh) {
		return nil
	}
	return r
}

// helmUse records whether a rendering ran Helm.
type helmUse = atomic.Bool

// helmRecorder is a HelmRenderer that records its use and gives charts the destination
// cluster's capabilities, discovered on first use: sources that are no charts never ask the
// cluster. It fails when they cannot be discovered.
type helmRecorder struct {
	render.HelmRenderer
	used         *helmUse
	capabilities func() (render.Capabilities, error)

	once    sync.Once
	value   render.Capabilities
	discErr error
}

func (h *helmRecorder) caps() (render.Capabilities, error) {
	h.once.Do(func() { h.value, h.discErr = h.capabilities() })
	return h.value, h.discErr
}

func (h *helmRecorder) RenderChart(ctx context.Context, req render.HelmRequest) ([]*unstructured.Unstructured, error) {
	h.used.Store(true)
	caps, err := h.caps()
	if err != nil {
		return nil, fmt.Errorf("the destination cluster's version and APIs, which Helm charts see: %w", err)
	}
	req.Capabilities = caps
	return h.HelmRenderer.RenderChart(ctx, req)
}

// remote is render.Options.Remote: the snapshot of a remote kustomize base, resolved through
// the same cache as sources, and recorded in seen.
func (f *Fetcher) remote(ctx context.Context, repoURL, ref string, refresh bool, seen *sync.Map) (fs.FS, error) {
	commit, _, err := f.lookup(ctx, repoURL, ref, refresh)
	if err != nil {
		return nil, err
	}
	snap, err := f.snapshot(ctx, repoURL, commit)
	if err != nil {
		return nil, err
	}
	seen.Store(resolveKey{repoURL, ref}, commit)
	return snap.FS(), nil
}

// remotesUnchanged reports whether every remote base a rendering read still resolves to the
// commit it read; with refresh, Git is asked.
func (f *Fetcher) remotesUnchanged(ctx context.Context, remotes map[resolveKey]string, refresh bool) bool {
	for k, commit := range remotes {
		now, _, err := f.lookup(ctx, k.url, k.revision, refresh)
		if err != nil || now != commit {
			return false
		}
	}
	return true
}

// lookup resolves revision of the repository at url: from what the Fetcher resolved within the
// poll interval, or else by asking Git with the repository's credentials, which are read only
// then (an idle fleet's passes ask for revisions the Fetcher knows).
func (f *Fetcher) lookup(ctx context.Context, url, revision string, refresh bool) (string, time.Duration, error) {
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
		creds, err := f.credentials(ctx, url)
		if err != nil {
			return "", err
		}
		commit, err := f.git.Resolve(ctx, url, revision, creds)
		if err != nil {
			// The next Fetch asks again rather than answering from the older resolution: a
			// refresh that found the repository unreadable (credentials revoked) is not
			// hidden by the pass after it.
			f.mu.Lock()
			if cur, ok := f.resolved[key]; ok && !cur.forgotten && !cur.at.After(now) {
				f.resolved[key] = resolution{at: now, forgotten: true}
			}
			f.mu.Unlock()
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

// snapshot reads the repository at url at commit, with the repository's credentials.
func (f *Fetcher) snapshot(ctx context.Context, url, commit string) (gitrepo.Snapshot, error) {
	creds, err := f.credentials(ctx, url)
	if err != nil {
		return nil, err
	}
	return f.git.Snapshot(ctx, url, commit, creds)
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

// renderKey identifies a rendering: the revisions and every source option that affects it,
// and, with caps, the release and the cluster's capabilities that Helm charts see.
func renderKey(all []fetched, req Request, caps *render.Capabilities) (string, error) {
	h := sha256.New()
	for _, s := range all {
		src := s.src
		src.TargetRevision = ""
		data, err := json.Marshal(src)
		if err != nil {
			return "", err
		}
		h.Write([]byte(s.revision))
		h.Write([]byte{0})
		h.Write(data)
		h.Write([]byte{0})
	}
	if caps != nil {
		data, err := json.Marshal([]any{req.ReleaseName, req.Namespace, caps})
		if err != nil {
			return "", err
		}
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ShortRevision shortens each full commit SHA of a revision (or of several sources' joined
// revisions) to 8 characters, as status messages and the CLI show them; chart versions stay.
func ShortRevision(rev string) string {
	parts := strings.Split(rev, ",")
	for i, p := range parts {
		if len(p) == 40 && strings.Trim(p, "0123456789abcdef") == "" {
			parts[i] = p[:8]
		}
	}
	return strings.Join(parts, ",")
}
