package chartserver

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// pushTimeout bounds one push to the in-process registry.
const pushTimeout = time.Minute

// RegistryOptions configures a [Registry].
type RegistryOptions struct {
	// Addr is the TCP address to listen on. Empty means [DefaultAddr].
	Addr string

	// Auth, if set, is demanded of every request. With a username the
	// registry challenges for basic auth; with only a token it challenges
	// for a bearer token, which clients must already hold (there is no
	// token service).
	Auth Auth

	// Log, if non-nil, receives one line per request and the registry's own
	// log. Nil discards them.
	Log io.Writer
}

// Registry is a running OCI registry (go-containerregistry's in-memory
// implementation of the distribution API) over plain HTTP. Its methods are
// safe for concurrent use.
type Registry struct {
	srv  *server
	host string
}

// StartRegistry opens the listener and serves an empty registry in a
// background goroutine. The caller must call [Registry.Close].
func StartRegistry(opts RegistryOptions) (*Registry, error) {
	const name = "chartserver registry"
	logger := newLogger(name, opts.Log)
	srv, err := start(name, opts.Addr, opts.Auth, logger, ggcr.New(ggcr.Logger(logger)))
	if err != nil {
		return nil, err
	}
	return &Registry{srv: srv, host: strings.TrimPrefix(srv.url, "http://")}, nil
}

// URL returns the registry as an Application's repoURL names it:
// oci://127.0.0.1:PORT. A chart pushed below repository "charts" is then at
// repoURL URL()+"/charts".
func (r *Registry) URL() string { return registry.OCIScheme + "://" + r.host }

// Host returns the registry's host:port.
func (r *Registry) Host() string { return r.host }

// Close stops the server, waiting briefly for requests in flight. It is
// safe to call more than once.
func (r *Registry) Close() error { return r.srv.close() }

// PushChart packages the chart in dir and pushes it below repository (a
// path such as "charts", or "" for the registry's root).
func (r *Registry) PushChart(repository, dir string) (*Chart, error) {
	c, err := PackageDir(dir)
	if err != nil {
		return nil, err
	}
	return c, r.Push(repository, c)
}

// PushChartFiles packages a chart made of files (see [Package]) and pushes
// it below repository.
func (r *Registry) PushChartFiles(repository, name, version string, files map[string]string) (*Chart, error) {
	c, err := Package(name, version, files)
	if err != nil {
		return nil, err
	}
	return c, r.Push(repository, c)
}

// Push pushes a packaged chart to REPOSITORY/NAME:VERSION with Helm's
// registry client, exactly as `helm push` does, so the manifest, config and
// layer are the ones Helm produces.
func (r *Registry) Push(repository string, c *Chart) error {
	ref := r.host + "/"
	if repository = strings.Trim(repository, "/"); repository != "" {
		ref += repository + "/"
	}
	ref += c.Name + ":" + c.Version

	cred := auth.EmptyCredential
	if r.srv.auth.Username != "" {
		cred = auth.Credential{Username: r.srv.auth.Username, Password: r.srv.auth.Password}
	} else if r.srv.auth.BearerToken != "" {
		cred = auth.Credential{AccessToken: r.srv.auth.BearerToken}
	}
	client, err := registry.NewClient(
		registry.ClientOptPlainHTTP(),
		registry.ClientOptWriter(io.Discard),
		// Never consult the user's helm or docker credentials.
		registry.ClientOptCredentialsFile(os.DevNull),
		registry.ClientOptAuthorizer(auth.Client{
			Client:     &http.Client{Timeout: pushTimeout},
			Credential: auth.StaticCredential(r.host, cred),
		}),
	)
	if err != nil {
		return fmt.Errorf("chartserver: registry client: %w", err)
	}
	if _, err := client.Push(c.Archive, ref); err != nil {
		return fmt.Errorf("chartserver: push %s: %w", ref, err)
	}
	return nil
}

// Requests returns how many requests for the URL path (e.g.
// "/v2/charts/web/tags/list") the registry received, with any method and
// whatever their answer. Pushes make requests too.
func (r *Registry) Requests(path string) int { return r.srv.requests("", path) }

// BlobDownloads returns how many times the blob with digest (hex SHA-256,
// as [Chart.Digest]) was fetched (GET) from repository/name, e.g. how often
// a chart's archive layer was pulled.
func (r *Registry) BlobDownloads(repository, name, digest string) int {
	path := "/v2/" + name + "/blobs/sha256:" + digest
	if repository = strings.Trim(repository, "/"); repository != "" {
		path = "/v2/" + repository + "/" + name + "/blobs/sha256:" + digest
	}
	return r.srv.requests(http.MethodGet, path)
}

// Statuses returns the status codes answered to requests for path, in
// order, e.g. [200 304] for an index fetched and then found unchanged.
func (r *Registry) Statuses(path string) []int { return r.srv.statusesOf(path) }

// ResetRequests forgets the requests counted so far.
func (r *Registry) ResetRequests() { r.srv.resetRequests() }
