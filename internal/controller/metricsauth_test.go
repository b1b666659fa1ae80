package controller

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// fakeReviews stands in for the management cluster's TokenReview and SubjectAccessReview
// APIs, to count the questions the gate asks; TestMetricsNeedAnAuthorizedCaller runs the
// gate against a real apiserver.
type fakeReviews struct {
	users   map[string]authenticationv1.UserInfo // token → user
	allowed map[string]bool                      // user → may get /metrics
	fail    error
	asked   int
	last    *authorizationv1.SubjectAccessReview
}

func (f *fakeReviews) gate(now func() time.Time) *metricsGate {
	return &metricsGate{
		reviewToken: func(_ *http.Request, token string) (*authenticationv1.TokenReview, error) {
			f.asked++
			if f.fail != nil {
				return nil, f.fail
			}
			user, ok := f.users[token]
			return &authenticationv1.TokenReview{Status: authenticationv1.TokenReviewStatus{Authenticated: ok, User: user}}, nil
		},
		reviewAccess: func(_ *http.Request, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
			f.asked++
			f.last = sar
			sar.Status.Allowed = f.allowed[sar.Spec.User] && sar.Spec.NonResourceAttributes.Path == "/metrics"
			return sar, nil
		},
		now:       now,
		decisions: map[[32]byte]metricsDecision{},
	}
}

