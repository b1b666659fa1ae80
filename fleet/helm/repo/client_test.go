package repo_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/navarch-io/navarch/fleet/helm/repo"
	"github.com/navarch-io/navarch/internal/chartserver"
)

// chartFiles is a small but real chart.
var chartFiles = map[string]string{
	"values.yaml":              "replicas: 1\n",
	"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
}

// published are the versions every test repository starts with.
var published = []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0-rc.1"}

// backend is a chart server of either kind, seen the way the client sees
// it.
type backend struct {
	kind    string
	repoURL string
	// publish adds a chart version.
	publish func(t *testing.T, chart, version string) *chartserver.Chart
	// downloads counts the requests for the archive of c.
	downloads func(c *chartserver.Chart) int
	// listings counts the requests for the version list of chart.
	listings func(chart string) int
	// creds are the credentials the client must use, without auth.
	creds repo.Credentials
}

func startHTTPBackend(t *testing.T, auth chartserver.Auth) *backend {
	t.Helper()
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return &backend{
		kind:    "http",
		repoURL: r.URL(),
		publish: func(t *testing.T, chart, version string) *chartserver.Chart {
			t.Helper()
			c, err := r.AddChartFiles(chart, version, chartFiles)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		downloads: func(c *chartserver.Chart) int { return r.Requests(r.ArchivePath(c.Name, c.Version)) },
		listings:  func(string) int { return r.Requests("/index.yaml") },
	}
}

func startOCIBackend(t *testing.T, auth chartserver.Auth) *backend {
	t.Helper()
	reg, err := chartserver.StartRegistry(chartserver.RegistryOptions{Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	return &backend{
		kind:    "oci",
		repoURL: reg.URL() + "/charts",
		publish: func(t *testing.T, chart, version string) *chartserver.Chart {
			t.Helper()
			c, err := reg.PushChartFiles("charts", chart, version, chartFiles)
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		downloads: func(c *chartserver.Chart) int { return reg.BlobDownloads("charts", c.Name, c.Digest) },
		listings:  func(chart string) int { return reg.Requests("/v2/charts/" + chart + "/tags/list") },
		creds:     repo.Credentials{PlainHTTP: true},
	}
}

// eachBackend runs test against a Helm repository and an OCI registry,
// each holding chart "web" at the published versions.
func eachBackend(t *testing.T, test func(t *testing.T, b *backend)) {
	for _, start := range []func(*testing.T, chartserver.Auth) *backend{startHTTPBackend, startOCIBackend} {
		b := start(t, chartserver.Auth{})
		t.Run(b.kind, func(t *testing.T) {
			for _, v := range published {
				b.publish(t, "web", v)
			}
			test(t, b)
		})
	}
}

// credentialsFor returns an Options.Credentials that hands creds to
// repoURL only.
func credentialsFor(repoURL string, creds repo.Credentials) func(context.Context, string) (*repo.Credentials, error) {
	return func(_ context.Context, url string) (*repo.Credentials, error) {
		if url != repoURL {
			return nil, nil
		}
		c := creds
		return &c, nil
	}
}

func newClient(b *backend, opts repo.Options) *repo.Client {
	if opts.Credentials == nil {
		opts.Credentials = credentialsFor(b.repoURL, b.creds)
	}
	return repo.New(opts)
}

func TestResolve(t *testing.T) {
	cases := []struct {
		version string
		want    string
	}{
		{version: "", want: "1.2.0"}, // latest stable: the release candidate is skipped
		{version: "1.1.0", want: "1.1.0"},
		{version: "2.0.0-rc.1", want: "2.0.0-rc.1"},
		{version: "^1.0", want: "1.2.0"},
		{version: "~1.1", want: "1.1.0"},
		{version: ">=1.0 <1.2", want: "1.1.0"},
		{version: "1.x", want: "1.2.0"},
		{version: ">=2.0.0-0", want: "2.0.0-rc.1"},
	}
	eachBackend(t, func(t *testing.T, b *backend) {
		c := newClient(b, repo.Options{})
		for _, tc := range cases {
			got, err := c.Resolve(t.Context(), b.repoURL, "web", tc.version, false)
			if err != nil {
				t.Errorf("Resolve(%q): %v", tc.version, err)
				continue
			}
			if got != tc.want {
				t.Errorf("Resolve(%q) = %s, want %s", tc.version, got, tc.want)
			}
		}
		if n := b.listings("web"); n != 1 {
			t.Errorf("the version list was fetched %d times for %d resolutions, want once", n, len(cases))
		}
	})
}

func TestResolveErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		c := newClient(b, repo.Options{})
		cases := []struct {
			chart, version string
			kind           error
			message        string
		}{
			{
				chart: "web", version: "9.9.9", kind: repo.ErrVersionNotFound,
				message: fmt.Sprintf(`helm repository %s: chart "web" version "9.9.9": no such version (have 2.0.0-rc.1, 1.2.0, 1.1.0, 1.0.0)`, b.repoURL),
			},
			{
				chart: "web", version: "^3", kind: repo.ErrVersionNotFound,
				message: fmt.Sprintf(`helm repository %s: chart "web" version "^3": no such version (have 2.0.0-rc.1, 1.2.0, 1.1.0, 1.0.0)`, b.repoURL),
			},
			{
				chart: "nope", version: "1.0.0", kind: repo.ErrChartNotFound,
				message: fmt.Sprintf(`helm repository %s: chart "nope" version "1.0.0": no such chart`, b.repoURL),
			},
			{chart: "web", version: "not a version", kind: repo.ErrInvalidVersion},
		}
		for _, tc := range cases {
			_, err := c.Resolve(t.Context(), b.repoURL, tc.chart, tc.version, false)
			if !errors.Is(err, tc.kind) {
				t.Errorf("Resolve(%s, %q) = %v, want %v", tc.chart, tc.version, err, tc.kind)
				continue
			}
			var e *repo.Error
			if !errors.As(err, &e) || e.Repo != b.repoURL || e.Chart != tc.chart || e.Version != tc.version {
				t.Errorf("Resolve(%s, %q) = %#v, want a *repo.Error naming the repository, chart and version", tc.chart, tc.version, err)
			}
			if tc.message != "" && err.Error() != tc.message {
				t.Errorf("Resolve(%s, %q) says\n  %s\nwant\n  %s", tc.chart, tc.version, err, tc.message)
			}
		}
		// Fetch reports the same way.
		if _, err := c.Fetch(t.Context(), b.repoURL, "web", "9.9.9"); !errors.Is(err, repo.ErrVersionNotFound) {
			t.Errorf("Fetch of a missing version: %v, want %v", err, repo.ErrVersionNotFound)
		}
	})
}

func TestFetch(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		want := b.publish(t, "api", "0.4.2")
		c := newClient(b, repo.Options{})
		got, err := c.Fetch(t.Context(), b.repoURL, "api", "~0.4")
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "api" || got.Version != "0.4.2" || got.Digest != "sha256:"+want.Digest || string(got.Archive) != string(want.Archive) {
			t.Errorf("Fetch = %s %s %s (%d bytes), want api 0.4.2 sha256:%s (%d bytes)", got.Name, got.Version, got.Digest, len(got.Archive), want.Digest, len(want.Archive))
		}
	})
}

func TestConcurrentFetchesDownloadOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		want := b.publish(t, "big", "3.1.4")
		cacheDir := t.TempDir()
		c := newClient(b, repo.Options{CacheDir: cacheDir})

		const fetches = 20
		var wg sync.WaitGroup
		errs := make(chan error, fetches)
		for i := range fetches {
			version := "3.1.4"
			if i%2 == 1 {
				version = "^3" // resolves to the same version
			}
			wg.Go(func() {
				ch, err := c.Fetch(t.Context(), b.repoURL, "big", version)
				if err == nil && ch.Digest != "sha256:"+want.Digest {
					err = fmt.Errorf("got digest %s, want sha256:%s", ch.Digest, want.Digest)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if n := b.downloads(want); n != 1 {
			t.Errorf("%d concurrent fetches downloaded the archive %d times, want once", fetches, n)
		}

		// A new client on the same cache directory, as after a restart,
		// finds the archive on disk.
		restarted := newClient(b, repo.Options{CacheDir: cacheDir})
		ch, err := restarted.Fetch(t.Context(), b.repoURL, "big", "3.1.4")
		if err != nil {
			t.Fatal(err)
		}
		if ch.Digest != "sha256:"+want.Digest {
			t.Errorf("from the disk cache: digest %s, want sha256:%s", ch.Digest, want.Digest)
		}
		if n := b.downloads(want); n != 1 {
			t.Errorf("after a restart on the same cache directory the archive was downloaded %d times, want once", n)
		}
	})
}

func TestIndexTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, b *backend) {
		clock := clocktesting.NewFakePassiveClock(time.Now())
		c := newClient(b, repo.Options{Clock: clock}) // the default TTL
		resolve := func(refresh bool) string {
			t.Helper()
			v, err := c.Resolve(t.Context(), b.repoURL, "web", "", refresh)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if v := resolve(false); v != "1.2.0" {
			t.Fatalf("latest = %s, want 1.2.0", v)
		}
		b.publish(t, "web", "1.3.0")

		clock.SetTime(clock.Now().Add(repo.DefaultIndexTTL - time.Second))
		if v := resolve(false); v != "1.2.0" {
			t.Errorf("within the TTL: latest = %s, want the cached 1.2.0", v)
		}
		if n := b.listings("web"); n != 1 {
			t.Errorf("within the TTL the version list was fetched %d times, want once", n)
		}
		if v := resolve(true); v != "1.3.0" {
			t.Errorf("with refresh: latest = %s, want 1.3.0", v)
		}
		if n := b.listings("web"); n != 2 {
			t.Errorf("refresh fetched the version list %d times in all, want 2", n)
		}

		b.publish(t, "web", "1.4.0")
		clock.SetTime(clock.Now().Add(repo.DefaultIndexTTL))
		if v := resolve(false); v != "1.4.0" {
			t.Errorf("after the TTL: latest = %s, want 1.4.0", v)
		}
		if n := b.listings("web"); n != 3 {
			t.Errorf("after the TTL the version list was fetched %d times in all, want 3", n)
		}
	})
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		repoURL string
		creds   repo.Credentials
	}{
		{repoURL: "oci://" + closed + "/charts", creds: repo.Credentials{PlainHTTP: true}},
		{repoURL: "oci://" + closed + "/charts"}, // HTTPS
		{repoURL: "http://" + closed},
	} {
		c := repo.New(repo.Options{Credentials: credentialsFor(tc.repoURL, tc.creds)})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := c.Fetch(ctx, tc.repoURL, "web", "1.0.0")
		cancel()
		if !errors.Is(err, repo.ErrUnreachable) {
			t.Errorf("Fetch from %s: %v, want %v", tc.repoURL, err, repo.ErrUnreachable)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Fetch from %s waited for its deadline instead of failing at once: %v", tc.repoURL, err)
		}
	}
}

func TestInvalidRepositoryURL(t *testing.T) {
	c := repo.New(repo.Options{})
	for _, u := range []string{
		"ftp://charts.example.com",
		"charts.example.com/stable",
		"oci://",
		"https://",
		"https://bob:hunter2@charts.example.com", // credentials belong in a Secret
		"oci://bob:hunter2@registry.example.com/charts",
	} {
		_, err := c.Resolve(t.Context(), u, "web", "", false)
		if !errors.Is(err, repo.ErrInvalidRepository) {
			t.Errorf("Resolve(%q): %v, want %v", u, err, repo.ErrInvalidRepository)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}
