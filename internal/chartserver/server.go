package chartserver

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
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultAddr is the listen address used when an Addr option is empty: the
// loopback interface on a free port.
const DefaultAddr = "127.0.0.1:0"

// authRealm is the realm sent in WWW-Authenticate challenges.
const authRealm = "navarch"

// shutdownGrace bounds how long Close waits for requests in flight.
const shutdownGrace = 5 * time.Second

// Auth holds the credentials a server demands. The zero value lets every
// request through.
type Auth struct {
	// Username and Password enable HTTP basic auth when Username is
	// non-empty.
	Username string
	Password string

	// BearerToken, if non-empty, is accepted as "Authorization: Bearer
	// TOKEN". When both are set either one is enough.
	BearerToken string
}

func (a Auth) enabled() bool { return a.Username != "" || a.BearerToken != "" }

// server is the HTTP plumbing both kinds of server share: the listener,
// authentication, per-path request counts and shutdown.
type server struct {
	name     string // "chartserver repository", for errors
	url      string
	listener net.Listener
	http     *http.Server
	log      *log.Logger

	auth    Auth
	userSum [sha256.Size]byte
	passSum [sha256.Size]byte
	bearSum [sha256.Size]byte

	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error

	connMu sync.Mutex
	fresh  map[net.Conn]struct{} // connections that have not sent a request yet

	mu       sync.Mutex
	counts   map[string]int   // by method and URL path, "GET /index.yaml"
	auths    map[string]int   // by URL path: requests that carried Authorization
	statuses map[string][]int // by URL path: the status codes answered, in order
}

// newLogger returns the request and error log of a server named name,
// writing to w (nil discards).
func newLogger(name string, w io.Writer) *log.Logger {
	if w == nil {
		w = io.Discard
	}
	return log.New(&lockedWriter{w: w}, name+": ", log.LstdFlags)
}

// start listens on addr and serves h behind authentication and counting.
func start(name, addr string, auth Auth, logger *log.Logger, h http.Handler) (*server, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", name, addr, err)
	}
	s := &server{
		name:      name,
		url:       "http://" + dialableAddr(ln.Addr()),
		listener:  ln,
		log:       logger,
		auth:      auth,
		userSum:   sha256.Sum256([]byte(auth.Username)),
		passSum:   sha256.Sum256([]byte(auth.Password)),
		bearSum:   sha256.Sum256([]byte(auth.BearerToken)),
		serveDone: make(chan struct{}),
		counts:    map[string]int{},
		auths:     map[string]int{},
		statuses:  map[string][]int{},
		fresh:     map[net.Conn]struct{}{},
	}
	s.http = &http.Server{
		Handler:           s.wrap(h),
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          s.log,
		ConnState:         s.trackFresh,
	}
	s.http.RegisterOnShutdown(s.closeFresh)
	go func() {
		defer close(s.serveDone)
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Printf("serve: %v", err)
		}
	}()
	return s, nil
}

// wrap counts every request, then authenticates it, then hands it to h.
func (s *server) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// The status is recorded as it is written, before the client can
		// see it, so a test reading it after its request returns is not
		// racing the handler.
		rec := &statusRecorder{ResponseWriter: w, onStatus: func(code int) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.statuses[r.URL.Path] = append(s.statuses[r.URL.Path], code)
		}}
		s.mu.Lock()
		s.counts[r.Method+" "+r.URL.Path]++
		if r.Header.Get("Authorization") != "" {
			s.auths[r.URL.Path]++
		}
		s.mu.Unlock()
		defer func() {
			s.log.Printf("%s %s %d %s", r.Method, r.URL.RequestURI(), rec.statusCode(), time.Since(start).Round(time.Millisecond))
		}()

		if s.auth.enabled() && !s.authorized(r) {
			challenge := `Basic realm="` + authRealm + `"`
			if s.auth.Username == "" {
				// A registry client asks the realm for a token unless it
				// holds one; there is none to be had from this one, as
				// every request, /token included, needs the token.
				challenge = `Bearer realm="` + s.url + `/token",service="` + authRealm + `"`
			}
			rec.Header().Set("WWW-Authenticate", challenge)
			http.Error(rec, "authentication required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(rec, r)
	})
}

// authorized compares credentials in constant time. Hashing first keeps the
// comparison independent of the lengths involved.
func (s *server) authorized(r *http.Request) bool {
	if s.auth.Username != "" {
		if u, p, ok := r.BasicAuth(); ok {
			us := sha256.Sum256([]byte(u))
			ps := sha256.Sum256([]byte(p))
			if subtle.ConstantTimeCompare(us[:], s.userSum[:])&subtle.ConstantTimeCompare(ps[:], s.passSum[:]) == 1 {
				return true
			}
		}
	}
	if s.auth.BearerToken != "" {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			ts := sha256.Sum256([]byte(tok))
			if subtle.ConstantTimeCompare(ts[:], s.bearSum[:]) == 1 {
				return true
			}
		}
	}
	return false
}

// requests returns how many requests for path were received with method,
// or with any method if method is empty, answered or refused.
func (s *server) requests(method, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if method != "" {
		return s.counts[method+" "+path]
	}
	n := 0
	for key, count := range s.counts {
		if _, p, _ := strings.Cut(key, " "); p == path {
			n += count
		}
	}
	return n
}

// authorizedRequests returns how many requests for path carried an
// Authorization header, valid or not.
func (s *server) authorizedRequests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auths[path]
}

// statusesOf returns the status codes answered to requests for path, in
// order.
func (s *server) statusesOf(path string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.statuses[path])
}

func (s *server) resetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.counts)
	clear(s.auths)
	clear(s.statuses)
}

// trackFresh keeps the set of connections still in http.StateNew.
func (s *server) trackFresh(c net.Conn, state http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if state == http.StateNew {
		s.fresh[c] = struct{}{}
	} else {
		delete(s.fresh, c)
	}
}

// closeFresh closes the connections that never sent a request. Shutdown
// would otherwise wait five seconds before counting them idle, and Go's
// HTTP client leaves such connections behind whenever a request it dialled
// for was served by another connection first.
func (s *server) closeFresh() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	for c := range s.fresh {
		_ = c.Close()
	}
}

func (s *server) close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			if cerr := s.http.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			s.closeErr = fmt.Errorf("%s: shutdown: %w", s.name, err)
		}
		<-s.serveDone
	})
	return s.closeErr
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

// statusRecorder remembers the status code written, for the request log
// and the per-path record.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	onStatus func(int)
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
		s.onStatus(code)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
		s.onStatus(http.StatusOK)
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

// lockedWriter serializes writes from concurrent request loggers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
