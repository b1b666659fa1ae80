// Package dashboard is navarch's web dashboard: server-rendered pages of the fleet (the
// cluster × application matrix), of each Application, ApplicationSet and Cluster, with live
// updates pushed from the management cluster's watches over Server-Sent Events, and the CLI's
// actions (sync, refresh, rollback, terminate, promote, pause, resume) behind confirmation.
//
// `navarch dashboard` builds it with New and runs it with Serve. Pages are rendered from an
// informer cache of the management cluster; templates, CSS and the one small script are
// embedded, so the binary is the whole dashboard. Every page works without JavaScript.
//
// By default it serves 127.0.0.1 with the user's own kubeconfig, so the user's RBAC applies to
// every read and action. On any other address it refuses to start without authentication: a
// bearer token (Options.TokenFile), or an authenticating proxy that names the user in a header
// (Options.ProxyUserHeader), whom the dashboard then impersonates on every Kubernetes call.
package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/internal/listenaddr"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Options configure a dashboard.
type Options struct {
	// Config reaches the management cluster. In proxy mode it must be allowed to impersonate.
	Config *rest.Config
	// Scheme has navarch's types.
	Scheme *runtime.Scheme
	// Address is where to listen, host:port. Default 127.0.0.1:8080.
	Address string
	// Namespace limits the dashboard to the Applications, ApplicationSets and Projects of one
	// namespace; empty shows every namespace.
	Namespace string
	// SystemNamespace is the controller's namespace, whose Leases say which replica syncs
	// each Cluster when replicas share the fleet. Default navarch-system.
	SystemNamespace string
	// TokenFile holds the bearer token every request must present (team mode).
	TokenFile string
	// ProxyUserHeader is the header in which an authenticating proxy names the user (team
	// mode), e.g. X-Forwarded-User; ProxyGroupsHeader optionally carries the user's groups,
	// comma-separated or repeated.
	ProxyUserHeader   string
	ProxyGroupsHeader string
	// Username is recorded as who started an operation when the dashboard acts with its own
	// credentials (local and token mode).
	Username string
	// ReadOnly hides and refuses the actions.
	ReadOnly bool
	// Log receives the server's errors.
	Log logr.Logger
}

// Server is a running dashboard's state; Handler serves it.
type Server struct {
	opts     Options
	store    *store
	clients  *clients
	pages    map[string]*template.Template
	csrfKey  []byte
	token    []byte
	sessions *sessions
	// streams holds a token per open event stream, bounding them.
	streams chan struct{}
	log     logr.Logger
}

// maxEventStreams bounds the open event streams (one per open page): each holds a goroutine,
// a buffer of changes and re-renders the matrix on changes.
const maxEventStreams = 256

// New checks the options, lists the management cluster's objects into the cache and returns
// the dashboard, ready to serve; the cache runs until ctx ends.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Address == "" {
		opts.Address = "127.0.0.1:8080"
	}
	if opts.SystemNamespace == "" {
		opts.SystemNamespace = "navarch-system"
	}
	if err := opts.checkAuth(); err != nil {
		return nil, err
	}
	s := &Server{opts: opts, csrfKey: []byte(randomID()), sessions: &sessions{ids: map[string]time.Time{}},
		streams: make(chan struct{}, maxEventStreams), log: opts.Log}
	if opts.TokenFile != "" {
		token, err := readToken(opts.TokenFile)
		if err != nil {
			return nil, err
		}
		s.token = token
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s.pages = pages
	st, err := newStore(ctx, opts.Config, opts.Scheme, opts.Namespace)
	if err != nil {
		return nil, err
	}
	s.store = st
	s.clients = &clients{base: opts.Config, scheme: opts.Scheme, mapper: st.direct.RESTMapper(), own: st.direct,
		byUser: map[string]client.Client{}, allowed: map[string]accessDecision{}}
	return s, nil
}

