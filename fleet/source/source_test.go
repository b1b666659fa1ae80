package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
	"github.com/navarch-io/navarch/internal/gitrepo"
	"github.com/navarch-io/navarch/internal/gitserver"
)

const (
	repoName     = "platform"
	pollInterval = time.Hour
)

func configMap(version string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  version: \"" + version + "\"\n"
}

const service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n"

const deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n"

// fixture is a Git server holding the repository "platform", a Fetcher reading it through a
// real gitrepo.Reader, and the Fetcher's clock.
type fixture struct {
	server  *gitserver.Server
	fetcher *Fetcher
	now     time.Time
	first   string // the commit CreateRepo made
}

// newFixture starts a Git server whose repository holds apps/web with a ConfigMap at version 1
// and a Service, and a Fetcher polling it every hour on a clock the test moves.
func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"apps/web/configmap.yaml": configMap("1"),
		"apps/web/service.yaml":   service,
		"README.md":               "# platform\n",
	})
	server, err := gitserver.Start(gitserver.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatalf("start Git server: %v (this test needs git and git-http-backend)", err)
	}
	t.Cleanup(func() {
		if err := server.Close(); err != nil {
			t.Errorf("close Git server: %v", err)
		}
	})
	first, err := server.CreateRepo(repoName, src)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := gitrepo.New(gitrepo.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reader.Close(); err != nil {
			t.Errorf("close Git reader: %v", err)
		}
	})
	opts.Git = reader
	opts.PollInterval = pollInterval
	fx := &fixture{
		server:  server,
		fetcher: New(opts),
		now:     time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC),
		first:   first,
	}
	fx.fetcher.now = func() time.Time { return fx.now }
	return fx
}

// source is the Application source of apps/web on branch main.
func (fx *fixture) source() navarchv1.ApplicationSource {
	return navarchv1.ApplicationSource{RepoURL: fx.server.RepoURL(repoName), Path: "apps/web", TargetRevision: "main"}
}

