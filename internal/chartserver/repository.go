package chartserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// chartsDir is the directory below the repository URL where archives are
// served. The index names them relative to the repository URL
// (charts/NAME-VERSION.tgz), as `helm repo index` does for a nested layout.
const chartsDir = "charts"

// RepositoryOptions configures a [Repository].
type RepositoryOptions struct {
	// Addr is the TCP address to listen on. Empty means [DefaultAddr].
	Addr string

	// Auth, if set, is demanded of every request, index and archives alike.
	Auth Auth

	// Log, if non-nil, receives one line per request (method, path,
	// status, duration; never credentials). Nil discards them.
	Log io.Writer
}

// Repository is a running Helm chart repository: index.yaml and the
// packaged charts it lists, over plain HTTP. Its methods are safe for
// concurrent use.
type Repository struct {
	srv *server

	mu       sync.Mutex
	charts   map[string]*repoEntry // by archive file name
	index    []byte
	etag     string
	modified time.Time
}

// repoEntry is one chart version and how the index describes it.
type repoEntry struct {
	chart  *Chart
	url    string // the entry's URL in index.yaml
	digest string // the entry's digest in index.yaml
}

// StartRepository opens the listener and serves an empty repository in a
// background goroutine. The caller must call [Repository.Close].
func StartRepository(opts RepositoryOptions) (*Repository, error) {
	r := &Repository{charts: map[string]*repoEntry{}}
	r.regenerate()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /index.yaml", r.serveIndex)
	mux.HandleFunc("GET /"+chartsDir+"/{file}", r.serveArchive)
	mux.HandleFunc("POST "+uploadPath, r.serveUpload)
	const name = "chartserver repository"
	srv, err := start(name, opts.Addr, opts.Auth, newLogger(name, opts.Log), mux)
	if err != nil {
		return nil, err
	}
	r.srv = srv
	return r, nil
}

// URL returns the repository URL, e.g. http://127.0.0.1:38123, with no
// trailing slash: what `helm repo add` and an Application's repoURL take.
func (r *Repository) URL() string { return r.srv.url }

// Close stops the server, waiting briefly for requests in flight. It is
// safe to call more than once.
func (r *Repository) Close() error { return r.srv.close() }

// AddChart packages the chart in dir and publishes it.
func (r *Repository) AddChart(dir string) (*Chart, error) {
	c, err := PackageDir(dir)
	if err != nil {
		return nil, err
	}
	r.add(c)
	return c, nil
}

// AddChartFiles packages a chart made of files (see [Package]) and
// publishes it.
func (r *Repository) AddChartFiles(name, version string, files map[string]string) (*Chart, error) {
	c, err := Package(name, version, files)
	if err != nil {
		return nil, err
	}
	r.add(c)
	return c, nil
}

func (r *Repository) add(c *Chart) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.charts[c.Filename()] = &repoEntry{
		chart:  c,
		url:    chartsDir + "/" + c.Filename(),
		digest: c.Digest,
	}
	r.regenerate()
}

// SetChartURL makes the index point at url for the archive of name at
// version, e.g. an absolute URL on another server. The archive is still
// served at its usual path too.
func (r *Repository) SetChartURL(name, version, url string) error {
	return r.edit(name, version, func(e *repoEntry) { e.url = url })
}

// SetDigest makes the index claim digest (hex SHA-256) for the archive of
// name at version, to test clients that verify it.
func (r *Repository) SetDigest(name, version, digest string) error {
	return r.edit(name, version, func(e *repoEntry) { e.digest = digest })
}

func (r *Repository) edit(name, version string, change func(*repoEntry)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.charts[name+"-"+version+".tgz"]
	if !ok {
		return fmt.Errorf("chartserver: no chart %s version %s", name, version)
	}
	change(e)
	r.regenerate()
	return nil
}

// ArchivePath returns the URL path the archive of name at version is served
// at, for [Repository.Requests].
func (r *Repository) ArchivePath(name, version string) string {
	return "/" + chartsDir + "/" + name + "-" + version + ".tgz"
}

// Requests returns how many requests for the URL path (e.g. "/index.yaml"
// or an [Repository.ArchivePath]) the server received, whatever their
// answer.
func (r *Repository) Requests(path string) int { return r.srv.requests("", path) }

// AuthorizedRequests returns how many requests for path carried an
// Authorization header.
func (r *Repository) AuthorizedRequests(path string) int { return r.srv.authorizedRequests(path) }

// Statuses returns the status codes answered to requests for path, in
// order, e.g. [200 304] for an index fetched and then found unchanged.
func (r *Repository) Statuses(path string) []int { return r.srv.statusesOf(path) }

// ResetRequests forgets the requests counted so far.
func (r *Repository) ResetRequests() { r.srv.resetRequests() }

// regenerate rebuilds index.yaml with Helm's own index type. Callers hold
// r.mu.
func (r *Repository) regenerate() {
	idx := repo.NewIndexFile()
	for _, e := range r.charts {
		meta := *e.chart.meta
		if err := idx.MustAdd(&meta, e.url, "", e.digest); err != nil {
			// Package validated the metadata already.
			panic(fmt.Sprintf("chartserver: index %s: %v", e.chart.Filename(), err))
		}
	}
	idx.SortEntries()
	data, err := yaml.Marshal(idx)
	if err != nil {
		panic(fmt.Sprintf("chartserver: marshal index: %v", err))
	}
	sum := sha256.Sum256(data)
	r.index = data
	r.etag = `"` + hex.EncodeToString(sum[:16]) + `"`
	r.modified = time.Now()
}

// serveIndex answers with index.yaml, honouring If-None-Match and
// If-Modified-Since as a static file server would.
func (r *Repository) serveIndex(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	data, etag, modified := r.index, r.etag, r.modified
	r.mu.Unlock()
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "application/x-yaml")
	http.ServeContent(w, req, "index.yaml", modified, bytes.NewReader(data))
}

func (r *Repository) serveArchive(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	e, ok := r.charts[req.PathValue("file")]
	r.mu.Unlock()
	if !ok {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	http.ServeContent(w, req, e.chart.Filename(), fileTime, bytes.NewReader(e.chart.Archive))
}
