package githubserver_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v57/github"

	"github.com/navarch-io/navarch/internal/githubserver"
)

const (
	testAppID          = 4242
	testInstallationID = 77
)

// newKey generates an RSA key for a test GitHub App.
func newKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// installationClient returns a go-github client authenticated through
// ghinstallation as installationID of appID, signing with key.
func installationClient(t *testing.T, s *githubserver.Server, appID, installationID int64, key *rsa.PrivateKey) (*github.Client, *ghinstallation.Transport) {
	t.Helper()
	apps := ghinstallation.NewAppsTransportFromPrivateKey(http.DefaultTransport, appID, key)
	tr := ghinstallation.NewFromAppsTransport(apps, installationID)
	tr.BaseURL = s.URL() + "/api/v3"
	c, err := github.NewClient(&http.Client{Transport: tr, Timeout: 10 * time.Second}).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	return c, tr
}

func TestBadCredentialsAre401(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.AddToken(testToken)
	basic := func(user, password string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	}
	tests := []struct {
		name          string
		authorization string
		want          int
	}{
		{"none", "", http.StatusOK},
		{"token", "token " + testToken, http.StatusOK},
		{"Bearer", "Bearer " + testToken, http.StatusOK},
		{"basic with token as password", basic("someone", testToken), http.StatusOK},
		{"basic with token as user", basic(testToken, "x-oauth-basic"), http.StatusOK},
		{"unknown token", "token nope", http.StatusUnauthorized},
		{"unknown Bearer", "Bearer nope", http.StatusUnauthorized},
		{"empty token", "token ", http.StatusUnauthorized},
		{"unknown scheme", "Digest " + testToken, http.StatusUnauthorized},
		{"basic with unknown token", basic("someone", "nope"), http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header []string
			if tt.authorization != "" {
				header = []string{"Authorization", tt.authorization}
			}
			resp := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app", header...)
			if resp.status != tt.want {
				t.Fatalf("status = %d, want %d", resp.status, tt.want)
			}
			if tt.want == http.StatusUnauthorized {
				if got := message(t, resp.body); got != "Bad credentials" {
					t.Errorf("message = %q, want Bad credentials", got)
				}
			}
		})
	}

	_, _, err := newClient(t, s, "wrong").Repositories.Get(context.Background(), "acme", "app")
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnauthorized || er.Message != "Bad credentials" {
		t.Errorf("go-github error = %v (%T), want *github.ErrorResponse 401 Bad credentials", err, err)
	}
}

func TestRequireAuth(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.AddToken(testToken)
	ctx := context.Background()

	s.RequireAuth(true)
	_, _, err := newClient(t, s, "").Repositories.Get(ctx, "acme", "app")
	if errorStatus(t, err) != http.StatusUnauthorized {
		t.Errorf("anonymous with RequireAuth: %v, want 401", err)
	}
	if _, _, err := newClient(t, s, testToken).Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Errorf("token with RequireAuth: %v", err)
	}
	s.RequireAuth(false)
	if _, _, err := newClient(t, s, "").Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Errorf("anonymous without RequireAuth: %v", err)
	}

	opt, err := githubserver.Start(githubserver.Options{RequireAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = opt.Close() }()
	if got := get(t, http.MethodGet, opt.URL()+"/api/v3/rate_limit").status; got != http.StatusUnauthorized {
		t.Errorf("Options.RequireAuth: anonymous status = %d, want 401", got)
	}
}

func TestPrivateRepositoryIsNotFoundWithoutCredentials(t *testing.T) {
	s := startServer(t)
	s.AddRepo("acme", "secret", githubserver.Repo{Private: true, Files: map[string][]string{"main": {"a.txt"}}})
	s.AddRepo("acme", "open", githubserver.Repo{})
	s.AddToken(testToken)
	paths := []string{
		"/api/v3/repos/acme/secret",
		"/api/v3/repos/acme/secret/pulls",
		"/api/v3/repos/acme/secret/branches",
		"/api/v3/repos/acme/secret/branches/main",
		"/api/v3/repos/acme/secret/contents/a.txt",
		"/api/v3/repos/acme/secret/commits/main/statuses",
	}
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			anonymous := get(t, http.MethodGet, s.URL()+path)
			if anonymous.status != http.StatusNotFound || message(t, anonymous.body) != "Not Found" {
				t.Errorf("anonymous: %d %s, want 404 Not Found", anonymous.status, anonymous.body)
			}
			if got := get(t, http.MethodGet, s.URL()+path, "Authorization", "token "+testToken).status; got != http.StatusOK {
				t.Errorf("with a token: status %d, want 200", got)
			}
		})
	}

	ctx := context.Background()
	repos, _, err := newClient(t, s, "").Repositories.ListByOrg(ctx, "acme", nil)
	if err != nil || len(repos) != 1 || repos[0].GetName() != "open" {
		t.Errorf("anonymous org listing = %v, %v; want only acme/open", repoNames(repos), err)
	}
	repos, _, err = newClient(t, s, testToken).Repositories.ListByOrg(ctx, "acme", nil)
	if err != nil || len(repos) != 2 {
		t.Errorf("org listing with a token = %v, %v; want both", repoNames(repos), err)
	}
}

