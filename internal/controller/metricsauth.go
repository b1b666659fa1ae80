package controller

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long the metrics endpoint trusts an answer from the management cluster. Prometheus
// scrapes every 15–60 s with the same token, so a scrape costs the apiserver nothing most
// of the time, and a revoked token or role binding stops working within a minute.
const (
	metricsAllowTTL = time.Minute
	metricsDenyTTL  = 10 * time.Second
	// metricsDecisions bounds the remembered answers, so callers with ever new tokens cannot
	// grow the controller's memory.
	metricsDecisions = 256
)

// metricsAuth is the metrics server's filter: it serves a request only when its bearer token
// is one the management cluster authenticates (a TokenReview) and whose user may `get` the
// request's non-resource URL (a SubjectAccessReview), as config/rbac/metrics_reader_role.yaml
// grants. It answers 401 without a token the cluster accepts, 403 to a user without the
// grant, and 500 when the cluster cannot be asked.
//
// It is navarch's own rather than controller-runtime's filters package, which brings the
// whole of k8s.io/apiserver (and CEL and gRPC with it) into the binary: about 10 MB of code
// and tables that every process maps, for two API calls.
func metricsAuth(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	g := &metricsGate{
		reviewToken: func(req *http.Request, token string) (*authenticationv1.TokenReview, error) {
			return authn.TokenReviews().Create(req.Context(), &authenticationv1.TokenReview{
				Spec: authenticationv1.TokenReviewSpec{Token: token},
			}, metav1.CreateOptions{})
		},
		reviewAccess: func(req *http.Request, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
			return authz.SubjectAccessReviews().Create(req.Context(), sar, metav1.CreateOptions{})
		},
		now:       time.Now,
		decisions: map[[sha256.Size]byte]metricsDecision{},
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			code, why := g.decide(log, req)
			if code != http.StatusOK {
				http.Error(w, why, code)
				return
			}
			next.ServeHTTP(w, req)
		}), nil
	}, nil
}

// metricsGate asks the management cluster who a caller is and what it may do, and remembers
// the answer for a while.
type metricsGate struct {
	reviewToken  func(*http.Request, string) (*authenticationv1.TokenReview, error)
	reviewAccess func(*http.Request, *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error)
	now          func() time.Time

	mu        sync.Mutex
	decisions map[[sha256.Size]byte]metricsDecision
}

// metricsDecision is a remembered answer: an HTTP status, its reason, and until when it holds.
type metricsDecision struct {
	code  int
	why   string
	until time.Time
}

// decide returns http.StatusOK for a request to serve, or the status and reason to refuse it
// with.
func (g *metricsGate) decide(log logr.Logger, req *http.Request) (int, string) {
	token, ok := bearerToken(req)
	if !ok {
		return http.StatusUnauthorized, "Unauthorized: a bearer token is required"
	}
	verb := nonResourceVerb(req.Method)
	key := sha256.Sum256([]byte(verb + " " + req.URL.Path + "\x00" + token))
	now := g.now()
	g.mu.Lock()
	d, seen := g.decisions[key]
	g.mu.Unlock()
	if seen && now.Before(d.until) {
		return d.code, d.why
	}

	d = g.review(log, req, token, verb)
	if d.code == http.StatusInternalServerError {
		return d.code, d.why // the cluster did not answer: ask again next time
	}
	d.until = now.Add(metricsDenyTTL)
	if d.code == http.StatusOK {
		d.until = now.Add(metricsAllowTTL)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.decisions) >= metricsDecisions {
		for k, old := range g.decisions {
			if !now.Before(old.until) {
				delete(g.decisions, k)
			}
		}
		for k := range g.decisions {
			if len(g.decisions) < metricsDecisions {
				break
			}
			delete(g.decisions, k)
		}
	}
	g.decisions[key] = d
	return d.code, d.why
}

// review asks the management cluster: a TokenReview for who the caller is, then a
// SubjectAccessReview for whether that user may use verb on the request's path.
func (g *metricsGate) review(log logr.Logger, req *http.Request, token, verb string) metricsDecision {
	tr, err := g.reviewToken(req, token)
	if err != nil {
		log.Error(err, "Could not authenticate a metrics request: the TokenReview failed")
		return metricsDecision{code: http.StatusInternalServerError, why: "Internal Server Error: the token could not be reviewed"}
	}
	if !tr.Status.Authenticated {
		return metricsDecision{code: http.StatusUnauthorized, why: "Unauthorized: the management cluster does not accept the token"}
	}
	user := tr.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := g.reviewAccess(req, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                user.Groups,
		Extra:                 extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: req.URL.Path, Verb: verb},
	}})
	if err != nil {
		log.Error(err, "Could not authorize a metrics request: the SubjectAccessReview failed", "user", user.Username)
		return metricsDecision{code: http.StatusInternalServerError, why: "Internal Server Error: the access could not be reviewed"}
	}
	if !sar.Status.Allowed {
		return metricsDecision{code: http.StatusForbidden, why: "Forbidden: " + user.Username + " may not " + verb + " " + req.URL.Path}
	}
	return metricsDecision{code: http.StatusOK}
}

// bearerToken returns the token of an "Authorization: Bearer" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// nonResourceVerb is the RBAC verb of an HTTP method on a non-resource URL: the method in
// lower case, as the apiserver names it.
func nonResourceVerb(method string) string {
	return strings.ToLower(method)
}
