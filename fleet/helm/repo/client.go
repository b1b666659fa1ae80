package repo

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/utils/clock"
	"oras.land/oras-go/v2/registry/remote/auth"
	ctrl "sigs.k8s.io/controller-runtime"
)

const (
	// DefaultIndexTTL is how long an index.yaml or tag list is trusted when
	// Options.IndexTTL is zero: the Git poll interval, so a chart published
	// next to a commit is seen as soon as the commit is.
	DefaultIndexTTL = 3 * time.Minute
	// DefaultMemoryCacheBytes bounds the archives kept in memory when
	// Options.MemoryCacheBytes is zero.
	DefaultMemoryCacheBytes = 256 << 20
	// MaxArchiveBytes is the largest chart archive accepted.
	MaxArchiveBytes = 64 << 20
	// MaxIndexBytes is the largest index.yaml accepted.
	MaxIndexBytes = 32 << 20
)

// Credentials authenticate to one repository. The caller picks them by
// repository URL, as Argo CD matches repository Secrets.
type Credentials struct {
	// Username and Password are sent as HTTP basic auth.
	Username, Password string
	// BearerToken is sent as "Authorization: Bearer TOKEN" (HTTP
	// repositories) or used as the registry token (OCI), when Username is
	// empty.
	BearerToken string
	// CertData and KeyData are a TLS client certificate and its key (PEM).
	CertData, KeyData []byte
	// CAData is a CA bundle (PEM) trusted besides the system's.
	CAData []byte
	// PlainHTTP makes an OCI registry be talked to over HTTP, not HTTPS.
	PlainHTTP bool
	// PassCredentials sends the basic or bearer credentials also to chart
	// URLs on other hosts than the repository's, as Helm's
	// --pass-credentials and Argo CD's spec.source.helm.passCredentials do.
	// Without it they go to the repository's own origin (scheme, host,
	// port) only.
	PassCredentials bool
}

// Options configures a [Client].
type Options struct {
	// CacheDir is where archives are kept across restarts, by digest. Empty
	// keeps them in memory only.
	CacheDir string
	// Credentials returns the credentials for a repository URL, or nil for
	// anonymous access. Nil means always anonymous.
	Credentials func(ctx context.Context, url string) (*Credentials, error)
	// IndexTTL is how long a fetched index.yaml or OCI tag list is trusted
	// before it is fetched again. Zero means DefaultIndexTTL.
	IndexTTL time.Duration
	// HTTPClient supplies the timeout and transport settings (proxy, dial
	// and TLS timeouts). Its Transport must be an *http.Transport for TLS
	// credentials to apply. Nil means a client with sane timeouts.
	HTTPClient *http.Client
	// MemoryCacheBytes bounds the archives kept in memory. Zero means
	// DefaultMemoryCacheBytes.
	MemoryCacheBytes int64
	// Clock tells the time for index expiry. Nil means the real clock.
	Clock clock.PassiveClock
}

// Chart is a packaged chart.
type Chart struct {
	// Name is the chart's name and Version its exact version.
	Name, Version string
	// Digest is the SHA-256 of Archive, as "sha256:HEX".
	Digest string
	// Archive is the .tgz archive. It is shared with the cache: do not
	// modify it.
	Archive []byte
}

// Client fetches charts from Helm repositories and OCI registries. It is
// safe for concurrent use and meant to be shared: its caches are what make
// a chart version download once.
type Client struct {
	opts   Options
	base   *http.Client
	clock  clock.PassiveClock
	ttl    time.Duration
	cache  *archiveCache
	charts flight[*Chart]

	indexes indexCache
	tags    tagCache

	mu            sync.Mutex
	tlsTransports map[string]http.RoundTripper // by hash of the TLS material
	authCaches    map[string]auth.Cache        // registry tokens, by host and hash of the credentials
}