func TestInstallationTokenThroughGhinstallation(t *testing.T) {
	s := startServer(t)
	s.AddRepo("acme", "secret", githubserver.Repo{Private: true})
	key := newKey(t)
	s.AddApp(testAppID, testInstallationID, &key.PublicKey)
	ctx := context.Background()

	c, tr := installationClient(t, s, testAppID, testInstallationID, key)
	repo, _, err := c.Repositories.Get(ctx, "acme", "secret")
	if err != nil {
		t.Fatalf("Get a private repository as the installation: %v", err)
	}
	if !repo.GetPrivate() {
		t.Error("private = false")
	}
	token, err := tr.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	expires, _, err := tr.Expiry()
	if err != nil || time.Until(expires) < 55*time.Minute || time.Until(expires) > time.Hour {
		t.Errorf("token expires in %v (%v), want an hour", time.Until(expires), err)
	}

	var exchanged, used bool
	for _, r := range s.Requests() {
		switch {
		case r.Method == http.MethodPost && r.Path == "/api/v3/app/installations/"+strconv.Itoa(testInstallationID)+"/access_tokens":
			exchanged = r.Status == http.StatusCreated
		case r.Path == "/api/v3/repos/acme/secret":
			used = r.Token == token && r.Status == http.StatusOK
		}
	}
	if !exchanged || !used {
		t.Errorf("requests = %+v; want a 201 token exchange, then the repository read with that token", s.Requests())
	}

	// The token works for any client, as an installation token does.
	if _, _, err := newClient(t, s, token).Repositories.Get(ctx, "acme", "secret"); err != nil {
		t.Errorf("installation token with a plain client: %v", err)
	}
}

func TestAppJWTIsVerified(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	key := newKey(t)
	s.AddApp(testAppID, testInstallationID, &key.PublicKey)
	now := time.Now()
	sign := func(k *rsa.PrivateKey, method jwt.SigningMethod, claims jwt.RegisteredClaims) string {
		tok, err := jwt.NewWithClaims(method, claims).SignedString(k)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	valid := jwt.RegisteredClaims{
		Issuer:    strconv.Itoa(testAppID),
		IssuedAt:  jwt.NewNumericDate(now.Add(-30 * time.Second)),
		ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Minute)),
	}
	with := func(edit func(*jwt.RegisteredClaims)) jwt.RegisteredClaims {
		c := valid
		edit(&c)
		return c
	}
	otherKey := newKey(t)
	tests := []struct {
		name         string
		jwt          string
		installation int
		want         int
	}{
		{"valid", sign(key, jwt.SigningMethodRS256, valid), testInstallationID, http.StatusCreated},
		{"unknown installation", sign(key, jwt.SigningMethodRS256, valid), 1, http.StatusNotFound},
		{"another key", sign(otherKey, jwt.SigningMethodRS256, valid), testInstallationID, http.StatusUnauthorized},
		{"RS512", sign(key, jwt.SigningMethodRS512, valid), testInstallationID, http.StatusUnauthorized},
		{"unknown app", sign(key, jwt.SigningMethodRS256, with(func(c *jwt.RegisteredClaims) { c.Issuer = "1" })), testInstallationID, http.StatusUnauthorized},
		{"expired", sign(key, jwt.SigningMethodRS256, with(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-time.Second)) })), testInstallationID, http.StatusUnauthorized},
		{"no exp", sign(key, jwt.SigningMethodRS256, with(func(c *jwt.RegisteredClaims) { c.ExpiresAt = nil })), testInstallationID, http.StatusUnauthorized},
		{"exp too far", sign(key, jwt.SigningMethodRS256, with(func(c *jwt.RegisteredClaims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(time.Hour)) })), testInstallationID, http.StatusUnauthorized},
		{"iat in the future", sign(key, jwt.SigningMethodRS256, with(func(c *jwt.RegisteredClaims) { c.IssuedAt = jwt.NewNumericDate(now.Add(time.Minute)) })), testInstallationID, http.StatusUnauthorized},
		{"not a JWT", "garbage", testInstallationID, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := s.URL() + "/api/v3/app/installations/" + strconv.Itoa(tt.installation) + "/access_tokens"
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tt.jwt)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}

	t.Run("ghinstallation with another key", func(t *testing.T) {
		c, _ := installationClient(t, s, testAppID, testInstallationID, otherKey)
		_, _, err := c.Repositories.Get(context.Background(), "acme", "app")
		var he *ghinstallation.HTTPError
		if !errors.As(err, &he) || he.Response == nil || he.Response.StatusCode != http.StatusUnauthorized {
			t.Errorf("error = %v (%T), want ghinstallation's HTTPError with a 401", err, err)
		}
	})

	t.Run("a JWT is not a token", func(t *testing.T) {
		resp := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app", "Authorization", "Bearer "+sign(key, jwt.SigningMethodRS256, valid))
		if resp.status != http.StatusUnauthorized {
			t.Errorf("repository read with an app JWT: status %d, want 401", resp.status)
		}
	})
}