func metricsRequest(method, path, authorization string) *http.Request {
	req := httptest.NewRequest(method, "https://controller:8443"+path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	return req
}

func TestMetricsGateAnswers(t *testing.T) {
	f := &fakeReviews{
		users: map[string]authenticationv1.UserInfo{
			"reader-token":   {Username: "system:serviceaccount:monitoring:prometheus", UID: "u1", Groups: []string{"system:serviceaccounts"}, Extra: map[string]authenticationv1.ExtraValue{"scope": {"a"}}},
			"stranger-token": {Username: "stranger"},
		},
		allowed: map[string]bool{"system:serviceaccount:monitoring:prometheus": true},
	}
	g := f.gate(time.Now)
	for _, tc := range []struct {
		name, method, path, authorization string
		want                              int
	}{
		{"no header", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"another scheme", http.MethodGet, "/metrics", "Basic cmVhZGVyOng=", http.StatusUnauthorized},
		{"an empty bearer token", http.MethodGet, "/metrics", "Bearer ", http.StatusUnauthorized},
		{"a token the cluster rejects", http.MethodGet, "/metrics", "Bearer forged", http.StatusUnauthorized},
		{"a user without the grant", http.MethodGet, "/metrics", "Bearer stranger-token", http.StatusForbidden},
		{"the reader", http.MethodGet, "/metrics", "Bearer reader-token", http.StatusOK},
		{"the reader, scheme in lower case", http.MethodGet, "/metrics", "bearer reader-token", http.StatusOK},
		{"the reader on another path", http.MethodGet, "/debug", "Bearer reader-token", http.StatusForbidden},
	} {
		if code, why := g.decide(logr.Discard(), metricsRequest(tc.method, tc.path, tc.authorization)); code != tc.want {
			t.Errorf("%s: %d %q; want %d", tc.name, code, why, tc.want)
		}
	}

	// The SubjectAccessReview carries the reviewed user whole, and the request's path and verb.
	f.last = nil
	g.decide(logr.Discard(), metricsRequest(http.MethodHead, "/metrics", "Bearer reader-token"))
	want := authorizationv1.SubjectAccessReviewSpec{
		User: "system:serviceaccount:monitoring:prometheus", UID: "u1", Groups: []string{"system:serviceaccounts"},
		Extra:                 map[string]authorizationv1.ExtraValue{"scope": {"a"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "head"},
	}
	if f.last == nil || !reflect.DeepEqual(f.last.Spec, want) {
		t.Errorf("SubjectAccessReview for HEAD /metrics: %+v; want %+v", f.last, want)
	}
}

func TestMetricsGateRemembersForAWhile(t *testing.T) {
	f := &fakeReviews{
		users:   map[string]authenticationv1.UserInfo{"reader": {Username: "reader"}, "stranger": {Username: "stranger"}},
		allowed: map[string]bool{"reader": true},
	}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	g := f.gate(func() time.Time { return now })
	ask := func(token string) int {
		code, _ := g.decide(logr.Discard(), metricsRequest(http.MethodGet, "/metrics", "Bearer "+token))
		return code
	}

	// An allowed scrape costs two reviews, then none until the minute is over.
	if code := ask("reader"); code != http.StatusOK || f.asked != 2 {
		t.Fatalf("first scrape: %d after %d reviews; want 200 after 2", code, f.asked)
	}
	now = now.Add(metricsAllowTTL - time.Second)
	if code := ask("reader"); code != http.StatusOK || f.asked != 2 {
		t.Fatalf("scrape within the minute: %d after %d reviews; want 200 after 2", code, f.asked)
	}
	// The grant is revoked: the next scrape past the minute is refused.
	f.allowed["reader"] = false
	now = now.Add(time.Second)
	if code := ask("reader"); code != http.StatusForbidden || f.asked != 4 {
		t.Fatalf("scrape after the minute, grant revoked: %d after %d reviews; want 403 after 4", code, f.asked)
	}

	// A refusal is remembered for less time, so a new grant takes effect sooner.
	f.allowed["reader"] = true
	now = now.Add(metricsDenyTTL - time.Second)
	if code := ask("reader"); code != http.StatusForbidden || f.asked != 4 {
		t.Fatalf("scrape within the refusal's time: %d after %d reviews; want 403 after 4", code, f.asked)
	}
	now = now.Add(time.Second)
	if code := ask("reader"); code != http.StatusOK || f.asked != 6 {
		t.Fatalf("scrape after the refusal's time, grant restored: %d after %d reviews; want 200 after 6", code, f.asked)
	}

	// A failed review is answered 500 and not remembered: the next request asks again.
	f.fail = errors.New("connection refused")
	if code := ask("stranger"); code != http.StatusInternalServerError || f.asked != 7 {
		t.Fatalf("review failing: %d after %d reviews; want 500 after 7", code, f.asked)
	}
	f.fail = nil
	if code := ask("stranger"); code != http.StatusForbidden || f.asked != 9 {
		t.Fatalf("review answering again: %d after %d reviews; want 403 after 9", code, f.asked)
	}
}

func TestMetricsGateMemoryIsBounded(t *testing.T) {
	f := &fakeReviews{users: map[string]authenticationv1.UserInfo{}}
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	g := f.gate(func() time.Time { return now })
	for i := range 3 * metricsDecisions {
		if code, _ := g.decide(logr.Discard(), metricsRequest(http.MethodGet, "/metrics", fmt.Sprintf("Bearer forged-%d", i))); code != http.StatusUnauthorized {
			t.Fatalf("forged token %d: %d; want 401", i, code)
		}
		if len(g.decisions) > metricsDecisions {
			t.Fatalf("after %d forged tokens the gate remembers %d answers; want at most %d", i+1, len(g.decisions), metricsDecisions)
		}
	}
}

func TestMetricsAreServedUncompressed(t *testing.T) {
	refuse := func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
		return func(_ logr.Logger, next http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				if req.Header.Get("Authorization") == "" {
					http.Error(w, "no", http.StatusUnauthorized)
					return
				}
				next.ServeHTTP(w, req)
			}), nil
		}, nil
	}
	for name, inner := range map[string]filterProvider{"alone": nil, "around another filter": refuse} {
		filter, err := uncompressed(inner)(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		accepted := "not reached"
		h, err := filter(logr.Discard(), http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) { accepted = req.Header.Get("Accept-Encoding") }))
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip, zstd")
		req.Header.Set("Authorization", "Bearer t")
		h.ServeHTTP(httptest.NewRecorder(), req)
		if accepted != "" {
			t.Errorf("%s: the metrics handler was offered %q; want no compression", name, accepted)
		}
		if inner != nil {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s: a request the inner filter refuses got %d", name, rec.Code)
			}
		}
	}
}