// Serve serves the dashboard on l until ctx ends. Without authentication, l must be bound to
// a loopback address: a name such as localhost may resolve to another interface.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if s.local() && !listenaddr.Loopback(l.Addr().String()) {
		return fmt.Errorf("--address %s listens on %s: %w", s.opts.Address, l.Addr(), errNoAuth)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: the event stream is one long response.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler is the dashboard's HTTP handler, with its security headers and authentication.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFiles, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.HandleFunc("GET /{$}", s.fleetPage)
	mux.HandleFunc("GET /applications/{namespace}/{name}", s.applicationPage)
	mux.HandleFunc("GET /applicationsets/{namespace}/{name}", s.applicationSetPage)
	mux.HandleFunc("GET /clusters", s.clustersPage)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("POST /applications/{namespace}/{name}/{action}", s.applicationAction)
	mux.HandleFunc("POST /applicationsets/{namespace}/{name}/{action}", s.applicationSetAction)
	return securityHeaders(s.authenticate(mux))
}

// securityHeaders forbid inline script and style, framing, and leaking addresses to other
// sites. The referrer policy is same-origin rather than no-referrer: with no-referrer,
// browsers send "Origin: null" on the dashboard's own form posts, which defeats the Origin
// check; same-origin still sends nothing to other sites.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

type identityKey struct{}
type sessionKey struct{}
type seqKey struct{}

// maxFormBytes bounds the body of a POST: the dashboard's forms carry a few short fields;
// formReadTimeout bounds the time to send it.
const (
	maxFormBytes    = 64 << 10
	formReadTimeout = 30 * time.Second
)

// authenticate establishes who makes the request and its session, and checks the origin and
// CSRF token of every POST.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Without authentication the dashboard acts with the user's kubeconfig on behalf of any
		// page that can reach it. A browser only sends another Host than the loopback names
		// and the bound address when a site's own name was pointed at 127.0.0.1 (DNS
		// rebinding): such a page would be same-origin with itself, so Origin checks and
		// SameSite cookies do not stop it. Refuse it before anything else.
		if s.local() && !listenaddr.LocalHost(r.Host, s.opts.Address) {
			http.Error(w, "421 misdirected request: the dashboard only answers to localhost, a loopback address or "+s.opts.Address, http.StatusMisdirectedRequest)
			return
		}
		if r.Method == http.MethodPost {
			// A small form, read within a bound: a client that trickles its body in does not
			// hold a connection open (the server has no ReadTimeout, for the event stream).
			rc := http.NewResponseController(w)
			_ = rc.SetReadDeadline(time.Now().Add(formReadTimeout))
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			err := r.ParseForm()
			_ = rc.SetReadDeadline(time.Time{})
			if err != nil {
				if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
					http.Error(w, "413 request entity too large", http.StatusRequestEntityTooLarge)
					return
				}
				http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
				return
			}
		}
		if strings.HasPrefix(r.URL.Path, "/static/") {
			next.ServeHTTP(w, r)
			return
		}
		id := identity{User: s.opts.Username}
		session := ""
		if c, err := r.Cookie(sessionCookie); err == nil {
			session = c.Value
		}
		bearer := false
		switch {
		case s.token != nil:
			if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && constantTimeEqual([]byte(auth), s.token) {
				bearer = true
			} else if session == "" || !s.sessions.valid(session) {
				if r.URL.Path == "/login" {
					next.ServeHTTP(w, r)
					return
				}
				if r.Method == http.MethodGet && r.Header.Get("Accept") != "text/event-stream" {
					http.Redirect(w, r, "/login", http.StatusSeeOther)
					return
				}
				http.Error(w, "401 unauthorized: send Authorization: Bearer <token>, or log in at /login", http.StatusUnauthorized)
				return
			}
		case s.opts.ProxyUserHeader != "":
			user := r.Header.Get(s.opts.ProxyUserHeader)
			if user == "" {
				http.Error(w, "401 unauthorized: no user in "+s.opts.ProxyUserHeader+"; reach the dashboard through the authenticating proxy", http.StatusUnauthorized)
				return
			}
			id = identity{User: user, Groups: proxyGroups(r.Header.Values(s.opts.ProxyGroupsHeader), s.opts.ProxyGroupsHeader), impersonate: true}
		}
		if session == "" && !bearer {
			session = randomID()
			setCookie(w, r, sessionCookie, session, 0)
		}
		if r.Method == http.MethodPost && r.URL.Path != "/login" && !bearer {
			if err := sameOrigin(r); err != nil {
				http.Error(w, "403 forbidden: "+err.Error(), http.StatusForbidden)
				return
			}
			if !constantTimeEqual([]byte(r.PostFormValue("csrf")), []byte(s.csrfToken(session, id))) {
				http.Error(w, "403 forbidden: missing or stale CSRF token; reload the page and try again", http.StatusForbidden)
				return
			}
		}
		ctx := context.WithValue(r.Context(), identityKey{}, id)
		ctx = context.WithValue(ctx, sessionKey{}, requestSession{id: session, bearer: bearer})
		// Read before the handler lists anything: what it renders is at least this recent.
		ctx = context.WithValue(ctx, seqKey{}, s.store.version())
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// local reports whether the dashboard runs without authentication, on a loopback address
// with the user's own credentials.
func (s *Server) local() bool { return s.token == nil && s.opts.ProxyUserHeader == "" }

