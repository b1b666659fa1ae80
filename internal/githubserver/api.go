package githubserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// GitHub's documentation links, sent in error bodies as GitHub does. go-github
// recognises a secondary rate limit by the suffix of its link.
const (
	docsREST          = "https://docs.github.com/rest"
	docsRateLimit     = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
	docsSecondaryRate = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	docsAuth          = "https://docs.github.com/rest/overview/authenticating-to-the-rest-api"
	docsApps          = "https://docs.github.com/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app"
)

// Error messages GitHub answers with.
const (
	messageNotFound        = "Not Found"
	messageBadCredentials  = "Bad credentials"
	messageRequiresAuth    = "Requires authentication"
	messageBadJSON         = "Problems parsing JSON"
	messageValidation      = "Validation Failed"
	messageSecondaryLimit  = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
	messageTokenRateLimit  = "API rate limit exceeded for user ID %d."
	messageAnonRateLimit   = "API rate limit exceeded for %s. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)"
	messageJWTUndecodable  = "A JSON web token could not be decoded"
	messageJWTExpired      = "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	messageJWTTooLong      = "'Expiration time' claim ('exp') is too far in the future"
	messageJWTIssuedAt     = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	messageAppNotFound     = "Integration not found"
	messageBranchNotFound  = "Branch not found"
	messageNoCommitForRef  = "No commit found for the ref %s"
	messageDescriptionLong = "description is too long (maximum is 140 characters)"
	messageStateInvalid    = "state is not included in the list"
)

// route says how an endpoint authenticates and whether it is rate limited.
type route struct {
	app  bool // authenticated by a GitHub App JWT instead of a token
	free bool // does not count against the rate limit, like GET /rate_limit
}

// caller is who made an API request.
type caller struct {
	token string // the token used; "" when anonymous or an app
	login string // the user behind the credentials; "" when anonymous
	appID int64  // the app whose JWT authenticated the request
}

// authenticated reports whether the request carried valid credentials.
func (c caller) authenticated() bool { return c.login != "" }

// bucket names the rate-limit bucket the request counts against.
func (c caller) bucket() string {
	switch {
	case c.token != "":
		return "token:" + c.token
	case c.appID != 0:
		return "app:" + strconv.FormatInt(c.appID, 10)
	default:
		return anonymousBucket
	}
}

// reply is what an endpoint answers, before the pipeline in [Server.api]
// encodes it and adds GitHub's common headers.
type reply struct {
	status int
	body   any // encoded as JSON; nil means no body
	header http.Header
}

// apiHandler serves one REST endpoint.
type apiHandler func(r *http.Request, c caller) reply

// errorBody is GitHub's error representation.
type errorBody struct {
	Message          string       `json:"message"`
	Errors           []fieldError `json:"errors,omitempty"`
	DocumentationURL string       `json:"documentation_url"`
	Status           string       `json:"status"`
}