// New returns a client. It does no I/O.
func New(opts Options) *Client {
	c := &Client{
		opts:          opts,
		base:          opts.HTTPClient,
		clock:         opts.Clock,
		ttl:           opts.IndexTTL,
		tlsTransports: map[string]http.RoundTripper{},
		authCaches:    map[string]auth.Cache{},
	}
	if c.base == nil {
		c.base = defaultHTTPClient()
	}
	if c.base.Transport == nil {
		c.base = &http.Client{Timeout: c.base.Timeout, Transport: http.DefaultTransport}
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.ttl <= 0 {
		c.ttl = DefaultIndexTTL
	}
	memory := opts.MemoryCacheBytes
	if memory <= 0 {
		memory = DefaultMemoryCacheBytes
	}
	c.cache = newArchiveCache(opts.CacheDir, memory)
	return c
}

// Resolve returns the exact version of chart in the repository at repoURL
// that matches version: an exact version, a semver constraint such as
// "^1.2" or ">=1.0 <2", or "" for the latest stable version. It reads the
// repository's index.yaml (or the registry's tag list), trusted for
// Options.IndexTTL unless refresh is set.
func (c *Client) Resolve(ctx context.Context, repoURL, chart, version string, refresh bool) (string, error) {
	r, err := parseRepository(repoURL)
	if err != nil {
		return "", &Error{Repo: redact(repoURL), Chart: chart, Version: version, Err: err}
	}
	exact, err := c.resolve(ctx, r, chart, version, refresh)
	if err != nil {
		return "", &Error{Repo: r.display, Chart: chart, Version: version, Err: err}
	}
	return exact, nil
}

// Fetch returns the packaged chart of chart at version (exact or a
// constraint, as for [Client.Resolve]) with its digest. A version already
// downloaded is served from the cache without asking the repository;
// concurrent fetches of the same version share one download.
func (c *Client) Fetch(ctx context.Context, repoURL, chart, version string) (*Chart, error) {
	return c.fetchChart(ctx, repoURL, chart, version, false)
}

// FetchChart is [Client.Fetch] in the shape fleet/helm's ChartFetcher takes.
// passCredentials sends the repository's basic or bearer credentials also
// to chart downloads on other hosts, as Credentials.PassCredentials does:
// an Application's spec.source.helm.passCredentials.
func (c *Client) FetchChart(ctx context.Context, repoURL, name, version string, passCredentials bool) (archive []byte, digest string, err error) {
	ch, err := c.fetchChart(ctx, repoURL, name, version, passCredentials)
	if err != nil {
		return nil, "", err
	}
	return ch.Archive, ch.Digest, nil
}

func (c *Client) fetchChart(ctx context.Context, repoURL, chart, version string, pass bool) (*Chart, error) {
	r, err := parseRepository(repoURL)
	if err != nil {
		return nil, &Error{Repo: redact(repoURL), Chart: chart, Version: version, Err: err}
	}
	ch, err := c.fetch(ctx, r, chart, version, pass)
	if err != nil {
		return nil, &Error{Repo: r.display, Chart: chart, Version: version, Err: err}
	}
	return ch, nil
}

func (c *Client) resolve(ctx context.Context, r *repository, chart, version string, refresh bool) (string, error) {
	if chart == "" {
		return "", fmt.Errorf("%w: empty chart name", ErrChartNotFound)
	}
	if version != "" && !isExact(version) {
		if _, err := semver.NewConstraint(version); err != nil {
			return "", fmt.Errorf("%w: %w", ErrInvalidVersion, err)
		}
	}
	if r.oci {
		return c.resolveTag(ctx, r, chart, version, refresh)
	}
	cv, err := c.indexEntry(ctx, r, chart, version, refresh)
	if err != nil {
		return "", err
	}
	return cv.Version, nil
}

func (c *Client) fetch(ctx context.Context, r *repository, chart, version string, pass bool) (*Chart, error) {
	// An exact version already downloaded needs no index: versions are
	// immutable in Helm repositories.
	if isExact(version) {
		if ch, ok := c.cache.get(chartKey{repo: r.key, chart: chart, version: version}); ok {
			return ch, nil
		}
	}
	exact, err := c.resolve(ctx, r, chart, version, false)
	if err != nil {
		return nil, err
	}
	key := chartKey{repo: r.key, chart: chart, version: exact}
	if ch, ok := c.cache.get(key); ok {
		return ch, nil
	}
	// Downloads that may send credentials elsewhere and those that may not
	// are kept apart: joining the other kind would fail or leak.
	return c.charts.do(ctx, fmt.Sprintf("%s\x00%t", key, pass), func(ctx context.Context) (*Chart, error) {
		// A caller that joined late may find the download finished.
		if ch, ok := c.cache.get(key); ok {
			return ch, nil
		}
		var ch *Chart
		var err error
		if r.oci {
			ch, err = c.pull(ctx, r, chart, exact)
		} else {
			ch, err = c.download(ctx, r, chart, exact, pass)
		}
		if err != nil {
			return nil, err
		}
		if err := c.cache.put(key, ch); err != nil {
			// The chart is good; only its copy on disk is missing.
			ctrl.LoggerFrom(ctx).Error(err, "Cannot write the chart cache", "repo", r.display, "chart", chart, "version", exact)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Downloaded chart", "repo", r.display, "chart", chart, "version", exact, "digest", ch.Digest, "bytes", len(ch.Archive))
		return ch, nil
	})
}

// credentials looks up the credentials of r; nil means anonymous.
func (c *Client) credentials(ctx context.Context, r *repository) (*Credentials, error) {
	if c.opts.Credentials == nil {
		return nil, nil
	}
	creds, err := c.opts.Credentials(ctx, r.key)
	if err != nil {
		return nil, fmt.Errorf("look up credentials: %w", err)
	}
	return creds, nil
}

// repository is a parsed repository URL.
type repository struct {
	oci bool
	// key is the URL without trailing slash: what the caches are keyed
	// by and what Options.Credentials is asked about.
	key string
	// display is key, for messages.
	display string
	// url is key parsed (HTTP repositories).
	url *url.URL
	// ref is host[:port][/path] of an OCI registry repository, to which
	// "/CHART" is appended.
	ref string
	// host is the registry's host[:port] (OCI).
	host string
}

func parseRepository(raw string) (*repository, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRepository, err)
	}
	if u.User != nil {
		// As for Git repositories (internal/credentials): credentials in
		// a URL end up in logs, events and status.
		return nil, fmt.Errorf("%w: user info (user:password@) is not allowed in a repository URL; keep credentials in a repository Secret", ErrInvalidRepository)
	}
	r := &repository{}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	u.Fragment, u.RawFragment = "", ""
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("%w: URL has no host", ErrInvalidRepository)
		}
		r.url = u
	case "oci":
		if u.Host == "" || u.RawQuery != "" {
			return nil, fmt.Errorf("%w: want oci://HOST[:PORT]/PATH", ErrInvalidRepository)
		}
		r.oci = true
		r.host = u.Host
		r.ref = u.Host + u.Path
	default:
		return nil, fmt.Errorf("%w: scheme %q: want https://, http:// or oci://", ErrInvalidRepository, u.Scheme)
	}
	r.key = u.String()
	r.display = r.key
	return r, nil
}

// isExact reports whether version names one version rather than a range.
func isExact(version string) bool {
	_, err := semver.StrictNewVersion(version)
	return err == nil
}

// newest returns up to n versions from versions, newest first (which is
// how index entries and tag lists are sorted), for messages.
func newest(versions []string, n int) string {
	if len(versions) > n {
		return strings.Join(versions[:n], ", ") + ", …"
	}
	return strings.Join(versions, ", ")
}

// fresh reports whether something fetched at fetched is still trusted.
func (c *Client) fresh(fetched time.Time) bool {
	return c.clock.Since(fetched) < c.ttl
}
