package repo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// The kinds of failure, wrapped in an [*Error]. Test with errors.Is.
var (
	// ErrChartNotFound means the repository has no chart of that name.
	ErrChartNotFound = errors.New("no such chart")
	// ErrVersionNotFound means the chart exists but no version matches;
	// the message lists the newest versions there are.
	ErrVersionNotFound = errors.New("no such version")
	// ErrInvalidVersion means the version is neither a version nor a
	// semver constraint.
	ErrInvalidVersion = errors.New("invalid version or constraint")
	// ErrUnauthorized means the repository refused the credentials, or
	// their absence (HTTP 401 or 403).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrInvalidCredentials means the credentials could not be used at all,
	// such as a TLS client certificate that does not parse.
	ErrInvalidCredentials = errors.New("invalid credentials")
	// ErrUnreachable means the repository could not be talked to:
	// connection failures, timeouts, HTTP 5xx and 429. Usually transient.
	ErrUnreachable = errors.New("unreachable")
	// ErrInvalidRepository means the URL is not a repository this client
	// understands, or what it serves is not a valid index or chart archive.
	ErrInvalidRepository = errors.New("invalid repository")
	// ErrDigestMismatch means a downloaded archive is not the one the
	// index describes.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrTooLarge means an index or archive exceeds the size this client
	// accepts.
	ErrTooLarge = errors.New("too large")
)

// Error is the error of every failed [Client] call: which repository,
// chart and version it was about, and what went wrong (Err wraps one of the
// Err* kinds, or a context error).
type Error struct {
	// Repo is the repository URL, without user info.
	Repo string
	// Chart is the chart name; empty when the failure is the repository's.
	Chart string
	// Version is the version or constraint asked for; empty for the latest.
	Version string
	// Err is the cause.
	Err error
}

// Error reads e.g. `helm repository https://charts.example.com: chart "web"
// version "9.9.9": no such version (have 1.2.0, 1.1.0)`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("helm repository ")
	b.WriteString(e.Repo)
	if e.Chart != "" {
		fmt.Fprintf(&b, ": chart %q", e.Chart)
	}
	if e.Version != "" {
		fmt.Fprintf(&b, " version %q", e.Version)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// statusError classifies an HTTP answer that is not a success. what names
// the request for the message, e.g. "index.yaml".
func statusError(what string, code int) error {
	return fmt.Errorf("%w: %s: %d %s", kindOfStatus(code), what, code, http.StatusText(code))
}

// errNotFound marks a registry's "not found" answer, which the caller turns
// into ErrChartNotFound or ErrVersionNotFound.
var errNotFound = errors.New("not found")

// classify wraps a transport-level error in the kind it belongs to and
// removes user info from the URLs it carries. Errors already classified,
// and the caller's own cancellation, pass through.
func classify(err error) error {
	redactURLError(err)
	var resp *errcode.ErrorResponse
	switch {
	case err == nil:
		return nil
	case isClassified(err), errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &resp):
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%w: %w", errNotFound, err)
		}
		return fmt.Errorf("%w: %w", kindOfStatus(resp.StatusCode), err)
	case errors.Is(err, errdef.ErrNotFound):
		return fmt.Errorf("%w: %w", errNotFound, err)
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("%w: %w", ErrUnauthorized, err)
	case errors.Is(err, context.DeadlineExceeded), isNetError(err):
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	default:
		return fmt.Errorf("%w: %w", ErrInvalidRepository, err)
	}
}

// kindOfStatus is the kind of failure an HTTP status code means.
func kindOfStatus(code int) error {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return ErrUnauthorized
	case code == http.StatusTooManyRequests || code >= 500:
		return ErrUnreachable
	default:
		return ErrInvalidRepository
	}
}

// isClassified reports whether err already wraps one of the kinds.
func isClassified(err error) bool {
	for _, kind := range []error{
		ErrChartNotFound, ErrVersionNotFound, ErrInvalidVersion, ErrUnauthorized, ErrInvalidCredentials,
		ErrUnreachable, ErrInvalidRepository, ErrDigestMismatch, ErrTooLarge, errNotFound,
	} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}

// isNetError reports connection-level failures: refused, reset, DNS,
// timeouts, and whatever else net/http reports as a *url.Error.
func isNetError(err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &netErr) || errors.As(err, &urlErr)
}

// redactURLError removes user info from the URL of every *url.Error in
// err's chain, in place.
func redactURLError(err error) {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		urlErr.URL = redact(urlErr.URL)
	}
}

// redact returns rawURL without user info. A URL that does not parse is
// cut to its scheme and host as well as can be told.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.LastIndex(rawURL, "@"); i >= 0 {
			scheme, _, _ := strings.Cut(rawURL, "://")
			return scheme + "://" + rawURL[i+1:]
		}
		return rawURL
	}
	u.User = nil
	return u.String()
}
