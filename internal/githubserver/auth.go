package githubserver

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// defaultLogin is the user behind tokens added with AddToken, and the author
// and pusher of changes that name nobody.
const defaultLogin = "octocat"

// installationTokenTTL is how long an installation access token is valid, as
// on GitHub.
const installationTokenTTL = time.Hour

// maxJWTLifetime is how far in the future GitHub accepts an app JWT's exp.
// A little slack covers clients that round.
const maxJWTLifetime = 10*time.Minute + 30*time.Second

// tokenInfo is what the server knows of a token.
type tokenInfo struct {
	login   string
	expires time.Time // zero: never
}

// app is a GitHub App: its public key and the installations it has.
type app struct {
	key           *rsa.PublicKey
	installations map[int64]bool
}

// AddToken makes token valid credentials (for user octocat) until the
// server stops.
func (s *Server) AddToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = tokenInfo{login: defaultLogin}
}

// RequireAuth makes API requests without credentials answer 401 (true), or
// be served anonymously as GitHub serves public data (false, the default).
func (s *Server) RequireAuth(require bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requireAuth = require
}

// AddApp registers a GitHub App with the public half of its key and one of
// its installations (call again for more; the latest key wins). The app can
// then exchange an RS256 JWT whose iss is appID for an installation access
// token, valid for an hour, at
// POST /api/v3/app/installations/{installationID}/access_tokens.
func (s *Server) AddApp(appID, installationID int64, key *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[appID]
	if a == nil {
		a = &app{installations: map[int64]bool{}}
		s.apps[appID] = a
	}
	a.key = key
	a.installations[installationID] = true
}

// appLogin is the bot user an app's installation tokens act as.
func appLogin(appID int64) string { return fmt.Sprintf("app-%d[bot]", appID) }

// authenticate finds out who sent a request. It accepts `token X`,
// `Bearer X` and basic auth with the token as password (or user name), or a
// GitHub App JWT on app routes. Unknown or expired credentials answer 401,
// as do missing ones when authentication is required.
func (s *Server) authenticate(r *http.Request, rt route) (caller, *reply) {
	scheme, credential, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	credential = strings.TrimSpace(credential)
	if rt.app {
		if !strings.EqualFold(scheme, "bearer") || credential == "" {
			rep := errorReply(http.StatusUnauthorized, messageJWTUndecodable, docsApps)
			return caller{}, &rep
		}
		return s.authenticateApp(credential)
	}

	switch strings.ToLower(scheme) {
	case "":
		s.mu.Lock()
		require := s.requireAuth
		s.mu.Unlock()
		if require {
			rep := errorReply(http.StatusUnauthorized, messageRequiresAuth, docsAuth)
			return caller{}, &rep
		}
		return caller{}, nil
	case "token", "bearer":
	case "basic":
		credential = basicToken(credential)
	default:
		credential = ""
	}
	s.mu.Lock()
	info, ok := s.tokens[credential]
	s.mu.Unlock()
	if !ok || credential == "" || (!info.expires.IsZero() && !time.Now().Before(info.expires)) {
		rep := errorReply(http.StatusUnauthorized, messageBadCredentials, docsREST)
		return caller{}, &rep
	}
	return caller{token: credential, login: info.login}, nil
}

// basicToken extracts the token from basic-auth credentials: the password,
// or the user name when the password is empty or GitHub's x-oauth-basic.
func basicToken(credential string) string {
	raw, err := base64.StdEncoding.DecodeString(credential)
	if err != nil {
		return ""
	}
	user, password, _ := strings.Cut(string(raw), ":")
	if password == "" || password == "x-oauth-basic" {
		return user
	}
	return password
}

// authenticateApp verifies a GitHub App JWT: RS256, signed by the key of the
// app its iss names, with iat in the past and exp in the future but no more
// than ten minutes away.
func (s *Server) authenticateApp(raw string) (caller, *reply) {
	deny := func(message string) (caller, *reply) {
		rep := errorReply(http.StatusUnauthorized, message, docsApps)
		return caller{}, &rep
	}
	var claims jwt.RegisteredClaims
	var appID int64
	_, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) {
		id, err := strconv.ParseInt(claims.Issuer, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("iss %q is not an app ID: %w", claims.Issuer, err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		a := s.apps[id]
		if a == nil {
			return nil, errUnknownApp
		}
		appID = id
		return a.key, nil
	}, jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg()}))
	switch {
	case errors.Is(err, errUnknownApp):
		return deny(messageAppNotFound)
	case errors.Is(err, jwt.ErrTokenExpired):
		return deny(messageJWTExpired)
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return deny(messageJWTIssuedAt)
	case err != nil:
		return deny(messageJWTUndecodable)
	case claims.ExpiresAt == nil:
		return deny(messageJWTExpired)
	case claims.IssuedAt == nil:
		return deny(messageJWTIssuedAt)
	case claims.ExpiresAt.After(time.Now().Add(maxJWTLifetime)):
		return deny(messageJWTTooLong)
	}
	return caller{appID: appID, login: appLogin(appID)}, nil
}

// errUnknownApp is the JWT key lookup failing for an app never added.
var errUnknownApp = errors.New("unknown app")

// installationTokenJSON is the body of a new installation access token.
type installationTokenJSON struct {
	Token               string            `json:"token"`
	ExpiresAt           timestamp         `json:"expires_at"`
	Permissions         map[string]string `json:"permissions"`
	RepositorySelection string            `json:"repository_selection"`
}

// createInstallationToken serves
// POST /app/installations/{id}/access_tokens for an app authenticated by
// its JWT.
func (s *Server) createInstallationToken(r *http.Request, c caller) reply {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		return notFoundReply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.apps[c.appID]
	if a == nil || !a.installations[id] {
		return notFoundReply()
	}
	token := "ghs_" + rand.Text()
	expires := time.Now().Add(installationTokenTTL).Truncate(time.Second)
	s.tokens[token] = tokenInfo{login: c.login, expires: expires}
	return reply{status: http.StatusCreated, body: installationTokenJSON{
		Token:               token,
		ExpiresAt:           timestamp(expires),
		Permissions:         map[string]string{"contents": "read", "metadata": "read", "pull_requests": "read", "statuses": "write"},
		RepositorySelection: "all",
	}}
}
