// Package gitserver runs a real smart-HTTP Git server on the loopback
// interface, for tests and for `navarch dev up`.
//
// The server is Git's own `git http-backend` (shipped with the git package,
// found under `git --exec-path`) run behind Go's net/http/cgi, so clients see
// exactly the protocol a production Git host speaks: clone, fetch, ls-remote
// and push all work, including protocol v2, shallow and SHA fetches. It serves
// the bare repositories below [Options.Root] at URLs of the form
// http://127.0.0.1:PORT/NAME.git, optionally behind HTTP basic auth.
//
// Besides serving, a [Server] can set repositories up: [Server.CreateRepo]
// makes a bare repository whose first commit on main is a snapshot of a
// directory, [Server.Update] commits edits made by a callback in a scratch
// clone, and [Server.Branch] and [Server.Tag] add refs. All of it shells out
// to the git CLI with a controlled environment (see [Git]) so that the user's
// own git configuration never leaks in.
//
// With [Options.SSHAddr] the same repositories are also served over SSH, as
// a Git host does: a Go SSH server with a fresh ed25519 host key
// ([Server.KnownHostsLine] trusts it) lets in clients presenting a key
// registered with [Server.AuthorizeKey] (see [GenerateSSHKey]) and runs
// Git's own git-upload-pack or git-receive-pack for the repository their
// command names, at ssh://git@127.0.0.1:PORT/NAME.git ([Server.SSHURL]) or
// git@[127.0.0.1:PORT]:NAME.git ([Server.SCPLikeURL]).
//
// A server is started with [Start], which returns once the listeners are
// open, and stopped with [Server.Close]. A long-running process that wants
// to block while serving calls [Server.Wait].
package gitserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// DefaultAddr is the listen address used when [Options.Addr] is empty: the
// loopback interface on a free port.
const DefaultAddr = "127.0.0.1:0"

// authRealm is the realm sent in WWW-Authenticate challenges.
const authRealm = "navarch"

// shutdownGrace bounds how long [Server.Close] waits for in-flight requests
// (a clone or push in progress) before cutting connections.
const shutdownGrace = 10 * time.Second

// Options configures a [Server].
type Options struct {
	// Root is the directory holding the bare repositories, served as
	// GIT_PROJECT_ROOT. It is created if missing. Required.
	Root string

	// Addr is the TCP address to listen on. Empty means [DefaultAddr].
	Addr string

	// SSHAddr, if not empty, is the TCP address to serve the repositories
	// over SSH on as well, e.g. [DefaultAddr]. Only keys registered with
	// [Server.AuthorizeKey] may log in.
	SSHAddr string

	// Username and Password enable HTTP basic auth when Username is
	// non-empty: every request must then carry exactly these credentials
	// or it is answered with 401 Unauthorized.
	Username string
	Password string

	// Log, if non-nil, receives one line per request (method, path,
	// status, user, duration; never credentials) or SSH command (command,
	// user, key fingerprint, exit status, duration), the stderr of
	// git-http-backend and server errors. Writes are serialized. Nil
	// discards all of it.
	Log io.Writer
}

// Server is a running smart-HTTP Git server. Its methods are safe for
// concurrent use; note that concurrent updates of the same branch race like
// any two git pushes would, and the loser gets a non-fast-forward error.
type Server struct {
	root     string
	url      string
	listener net.Listener
	http     *http.Server
	ssh      *sshFrontend // nil without Options.SSHAddr

	serveDone chan struct{} // closed when http.Server.Serve returns
	serveErr  error         // set before serveDone is closed

	closeOnce sync.Once
	closeErr  error
}

// Start validates opts, opens the listener and serves in a background
// goroutine. It returns once the server accepts connections. The caller must
// call [Server.Close] to stop it.
func Start(opts Options) (*Server, error) {
	if opts.Root == "" {
		return nil, errors.New("gitserver: Options.Root is required")
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("gitserver: resolve root %q: %w", opts.Root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("gitserver: create root: %w", err)
	}
	backend, err := httpBackendPath()
	if err != nil {
		return nil, err
	}

	logw := io.Discard
	if opts.Log != nil {
		logw = &lockedWriter{w: opts.Log}
	}
	logger := log.New(logw, "gitserver: ", log.LstdFlags)

	h := &handler{
		backend: cgi.Handler{
			Path: backend,
			Root: "/",
			Env: []string{
				"GIT_PROJECT_ROOT=" + root,
				"GIT_HTTP_EXPORT_ALL=1",
				"GIT_CONFIG_NOSYSTEM=1",
				"GIT_CONFIG_GLOBAL=" + os.DevNull,
				"LC_ALL=C",
			},
			Logger: logger,
			Stderr: logw,
		},
		log: logger,
	}
	if opts.Username != "" {
		h.auth = true
		h.userSum = sha256.Sum256([]byte(opts.Username))
		h.passSum = sha256.Sum256([]byte(opts.Password))
	}

	addr := opts.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gitserver: listen on %s: %w", addr, err)
	}

	s := &Server{
		root:     root,
		url:      "http://" + dialableAddr(ln.Addr()),
		listener: ln,
		http: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 30 * time.Second,
			ErrorLog:          logger,
		},
		serveDone: make(chan struct{}),
	}
	if opts.SSHAddr != "" {
		if s.ssh, err = startSSH(s, opts.SSHAddr, logger); err != nil {
			ln.Close()
			return nil, err
		}
	}
	go func() {
		defer close(s.serveDone)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = fmt.Errorf("gitserver: serve: %w", err)
		}
	}()
	return s, nil
}

