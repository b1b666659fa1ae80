// Package githubserver runs a GitHub-compatible REST API server on the
// loopback interface, for tests and for `navarch dev`, because github.com is
// out of reach of the machines that build and demo navarch.
//
// The server speaks the subset of GitHub's REST API v3 that navarch's GitHub
// client uses, in GitHub Enterprise's layout (everything under /api/v3/), so
// the real go-github client configured with
//
//	github.NewClient(hc).WithEnterpriseURLs(s.URL(), s.URL())
//
// and ghinstallation with BaseURL set to s.APIURL() work against it
// unchanged: repositories, branches, contents, pull requests, commit statuses,
// GitHub App installation tokens and /rate_limit. It reproduces the parts of
// GitHub's behaviour that clients must cope with: pagination Link headers,
// ETags and 304 Not Modified (which do not count against the rate limit),
// primary and secondary rate limits, bad credentials and private
// repositories that answer 404.
//
// A test builds the world it needs with [Server.AddRepo], [Server.AddToken]
// and [Server.AddApp], changes it with [Server.OpenPR], [Server.PushPR],
// [Server.EditPR], [Server.ClosePR] and [Server.Push] (each delivers the
// webhook GitHub would send to the hooks added with [Server.AddHook]), injects
// faults with [Server.SetRateLimit], [Server.Fail], [Server.SecondaryLimit]
// and [Server.Delay], and inspects what happened with [Server.Requests],
// [Server.Statuses] and [Server.Deliveries].
//
// A server running in another process (`navarch dev up` supervises one) is
// driven through the loopback-only admin API under /_navarch/ with a
// [Remote].
package githubserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// DefaultAddr is the listen address used when [Options.Addr] is empty: the
// loopback interface on a free port.
const DefaultAddr = "127.0.0.1:0"

// apiPrefix is where GitHub Enterprise serves the REST API, and where
// go-github's WithEnterpriseURLs sends its requests.
const apiPrefix = "/api/v3"

// shutdownGrace bounds how long [Server.Close] waits for requests in flight.
const shutdownGrace = 5 * time.Second

// ErrNotFound is wrapped by the errors of [Remote] (and the panics of
// [Server]'s change methods) when a repository, pull request or branch does
// not exist.
var ErrNotFound = errors.New("not found")

// errInvalid marks a change GitHub would refuse, such as a pull request
// without a head branch.
var errInvalid = errors.New("invalid")

// Options configures a [Server].
type Options struct {
	// Addr is the TCP address to listen on. Empty means [DefaultAddr]. The
	// admin API answers loopback clients only, whatever the address.
	Addr string

	// Logger receives the server's logs (failed webhook deliveries, admin
	// changes at V(1)). Optional; the zero value discards them.
	Logger logr.Logger

	// RequireAuth makes the server answer 401 to API requests that carry no
	// credentials, as [Server.RequireAuth] does.
	RequireAuth bool
}

// Server is a running GitHub-compatible API server. Its methods are safe for
// concurrent use.
type Server struct {
	log      logr.Logger
	url      string
	listener net.Listener
	http     *http.Server
	hooks    *http.Client

	serveDone chan struct{} // closed when http.Server.Serve returns
	closing   chan struct{} // closed by Close, ends artificial delays
	closeOnce sync.Once
	closeErr  error

	// mu guards everything below.
	mu          sync.Mutex
	nextID      int64
	requireAuth bool
	tokens      map[string]tokenInfo
	apps        map[int64]*app
	repos       map[string]*repo // by repoKey
	requests    []Request
	deliveries  []Delivery
	limits      limits
}

// Request is one API request as the server saw it, for tests that count API
// calls.
type Request struct {
	// Method is the HTTP method.
	Method string
	// Path is the URL path, e.g. /api/v3/repos/acme/app/pulls.
	Path string
	// Query is the raw query string, without '?'.
	Query string
	// Status is the status code of the answer.
	Status int
	// Token is the token the request was authenticated with, "" if it was
	// anonymous or authenticated as a GitHub App (JWT).
	Token string
	// Conditional is true if the request carried If-None-Match.
	Conditional bool
}