// requestSession is a request's browser session, and whether it authenticated with the
// bearer token instead.
type requestSession struct {
	id     string
	bearer bool
}

func sessionOf(r *http.Request) requestSession {
	rs, _ := r.Context().Value(sessionKey{}).(requestSession)
	return rs
}

// stillAuthenticated reports whether a long-running request (the event stream) may go on:
// in token mode its login session must not have ended (logout, expiry) since it started.
func (s *Server) stillAuthenticated(r *http.Request) bool {
	rs := sessionOf(r)
	return s.token == nil || rs.bearer || s.sessions.valid(rs.id)
}

func proxyGroups(values []string, header string) []string {
	if header == "" {
		return nil
	}
	var groups []string
	for _, v := range values {
		for g := range strings.SplitSeq(v, ",") {
			if g = strings.TrimSpace(g); g != "" {
				groups = append(groups, g)
			}
		}
	}
	return groups
}

func identityOf(r *http.Request) identity {
	id, _ := r.Context().Value(identityKey{}).(identity)
	return id
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.token == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", page{Title: "Log in"})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.token == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if err := sameOrigin(r); err != nil {
		http.Error(w, "403 forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	if !constantTimeEqual([]byte(strings.TrimSpace(r.PostFormValue("token"))), s.token) {
		s.render(w, r, http.StatusUnauthorized, "login", page{Title: "Log in", Error: "That token is not the dashboard's token."})
		return
	}
	id := s.sessions.create()
	setCookie(w, r, sessionCookie, id, int(sessionLifetime.Seconds()))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.sessions.remove(c.Value)
	}
	setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// page is what every template gets: the layout's fields and the page's own data.
type page struct {
	Title   string
	Nav     string
	CSRF    string
	User    string
	Flash   string
	FlashOK bool
	Error   string
	Watch   string // the objects whose changes reload the page's live part: Kind/ns/name, or Kind
	Live    bool   // the page subscribes to the event stream
	Seq     uint64 // the store's version the page shows, at least (see store.version)
	Query   string // the fleet filter, for the event stream
	Token   bool   // token mode: show the logout button
	Data    any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	id := identityOf(r)
	p.CSRF = s.csrfToken(sessionOf(r).id, id)
	p.User = id.User
	p.Token = s.token != nil
	p.Seq, _ = r.Context().Value(seqKey{}).(uint64)
	// A live page's refresh of itself (the script's fetch) leaves the flash for the page a
	// redirect is loading: the two can cross when an action is posted as the refresh starts.
	if r.Header.Get(liveRefreshHeader) == "" {
		if msg, ok := readFlash(w, r); ok {
			p.Flash, p.FlashOK = msg[1:], msg[0] == '+'
		}
	}
	t := s.pages[name]
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		s.log.Error(err, "Render page failed", "page", name)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, b.String())
}

// errorPage renders an error in the layout.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, err error) {
	s.render(w, r, status, "error", page{Title: http.StatusText(status), Error: err.Error()})
}