// URL returns the base URL of the server, e.g. http://127.0.0.1:38123, with
// no trailing slash. If the server listens on an unspecified address
// (0.0.0.0 or ::) the URL uses the matching loopback address.
func (s *Server) URL() string { return s.url }

// RepoURL returns the clone URL of the repository called name:
// URL() + "/" + name + ".git". It does not check that the repository exists.
func (s *Server) RepoURL(name string) string { return s.url + "/" + name + ".git" }

// Root returns the absolute directory holding the bare repositories.
func (s *Server) Root() string { return s.root }

// Wait blocks until the server stops serving and returns the reason: nil
// after [Server.Close], otherwise the error that ended the accept loop.
func (s *Server) Wait() error {
	<-s.serveDone
	return s.serveErr
}

// Close gracefully shuts the server down: it stops accepting connections and
// waits (up to ten seconds) for requests and SSH commands in flight to
// finish, then closes whatever is left. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		stopBy := time.Now().Add(shutdownGrace)
		ctx, cancel := context.WithDeadline(context.Background(), stopBy)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			// Grace period over: drop the remaining connections.
			if cerr := s.http.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			s.closeErr = fmt.Errorf("gitserver: shutdown: %w", err)
		}
		<-s.serveDone
		if s.ssh != nil {
			s.closeErr = errors.Join(s.closeErr, s.ssh.close(time.Until(stopBy)))
		}
	})
	return s.closeErr
}

// httpBackendPath locates git-http-backend in git's exec path.
func httpBackendPath() (string, error) {
	execPath, err := Git("", "--exec-path")
	if err != nil {
		return "", fmt.Errorf("gitserver: locate git-http-backend: %w", err)
	}
	p := filepath.Join(execPath, "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("gitserver: git-http-backend not found in git exec path: %w", err)
	}
	return p, nil
}

// dialableAddr renders a listener address for use in a URL, replacing an
// unspecified IP by loopback.
func dialableAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := tcp.IP
	switch {
	case ip == nil || ip.Equal(net.IPv4zero):
		ip = net.IPv4(127, 0, 0, 1)
	case ip.Equal(net.IPv6unspecified):
		ip = net.IPv6loopback
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port))
}

// handler authenticates requests and hands them to git-http-backend.
type handler struct {
	backend cgi.Handler // template; copied per request
	log     *log.Logger

	auth    bool
	userSum [sha256.Size]byte
	passSum [sha256.Size]byte
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	user := "-"
	defer func() {
		h.log.Printf("%s %s %d user=%s %s", r.Method, r.URL.RequestURI(), rec.statusCode(), user, time.Since(start).Round(time.Millisecond))
	}()

	if h.auth {
		u, p, ok := r.BasicAuth()
		if !ok || !h.authorized(u, p) {
			rec.Header().Set("WWW-Authenticate", `Basic realm="`+authRealm+`"`)
			http.Error(rec, "authentication required", http.StatusUnauthorized)
			return
		}
		user = u
	}

	// The CGI handler copies every request header into the child's
	// environment; the credentials have no business there.
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")

	// net/http/cgi refuses chunked request bodies, which git uses for
	// pushes larger than http.postBuffer. Spool them so the backend gets a
	// CONTENT_LENGTH.
	if slices.Contains(r.TransferEncoding, "chunked") {
		cleanup, err := spoolBody(r)
		if err != nil {
			h.log.Printf("spool request body: %v", err)
			http.Error(rec, "cannot read request body", http.StatusBadRequest)
			return
		}
		defer cleanup()
	}

	cgiHandler := h.backend
	if h.auth {
		// git-http-backend allows receive-pack for any authenticated
		// user even where http.receivepack is unset.
		cgiHandler.Env = append(slices.Clip(h.backend.Env), "REMOTE_USER="+user)
	}
	cgiHandler.ServeHTTP(rec, r)
}

// authorized compares credentials in constant time. Hashing first keeps the
// comparison independent of the lengths involved.
func (h *handler) authorized(user, pass string) bool {
	u := sha256.Sum256([]byte(user))
	p := sha256.Sum256([]byte(pass))
	okUser := subtle.ConstantTimeCompare(u[:], h.userSum[:])
	okPass := subtle.ConstantTimeCompare(p[:], h.passSum[:])
	return okUser&okPass == 1
}

// spoolBody replaces a chunked request body by a temporary file of known
// length. The returned function removes the file.
func spoolBody(r *http.Request) (cleanup func(), err error) {
	f, err := os.CreateTemp("", "navarch-gitserver-body-")
	if err != nil {
		return nil, err
	}
	cleanup = func() {
		f.Close()
		os.Remove(f.Name())
	}
	n, err := io.Copy(f, r.Body)
	r.Body.Close()
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, err
	}
	r.Body = f
	r.ContentLength = n
	r.TransferEncoding = nil
	return cleanup, nil
}

// statusRecorder remembers the status code written, for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) statusCode() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// lockedWriter serializes writes from the request logger and concurrent
// git-http-backend processes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