// Start opens the listener and serves in a background goroutine. It returns
// once the server accepts connections; the caller must call [Server.Close].
func Start(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("githubserver: listen on %s: %w", addr, err)
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	s := &Server{
		log:         log,
		url:         "http://" + dialableAddr(ln.Addr()),
		listener:    ln,
		hooks:       &http.Client{Timeout: hookTimeout},
		serveDone:   make(chan struct{}),
		closing:     make(chan struct{}),
		requireAuth: opts.RequireAuth,
		tokens:      map[string]tokenInfo{},
		apps:        map[int64]*app{},
		repos:       map[string]*repo{},
		limits:      newLimits(),
	}
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() {
		defer close(s.serveDone)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error(err, "Server stopped serving")
		}
	}()
	return s, nil
}

// dialableAddr turns a listener address into host:port a client can dial:
// an unspecified IP (0.0.0.0, ::) becomes the loopback address.
func dialableAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := tcp.IP
	switch {
	case ip.IsUnspecified() && ip.To4() != nil:
		ip = net.IPv4(127, 0, 0, 1)
	case ip.IsUnspecified():
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port))
}

// URL returns the base URL of the server, e.g. http://127.0.0.1:38123, with
// no trailing slash. Web URLs (html_url, clone_url) live below it.
func (s *Server) URL() string { return s.url }

// APIURL returns the base URL of the REST API, URL() + "/api/v3/", which is
// what go-github's WithEnterpriseURLs and ghinstallation's BaseURL expect.
func (s *Server) APIURL() string { return s.url + apiPrefix + "/" }

// Close stops the server: it ends artificial delays, stops accepting
// connections and waits briefly for requests in flight. It is safe to call
// more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			if cerr := s.http.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			s.closeErr = fmt.Errorf("githubserver: shutdown: %w", err)
		}
		<-s.serveDone
		s.hooks.CloseIdleConnections()
	})
	return s.closeErr
}

// Requests returns the API requests served so far (or since
// [Server.ResetRequests]), oldest first. Admin API calls are not included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ResetRequests forgets the requests served so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// routes maps GitHub's REST endpoints and the admin API.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(method, path string, h apiHandler, rt route) {
		mux.Handle(method+" "+apiPrefix+path, s.api(h, rt))
	}
	api(http.MethodGet, "/rate_limit", s.getRateLimit, route{free: true})
	api(http.MethodGet, "/repos/{owner}/{repo}", s.getRepo, route{})
	api(http.MethodGet, "/orgs/{owner}/repos", s.listOwnerRepos, route{})
	api(http.MethodGet, "/users/{owner}/repos", s.listOwnerRepos, route{})
	api(http.MethodGet, "/repos/{owner}/{repo}/branches", s.listBranches, route{})
	api(http.MethodGet, "/repos/{owner}/{repo}/branches/{branch...}", s.getBranch, route{})
	api(http.MethodGet, "/repos/{owner}/{repo}/contents", s.getContents, route{})
	api(http.MethodGet, "/repos/{owner}/{repo}/contents/{path...}", s.getContents, route{})
	api(http.MethodGet, "/repos/{owner}/{repo}/pulls", s.listPulls, route{})
	api(http.MethodGet, "/repos/{owner}/{repo}/pulls/{number}", s.getPull, route{})
	api(http.MethodPost, "/repos/{owner}/{repo}/statuses/{sha}", s.createStatus, route{})
	api(http.MethodGet, "/repos/{owner}/{repo}/commits/{rest...}", s.getCommitStatuses, route{})
	api(http.MethodPost, "/app/installations/{id}/access_tokens", s.createInstallationToken, route{app: true})
	mux.Handle(apiPrefix+"/", s.api(notFound, route{}))
	mux.Handle("/_navarch/", s.admin())
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, notFoundReply().body)
	}))
	return mux
}