// push commits files (path → content; empty content deletes) to main.
func (fx *fixture) push(t *testing.T, files map[string]string) string {
	t.Helper()
	commit, err := fx.server.Update(repoName, "change", func(dir string) error {
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if content == "" {
				if err := os.Remove(p); err != nil {
					return err
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return commit
}

func (fx *fixture) resolve(t *testing.T, ref string) string {
	t.Helper()
	commit, err := fx.server.Resolve(repoName, ref)
	if err != nil {
		t.Fatal(err)
	}
	return commit
}

func (fx *fixture) fetch(t *testing.T, src navarchv1.ApplicationSource, revision string, refresh bool) *Manifests {
	t.Helper()
	m, err := fx.fetcher.Fetch(context.Background(), src, revision, refresh)
	if err != nil {
		t.Fatalf("Fetch(%q, refresh=%t): %v", revision, refresh, err)
	}
	return m
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// summary describes objects as "Kind name" plus, for ConfigMaps, "version=<data.version>".
func summary(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		s := o.GetKind() + " " + o.GetName()
		if v, ok, _ := unstructured.NestedString(o.Object, "data", "version"); ok {
			s += " version=" + v
		}
		out = append(out, s)
	}
	return out
}

// sameObjects reports whether a and b hold the very same objects, as a cache hit returns.
func sameObjects(a, b []*unstructured.Unstructured) bool {
	return slices.Equal(a, b)
}

func checkManifests(t *testing.T, step string, m *Manifests, commit string, objects []string, nextPoll time.Duration) {
	t.Helper()
	if m.Commit != commit {
		t.Errorf("%s: Commit = %s, want %s", step, m.Commit, commit)
	}
	if got := summary(m.Objects); !slices.Equal(got, objects) {
		t.Errorf("%s: objects = %q, want %q", step, got, objects)
	}
	if m.NextPoll != nextPoll {
		t.Errorf("%s: NextPoll = %s, want %s", step, m.NextPoll, nextPoll)
	}
	if m.NextPoll <= 0 || m.NextPoll > pollInterval {
		t.Errorf("%s: NextPoll = %s, want in (0, %s]", step, m.NextPoll, pollInterval)
	}
}

func TestFetchFollowsBranchEveryPollInterval(t *testing.T) {
	fx := newFixture(t, Options{})
	src := fx.source()
	v1 := []string{"ConfigMap web-config version=1", "Service web"}
	v2 := []string{"ConfigMap web-config version=2", "Deployment web", "Service web"}

	if main := fx.resolve(t, "main"); main != fx.first {
		t.Fatalf("the server's main is %s, CreateRepo made %s", main, fx.first)
	}
	first := fx.fetch(t, src, "", false)
	checkManifests(t, "first fetch", first, fx.first, v1, pollInterval)

	// A push is not seen before the poll interval has elapsed: the resolution and the
	// rendered objects both come from the cache.
	fx.now = fx.now.Add(10 * time.Minute)
	second := fx.push(t, map[string]string{"apps/web/configmap.yaml": configMap("2"), "apps/web/deployment.yaml": deployment})
	if main := fx.resolve(t, "main"); main != second {
		t.Fatalf("the server's main is %s after the push, Update made %s", main, second)
	}
	cached := fx.fetch(t, src, "", false)
	checkManifests(t, "fetch 10m after a push", cached, fx.first, v1, 50*time.Minute)
	if !sameObjects(cached.Objects, first.Objects) {
		t.Errorf("fetch 10m after a push rendered again instead of reusing the cached objects")
	}

	// A refresh asks Git at once.
	refreshed := fx.fetch(t, src, "", true)
	checkManifests(t, "refresh", refreshed, second, v2, pollInterval)

	// The refresh restarted the poll interval.
	fx.now = fx.now.Add(30 * time.Minute)
	again := fx.fetch(t, src, "", false)
	checkManifests(t, "fetch 30m after the refresh", again, second, v2, 30*time.Minute)
	if !sameObjects(again.Objects, refreshed.Objects) {
		t.Errorf("fetch 30m after the refresh rendered again instead of reusing the cached objects")
	}

	// Once the interval has elapsed, Git is asked again without a refresh.
	third := fx.push(t, map[string]string{"apps/web/configmap.yaml": configMap("3"), "apps/web/deployment.yaml": ""})
	fx.now = fx.now.Add(30 * time.Minute)
	polled := fx.fetch(t, src, "", false)
	checkManifests(t, "fetch 1h after the refresh", polled, third, []string{"ConfigMap web-config version=3", "Service web"}, pollInterval)

	// An Application without a target revision follows HEAD, the default branch.
	head := src
	head.TargetRevision = ""
	checkManifests(t, "fetch of HEAD", fx.fetch(t, head, "", false), third, []string{"ConfigMap web-config version=3", "Service web"}, pollInterval)
}

func TestFetchRevision(t *testing.T) {
	fx := newFixture(t, Options{})
	src := fx.source()
	v1 := []string{"ConfigMap web-config version=1", "Service web"}
	v2 := []string{"ConfigMap web-config version=2", "Service web"}
	if _, err := fx.server.Tag(repoName, "v1.0.0", fx.first, ""); err != nil {
		t.Fatal(err)
	}
	second := fx.push(t, map[string]string{"apps/web/configmap.yaml": configMap("2")})

	pinned := src
	pinned.TargetRevision = fx.first
	tests := []struct {
		name     string
		src      navarchv1.ApplicationSource
		revision string
		commit   string
		objects  []string
	}{
		{name: "target revision", src: src, commit: second, objects: v2},
		{name: "revision argument is a commit SHA", src: src, revision: fx.first, commit: fx.first, objects: v1},
		{name: "revision argument is a tag", src: src, revision: "v1.0.0", commit: fx.first, objects: v1},
		{name: "target revision is a commit SHA", src: pinned, commit: fx.first, objects: v1},
		{name: "revision argument overrides a pinned target revision", src: pinned, revision: "main", commit: second, objects: v2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkManifests(t, "Fetch", fx.fetch(t, tc.src, tc.revision, false), tc.commit, tc.objects, pollInterval)
		})
	}
}

func TestFetchRendersEachSourceOptionsSeparately(t *testing.T) {
	fx := newFixture(t, Options{})
	all := fx.source()
	only := all
	only.Directory = &navarchv1.ApplicationSourceDirectory{Include: "configmap.yaml"}

	got := fx.fetch(t, all, "", false)
	checkManifests(t, "whole directory", got, fx.first, []string{"ConfigMap web-config version=1", "Service web"}, pollInterval)
	got = fx.fetch(t, only, "", false)
	checkManifests(t, "include configmap.yaml", got, fx.first, []string{"ConfigMap web-config version=1"}, pollInterval)
}

func TestFetchErrors(t *testing.T) {
	fx := newFixture(t, Options{})
	broken := fx.push(t, map[string]string{"apps/broken/bad.yaml": "apiVersion: v1\nkind: [ConfigMap\n"})

	brokenSrc := fx.source()
	brokenSrc.Path = "apps/broken"
	missingPath := fx.source()
	missingPath.Path = "apps/nothing-here"
	tests := []struct {
		name     string
		src      navarchv1.ApplicationSource
		revision string
		check    func(t *testing.T, err error)
	}{
		{
			name: "invalid YAML",
			src:  brokenSrc,
			check: func(t *testing.T, err error) {
				var renderErr *render.Error
				if !errors.As(err, &renderErr) || renderErr.File != "apps/broken/bad.yaml" {
					t.Errorf("error %v is not a render error in apps/broken/bad.yaml", err)
				}
				for _, want := range []string{"apps/broken/bad.yaml", fx.server.RepoURL(repoName), broken[:8]} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %s", err, want)
					}
				}
			},
		},
		{
			name: "missing path",
			src:  missingPath,
			check: func(t *testing.T, err error) {
				if !errors.Is(err, render.ErrPathNotFound) {
					t.Errorf("error %v does not match render.ErrPathNotFound", err)
				}
			},
		},
		{
			name:     "unknown revision",
			src:      fx.source(),
			revision: "no-such-branch",
			check: func(t *testing.T, err error) {
				if !errors.Is(err, gitrepo.ErrRevisionNotFound) {
					t.Errorf("error %v does not match gitrepo.ErrRevisionNotFound", err)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := fx.fetcher.Fetch(context.Background(), tc.src, tc.revision, true)
			if err == nil {
				t.Fatalf("Fetch = %q at %s, want an error", summary(m.Objects), m.Commit)
			}
			tc.check(t, err)
		})
	}

	// A broken directory does not spoil the others at the same commit.
	got := fx.fetch(t, fx.source(), "", true)
	checkManifests(t, "the good directory", got, broken, []string{"ConfigMap web-config version=1", "Service web"}, pollInterval)
}

// Credentials are read when Git is asked (a resolution, a snapshot), and only then: a fetch the
// Fetcher answers from what it resolved and rendered within the poll interval reads none, so an
// idle fleet's passes do not list Secrets; a failure to read them fails the fetch that needs them.
func TestFetchCredentials(t *testing.T) {
	errNoSecret := errors.New("secret repo-creds not found")
	var asked []string
	failing := false
	fx := newFixture(t, Options{Credentials: func(_ context.Context, repoURL string) (*gitrepo.Credentials, error) {
		asked = append(asked, repoURL)
		if failing {
			return nil, errNoSecret
		}
		return nil, nil
	}})
	src := fx.source()
	fx.fetch(t, src, "", false)
	if want := []string{src.RepoURL, src.RepoURL}; !slices.Equal(asked, want) {
		t.Errorf("the first fetch asked for the credentials of %q, want %q (the resolution and the snapshot)", asked, want)
	}

	failing, asked = true, nil
	fx.now = fx.now.Add(pollInterval / 2)
	fx.fetch(t, src, "", false)
	if len(asked) != 0 {
		t.Errorf("a fetch answered from the Fetcher's memory asked for the credentials of %q, want none", asked)
	}

	fx.now = fx.now.Add(pollInterval)
	if _, err := fx.fetcher.Fetch(context.Background(), src, "", false); !errors.Is(err, errNoSecret) {
		t.Errorf("Fetch after the poll interval with failing credentials = %v, want %v", err, errNoSecret)
	}
	if want := []string{src.RepoURL}; !slices.Equal(asked, want) {
		t.Errorf("the fetch after the poll interval asked for the credentials of %q, want %q", asked, want)
	}
}

// Revision gives what FetchSources gives as Commit and NextPoll, without rendering; answered
// from what the Fetcher resolved within the poll interval, it allocates nothing: an idle fleet
// asks it once per Application and poll.
func TestRevisionIsTheCommitOfAFetchWithoutRendering(t *testing.T) {
	ctx := context.Background()
	fx := newFixture(t, Options{})
	src := fx.source()
	second := fx.push(t, map[string]string{"apps/web/configmap.yaml": configMap("2")})
	other := src
	other.Path = "apps"
	requests := map[string]Request{
		"one source":            {Sources: []navarchv1.ApplicationSource{src}},
		"a revision":            {Sources: []navarchv1.ApplicationSource{src}, Revisions: []string{fx.first}},
		"two sources":           {Sources: []navarchv1.ApplicationSource{src, other}},
		"two sources, revision": {Sources: []navarchv1.ApplicationSource{src, other}, Revisions: []string{"", fx.first}},
	}
	wantCommit := map[string]string{"one source": second, "a revision": fx.first, "two sources": second + "," + second, "two sources, revision": second + "," + fx.first}
	fx.now = fx.now.Add(10 * time.Minute) // the first fetch of each resolves at this time
	for name, req := range requests {
		m, err := fx.fetcher.FetchSources(ctx, req)
		if err != nil {
			t.Fatalf("%s: FetchSources: %v", name, err)
		}
		fx.now = fx.now.Add(time.Minute)
		commit, next, err := fx.fetcher.Revision(ctx, req)
		fx.now = fx.now.Add(-time.Minute)
		if err != nil || commit != m.Commit || commit != wantCommit[name] || next != m.NextPoll-time.Minute {
			t.Errorf("%s: Revision = %s, %s, %v; want %s, %s (FetchSources gave %s, %s a minute before)",
				name, commit, next, err, wantCommit[name], m.NextPoll-time.Minute, m.Commit, m.NextPoll)
		}
	}

	// Nothing is rendered: a path that does not exist fails a fetch, not Revision.
	missing := src
	missing.Path = "apps/none"
	req := Request{Sources: []navarchv1.ApplicationSource{missing}}
	if _, err := fx.fetcher.FetchSources(ctx, req); err == nil {
		t.Fatal("FetchSources of a path that does not exist succeeded")
	}
	if commit, _, err := fx.fetcher.Revision(ctx, req); err != nil || commit != second {
		t.Errorf("Revision of a path that does not exist = %s, %v; want %s", commit, err, second)
	}

	if n := testing.AllocsPerRun(100, func() {
		if _, _, err := fx.fetcher.Revision(ctx, requests["one source"]); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Revision answered from the Fetcher's memory made %v allocations, want 0", n)
	}
}
