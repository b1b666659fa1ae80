package githubserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-github/v57/github"

	"github.com/navarch-io/navarch/internal/githubserver"
)

// testToken is the token most tests authenticate with.
const testToken = "ghp_test"

// startServer starts a server that logs to the test and stops it when the
// test ends.
func startServer(t *testing.T) *githubserver.Server {
	t.Helper()
	s, err := githubserver.Start(githubserver.Options{Logger: testr.New(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newClient returns a go-github client for the server, configured as
// navarch's GitHub client is; an empty token makes it anonymous.
func newClient(t *testing.T, s *githubserver.Server, token string) *github.Client {
	t.Helper()
	c, err := github.NewClient(&http.Client{Timeout: 10 * time.Second}).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatalf("WithEnterpriseURLs: %v", err)
	}
	if token != "" {
		c = c.WithAuthToken(token)
	}
	return c
}

// rawResponse is an answer read in full by get.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// get sends a plain HTTP request to the server and reads the answer; header
// pairs (name, value) are added to the request.
func get(t *testing.T, method, url string, header ...string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: body}
}

// message decodes the message of a GitHub error body.
func message(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", body, err)
	}
	return e.Message
}

// errorStatus returns the HTTP status of a go-github error, failing the test
// if err carries none.
func errorStatus(t *testing.T, err error) int {
	t.Helper()
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		t.Fatalf("error = %v (%T), want a *github.ErrorResponse", err, err)
	}
	return er.Response.StatusCode
}

// addAppRepo adds acme/app, the repository most tests use.
func addAppRepo(s *githubserver.Server) {
	s.AddRepo("acme", "app", githubserver.Repo{
		Topics:   []string{"navarch", "preview"},
		Branches: map[string]string{"main": sha("main"), "feature/login": sha("login")},
		Files: map[string][]string{
			"main":          {"README.md", "deploy/base/kustomization.yaml", "deploy/overlays/dev/kustomization.yaml"},
			"feature/login": {"README.md"},
		},
	})
}

// sha makes a recognisable 40-hex commit SHA from a word.
func sha(word string) string {
	const hexDigits = "0123456789abcdef"
	b := make([]byte, 40)
	for i := range b {
		b[i] = hexDigits[(int(word[i%len(word)])+i)%16]
	}
	return string(b)
}

func TestUnknownRoutesAnswer404JSON(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	tests := []struct {
		method, path string
	}{
		{http.MethodGet, "/api/v3/nope"},
		{http.MethodGet, "/api/v3/repos/acme/app/issues"},
		{http.MethodDelete, "/api/v3/repos/acme/app"},
		{http.MethodPost, "/api/v3/repos/acme/app/pulls"},
		{http.MethodGet, "/somewhere/else"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp := get(t, tt.method, s.URL()+tt.path)
			if resp.status != http.StatusNotFound {
				t.Fatalf("status = %d, want 404", resp.status)
			}
			if got := message(t, resp.body); got != "Not Found" {
				t.Errorf("message = %q, want %q", got, "Not Found")
			}
		})
	}
}

func TestEveryAPIResponseCarriesRateLimitAndRequestIDHeaders(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.AddToken(testToken)
	requestID := regexp.MustCompile(`^[0-9A-F]{4}:[0-9A-F]{4}:[0-9A-F]{6}:[0-9A-F]{6}:[0-9A-F]{8}$`)
	tests := []struct {
		name   string
		path   string
		header []string
		status int
		limit  int
	}{
		{"anonymous 200", "/api/v3/repos/acme/app", nil, http.StatusOK, 60},
		{"token 200", "/api/v3/repos/acme/app", []string{"Authorization", "token " + testToken}, http.StatusOK, 5000},
		{"404", "/api/v3/repos/acme/nope", nil, http.StatusNotFound, 60},
		{"unknown route", "/api/v3/nope", nil, http.StatusNotFound, 60},
		{"bad credentials", "/api/v3/repos/acme/app", []string{"Authorization", "token wrong"}, http.StatusUnauthorized, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := get(t, http.MethodGet, s.URL()+tt.path, tt.header...)
			if resp.status != tt.status {
				t.Fatalf("status = %d, want %d", resp.status, tt.status)
			}
			h := resp.header
			if got := h.Get("X-RateLimit-Limit"); got != strconv.Itoa(tt.limit) {
				t.Errorf("X-RateLimit-Limit = %q, want %d", got, tt.limit)
			}
			remaining, err1 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
			used, err2 := strconv.Atoi(h.Get("X-RateLimit-Used"))
			if err1 != nil || err2 != nil || remaining+used != tt.limit {
				t.Errorf("X-RateLimit-Remaining = %q, X-RateLimit-Used = %q, want numbers adding up to %d",
					h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Used"), tt.limit)
			}
			reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
			if err != nil || time.Until(time.Unix(reset, 0)) <= 0 || time.Until(time.Unix(reset, 0)) > time.Hour {
				t.Errorf("X-RateLimit-Reset = %q, want unix seconds within the next hour", h.Get("X-RateLimit-Reset"))
			}
			if got := h.Get("X-RateLimit-Resource"); got != "core" {
				t.Errorf("X-RateLimit-Resource = %q, want core", got)
			}
			if got := h.Get("X-GitHub-Request-Id"); !requestID.MatchString(got) {
				t.Errorf("X-GitHub-Request-Id = %q, want GitHub's shape", got)
			}
			if got := h.Get("Content-Type"); got != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
		})
	}
}

func TestRequestsRecordsEachAPICall(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.AddToken(testToken)
	ctx := context.Background()

	if _, _, err := newClient(t, s, testToken).Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := newClient(t, s, "").PullRequests.List(ctx, "acme", "app", &github.PullRequestListOptions{State: "all"}); err != nil {
		t.Fatal(err)
	}
	get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app", "If-None-Match", `"x"`)
	if err := (githubserver.Remote{URL: s.URL()}).AddToken(ctx, "admin-calls-are-not-api-calls"); err != nil {
		t.Fatal(err)
	}

	want := []githubserver.Request{
		{Method: http.MethodGet, Path: "/api/v3/repos/acme/app", Status: http.StatusOK, Token: testToken},
		{Method: http.MethodGet, Path: "/api/v3/repos/acme/app/pulls", Query: "state=all", Status: http.StatusOK},
		{Method: http.MethodGet, Path: "/api/v3/repos/acme/app", Status: http.StatusOK, Conditional: true},
	}
	got := s.Requests()
	if len(got) != len(want) {
		t.Fatalf("Requests() = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Requests()[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}

	s.ResetRequests()
	if got := s.Requests(); len(got) != 0 {
		t.Errorf("after ResetRequests, Requests() = %+v, want none", got)
	}
}

func TestURLs(t *testing.T) {
	s := startServer(t)
	if !regexp.MustCompile(`^http://127\.0\.0\.1:\d+$`).MatchString(s.URL()) {
		t.Errorf("URL() = %q, want http://127.0.0.1:PORT", s.URL())
	}
	if got, want := s.APIURL(), s.URL()+"/api/v3/"; got != want {
		t.Errorf("APIURL() = %q, want %q", got, want)
	}
	c := newClient(t, s, "")
	if got := c.BaseURL.String(); got != s.APIURL() {
		t.Errorf("go-github's BaseURL = %q, want the server's APIURL %q", got, s.APIURL())
	}
}
