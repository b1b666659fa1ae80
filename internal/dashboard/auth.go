package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/internal/listenaddr"
)

// errNoAuth is returned when the dashboard would serve a non-loopback address without auth.
var errNoAuth = errors.New("serving on a non-loopback address needs authentication: set --auth-token-file FILE (a bearer token) or --auth-proxy-header HEADER (an authenticating proxy sets the user in HEADER; the dashboard impersonates that user)")

// checkAuth refuses an open dashboard on a non-loopback address and contradictory auth.
func (o *Options) checkAuth() error {
	if o.TokenFile != "" && o.ProxyUserHeader != "" {
		return errors.New("--auth-token-file and --auth-proxy-header are exclusive: pick one")
	}
	if o.ProxyGroupsHeader != "" && o.ProxyUserHeader == "" {
		return errors.New("--auth-proxy-groups-header needs --auth-proxy-header")
	}
	if o.TokenFile == "" && o.ProxyUserHeader == "" && !listenaddr.Loopback(o.Address) {
		return fmt.Errorf("--address %s: %w", o.Address, errNoAuth)
	}
	return nil
}

// readToken reads the bearer token from its file; it must not be empty or short.
func readToken(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--auth-token-file: %w", err)
	}
	token := []byte(strings.TrimSpace(string(data)))
	if len(token) < 16 {
		return nil, fmt.Errorf("--auth-token-file %s: the token must be at least 16 characters, got %d", path, len(token))
	}
	return token, nil
}

// identity is who makes a request: in proxy mode the user (and groups) the proxy vouches for,
// whom the dashboard impersonates; otherwise the dashboard's own credentials act.
type identity struct {
	User        string
	Groups      []string
	impersonate bool
}

func (id identity) key() string { return id.User + "\x00" + strings.Join(id.Groups, "\x00") }

// Cookie names.
const (
	sessionCookie = "navarch_session"
	flashCookie   = "navarch_flash"
)

// sessions are the browser sessions of token mode: a random id in an HttpOnly cookie, set by
// the login form. The token itself is never stored in the browser.
type sessions struct {
	mu  sync.Mutex
	ids map[string]time.Time // id → expiry
}

const sessionLifetime = 12 * time.Hour

// maxSessions bounds the memory sessions take: past it, logging in ends the session closest
// to its expiry. Only holders of the token can log in, so this guards against a script that
// logs in in a loop, not against strangers.
const maxSessions = 10000

func (s *sessions) create() string {
	id := randomID()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if len(s.ids) >= maxSessions {
		for k, exp := range s.ids {
			if now.After(exp) {
				delete(s.ids, k)
			}
		}
	}
	for len(s.ids) >= maxSessions {
		oldest, first := "", time.Time{}
		for k, exp := range s.ids {
			if oldest == "" || exp.Before(first) {
				oldest, first = k, exp
			}
		}
		delete(s.ids, oldest)
	}
	s.ids[id] = now.Add(sessionLifetime)
	return id
}

func (s *sessions) valid(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.ids[id]
	if ok && !time.Now().Before(exp) {
		delete(s.ids, id)
		return false
	}
	return ok
}

func (s *sessions) remove(id string) {
	s.mu.Lock()
	delete(s.ids, id)
	s.mu.Unlock()
}

func randomID() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

// csrfToken is the per-session value every form that changes state carries: an HMAC of the
// session id (and, behind a proxy, the user) under a key of this process.
func (s *Server) csrfToken(session string, id identity) string {
	mac := hmac.New(sha256.New, s.csrfKey)
	mac.Write([]byte(session))
	mac.Write([]byte{0})
	mac.Write([]byte(id.key()))
	return hex.EncodeToString(mac.Sum(nil))
}

// sameOrigin checks that a state-changing request comes from a page of the dashboard: the
// browser's Sec-Fetch-Site and Origin headers, when sent, must name this host.
func sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return fmt.Errorf("cross-site request (Sec-Fetch-Site: %s)", site)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil // not a browser, or an old one: the CSRF token decides
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host != r.Host {
		return fmt.Errorf("request from origin %q, not from %s", origin, r.Host)
	}
	return nil
}

func constantTimeEqual(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

// setCookie sets one of the dashboard's cookies: HttpOnly, SameSite=Strict, on every path,
// and Secure when the browser reached the dashboard over HTTPS, directly or through a proxy
// that terminates TLS and says so in X-Forwarded-Proto. (A client that sends the header
// over plain HTTP only keeps its own cookie from being sent back.)
func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")})
}

// clients hands out clients of the management cluster: the dashboard's own, or one
// impersonating a proxy-authenticated user, cached per identity.
type clients struct {
	base   *rest.Config
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	own    client.Client

	mu      sync.Mutex
	byUser  map[string]client.Client
	allowed map[string]accessDecision
}

type accessDecision struct {
	allowed bool
	expires time.Time
}

// maxImpersonatedClients bounds the client cache; past it, it starts afresh.
const maxImpersonatedClients = 256

func (c *clients) forIdentity(id identity) (client.Client, error) {
	if !id.impersonate {
		return c.own, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byUser[id.key()]; ok {
		return cl, nil
	}
	cfg := rest.CopyConfig(c.base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: id.User, Groups: slices.Clone(id.Groups)}
	cl, err := client.New(cfg, client.Options{Scheme: c.scheme, Mapper: c.mapper})
	if err != nil {
		return nil, fmt.Errorf("client impersonating %s: %w", id.User, err)
	}
	if len(c.byUser) >= maxImpersonatedClients {
		c.byUser = map[string]client.Client{}
	}
	c.byUser[id.key()] = cl
	return cl, nil
}

// accessTTL is how long an answer of the API server's authorizer is reused.
const accessTTL = 30 * time.Second

// canList asks the API server whether id may list resource (applications, clusters, ...) in
// namespace ("" for cluster-scoped kinds). The dashboard's cache is read with its own
// credentials, so behind a proxy every read is filtered by the user's permissions.
func (c *clients) canList(ctx context.Context, id identity, resource, namespace string) bool {
	if !id.impersonate {
		return true
	}
	key := id.key() + "\x00" + resource + "\x00" + namespace
	c.mu.Lock()
	d, ok := c.allowed[key]
	c.mu.Unlock()
	if ok && time.Now().Before(d.expires) {
		return d.allowed
	}
	cl, err := c.forIdentity(id)
	if err != nil {
		return false
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "list", Group: "navarch.io", Resource: resource,
		},
	}}
	allowed := false
	if err := cl.Create(ctx, review); err == nil {
		allowed = review.Status.Allowed
	}
	c.mu.Lock()
	if len(c.allowed) > 4096 {
		c.allowed = map[string]accessDecision{}
	}
	c.allowed[key] = accessDecision{allowed: allowed, expires: time.Now().Add(accessTTL)}
	c.mu.Unlock()
	return allowed
}

// CheckAuth reports the configuration errors of opts' address and authentication, e.g. a
// non-loopback address without authentication, before anything is started.
func CheckAuth(opts Options) error {
	if opts.Address == "" {
		opts.Address = "127.0.0.1:8080"
	}
	return opts.checkAuth()
}