// fieldError is one entry of a 422's errors list.
type fieldError struct {
	Resource string `json:"resource"`
	Field    string `json:"field"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

// errorReply answers status with GitHub's error body.
func errorReply(status int, message, docs string) reply {
	return reply{status: status, body: errorBody{Message: message, DocumentationURL: docs, Status: strconv.Itoa(status)}}
}

// notFoundReply is GitHub's 404, also used for what the caller may not see.
func notFoundReply() reply { return errorReply(http.StatusNotFound, messageNotFound, docsREST) }

// validationReply is GitHub's 422 for one invalid field.
func validationReply(resource, field, message string) reply {
	r := errorReply(http.StatusUnprocessableEntity, messageValidation, docsREST)
	b := r.body.(errorBody)
	b.Errors = []fieldError{{Resource: resource, Field: field, Code: "custom", Message: message}}
	r.body = b
	return r
}

// notFound answers routes GitHub does not have.
func notFound(*http.Request, caller) reply { return notFoundReply() }

// api wraps an endpoint in what every GitHub API response goes through:
// delay, authentication, injected failures, rate limiting, conditional
// requests, the common headers and the request log.
func (s *Server) api(h apiHandler, rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.wait(r)
		c, denied := s.authenticate(r, rt)
		bucket := c.bucket()
		var rep reply
		counted := false
		switch {
		case denied != nil:
			rep = *denied
		default:
			if gated := s.gate(r, c, !rt.free); gated != nil {
				rep = *gated
			} else {
				counted = !rt.free
				rep = h(r, c)
			}
		}

		body, err := encodeBody(rep.body)
		if err != nil {
			s.log.Error(err, "Encoding an API response failed", "path", r.URL.Path)
			rep, body = errorReply(http.StatusInternalServerError, "Server Error", docsREST), nil
		}
		header := w.Header()
		for k, v := range rep.header {
			header[k] = v
		}
		status := rep.status
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && status == http.StatusOK && body != nil {
			etag := entityTag(r, header.Get("Link"), body)
			header.Set("ETag", etag)
			header.Set("Cache-Control", cacheControl(c))
			header.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
			if ifNoneMatch(r.Header.Get("If-None-Match"), etag) {
				status, body = http.StatusNotModified, nil
				if counted {
					s.refund(bucket)
				}
			}
		}
		s.setRateHeaders(header, bucket, c.authenticated())
		header.Set("X-GitHub-Request-Id", newRequestID())
		header.Set("X-GitHub-Media-Type", "github.v3; format=json")
		if body != nil {
			header.Set("Content-Type", "application/json; charset=utf-8")
			header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		// Recorded before the answer is written: a client that has its answer finds its
		// request in the log.
		s.record(Request{
			Method:      r.Method,
			Path:        r.URL.Path,
			Query:       r.URL.RawQuery,
			Status:      status,
			Token:       c.token,
			Conditional: r.Header.Get("If-None-Match") != "",
		})
		w.WriteHeader(status)
		if body != nil && r.Method != http.MethodHead {
			if _, err := w.Write(body); err != nil {
				s.log.V(1).Info("Writing an API response failed", "path", r.URL.Path, "error", err.Error())
			}
		}
	})
}

// record appends a request to the log.
func (s *Server) record(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
}

// encodeBody encodes a reply body; nil stays nil.
func encodeBody(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode response: %w", err)
	}
	return b, nil
}

// writeJSON writes a JSON response outside the API pipeline (admin API,
// non-API paths).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// entityTag is a strong ETag for a representation: a hash of its body, of
// its Link header and of the URL it was served for, so that two pages with
// equal bodies (two pages past the end, say) still differ.
func entityTag(r *http.Request, link string, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s?%s\n%s\n", r.URL.EscapedPath(), r.URL.RawQuery, link)
	h.Write(body)
	return `"` + hex.EncodeToString(h.Sum(nil)) + `"`
}

// ifNoneMatch reports whether an If-None-Match header matches etag, using
// the weak comparison RFC 9110 prescribes for it.
func ifNoneMatch(header, etag string) bool {
	if header == "" {
		return false
	}
	for candidate := range strings.SplitSeq(header, ",") {
		candidate = strings.TrimPrefix(strings.TrimSpace(candidate), "W/")
		if candidate == "*" || candidate == etag {
			return true
		}
	}
	return false
}

// cacheControl is GitHub's Cache-Control for a 200: private to the user when
// authenticated.
func cacheControl(c caller) string {
	if c.authenticated() {
		return "private, max-age=60, s-maxage=60"
	}
	return "public, max-age=60, s-maxage=60"
}

// newRequestID returns an ID in the shape of GitHub's X-GitHub-Request-Id.
func newRequestID() string {
	var b [14]byte
	_, _ = rand.Read(b[:])
	return strings.ToUpper(fmt.Sprintf("%x:%x:%x:%x:%x", b[0:2], b[2:4], b[4:7], b[7:10], b[10:14]))
}

// newUUID returns a random (version 4) UUID, the form of X-GitHub-Delivery.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// nodeID returns a node_id in GitHub's legacy global ID format.
func nodeID(kind string, id int64) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%02d:%s%d", len(kind), kind, id))
}

// timestamp is a time in GitHub's JSON format, RFC 3339 in UTC with whole
// seconds; the zero time is null.
type timestamp time.Time

// MarshalJSON implements json.Marshaler.
func (t timestamp) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	if tt.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + tt.UTC().Format(time.RFC3339) + `"`), nil
}
