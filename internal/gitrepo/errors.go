package gitrepo

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Sentinel errors, matched with errors.Is. Every error returned by a
// [Reader] is an [*Error] whose chain holds at most one of them.
var (
	// ErrUnreachable means the Git server could not be reached or did not
	// serve the request: connection refused, DNS failure, connection reset
	// or timeout, or an HTTP 5xx answer. Usually transient.
	ErrUnreachable = errors.New("git server unreachable")

	// ErrUnauthorized means the server refused the request for lack of
	// valid credentials (HTTP 401 or 403).
	ErrUnauthorized = errors.New("access denied by git server (check credentials)")

	// ErrRepositoryNotFound means the server answered that there is no
	// repository at the URL (HTTP 404). Some hosts answer so for private
	// repositories when no credentials are given.
	ErrRepositoryNotFound = errors.New("repository not found")

	// ErrRevisionNotFound means the repository has no branch, tag or
	// commit matching the requested revision.
	ErrRevisionNotFound = errors.New("revision not found")

	// ErrInvalidURL means the repository URL cannot be used: it does not
	// parse, is neither an http(s) nor an SSH URL, or carries a password.
	// Retrying cannot help.
	ErrInvalidURL = errors.New("invalid repository URL")

	// ErrHostKey means the host key an SSH server presented is not one
	// the known hosts (see [Options.KnownHosts]) list for it: the host is
	// missing from them, there are none, or its key differs, which may be
	// a machine in the middle. The error names the host; the known hosts
	// must be fixed, retrying cannot help.
	ErrHostKey = errors.New("SSH host key not trusted")
)

// errClosed is returned by a [Reader] after [Reader.Close].
var errClosed = errors.New("reader is closed")

// Error describes a failed operation on a repository. Its chain holds the
// cause, including one of the package's sentinel errors where the cause was
// recognised, or a context error when the caller's context ended.
type Error struct {
	// Op is what was being done: "resolve" or "snapshot".
	Op string
	// URL is the repository URL, without password: an http(s) URL without
	// user info, an SSH URL with its user name.
	URL string
	// Revision is the revision as requested; empty means HEAD.
	Revision string
	// Err is the cause.
	Err error
}

func (e *Error) Error() string {
	rev := e.Revision
	if rev == "" {
		rev = "HEAD"
	}
	return fmt.Sprintf("gitrepo: %s %s at %s: %v", e.Op, e.URL, rev, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// commandError is a git process that failed. Stderr is already summarised
// and scrubbed of credentials.
type commandError struct {
	Subcommand string // "ls-remote", "fetch", …
	Err        error  // from exec
	Stderr     string
}

func (e *commandError) Error() string {
	if e.Stderr == "" {
		return fmt.Sprintf("git %s: %v", e.Subcommand, e.Err)
	}
	// git's message says more than its exit status.
	return fmt.Sprintf("git %s: %s", e.Subcommand, e.Stderr)
}

func (e *commandError) Unwrap() error { return e.Err }

// stderrPatterns map fragments of git's (and libcurl's and ssh's) messages,
// with LC_ALL=C and lower-cased, to sentinel errors. They are tried in order:
// an authentication failure is usually followed by a hang-up message that
// would otherwise read as a network problem.
var stderrPatterns = []struct {
	sentinel  error
	fragments []string
}{
	{ErrUnauthorized, []string{
		"authentication failed",
		"could not read username",
		"could not read password",
		"terminal prompts disabled",
		"requested url returned error: 401",
		"requested url returned error: 403",
		"http basic: access denied",
		"invalid username or password",
		// ssh: "git@host: Permission denied (publickey)."
		"permission denied (",
		"too many authentication failures",
	}},
	{ErrRepositoryNotFound, []string{
		"not found: did you run git update-server-info",
		"requested url returned error: 404",
		"does not appear to be a git repository",
		"' not found",
		// GitHub and GitLab over ssh.
		"error: repository not found",
		"the project you were looking for could not be found",
	}},
	{ErrUnreachable, []string{
		"failed to connect to",
		"couldn't connect to server",
		"could not connect to server",
		"could not resolve host",
		"could not resolve proxy",
		"connection refused",
		"connection timed out",
		"operation timed out",
		"connection reset",
		"empty reply from server",
		"recv failure",
		"send failure",
		"transfer closed",
		"requested url returned error: 500",
		"requested url returned error: 502",
		"requested url returned error: 503",
		"requested url returned error: 504",
		"the remote end hung up unexpectedly",
		// ssh: "ssh: connect to host h port 22: Connection refused", …
		"could not resolve hostname",
		"no route to host",
		"network is unreachable",
		"connection closed by",
		"kex_exchange_identification",
	}},
}

// classify wraps err with the sentinel its git message matches, if any. A
// context error is returned as is: the caller gave up, the server may be
// fine.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ce *commandError
	if !errors.As(err, &ce) || errors.Is(err, ErrHostKey) {
		return err
	}
	msg := strings.ToLower(ce.Stderr)
	for _, p := range stderrPatterns {
		for _, f := range p.fragments {
			if strings.Contains(msg, f) {
				return fmt.Errorf("%w: %w", p.sentinel, err)
			}
		}
	}
	return err
}

// isRemoteFailure reports whether err says the server cannot be used at
// all, as opposed to not having what was asked for. Fallback strategies
// (fetch by SHA after fetching a ref failed) are pointless after one.
func isRemoteFailure(err error) bool {
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrUnauthorized) ||
		errors.Is(err, ErrRepositoryNotFound) || errors.Is(err, ErrHostKey) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// maxStderr bounds the git output quoted in an error, so errors stay
// readable in conditions and logs.
const maxStderr = 1024

// gitBoilerplate are lines git adds to every failure of the ssh transport,
// whatever the cause.
var gitBoilerplate = map[string]bool{
	"Please make sure you have the correct access rights": true,
	"and the repository exists.":                          true,
}

// summarizeStderr keeps git's diagnostic lines (dropping hints, boilerplate
// and blank lines), joins them with "; ", removes the secrets and bounds the length.
func summarizeStderr(stderr string, secrets []string) string {
	var lines []string
	for line := range strings.SplitSeq(stderr, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "hint:") || gitBoilerplate[line] {
			continue
		}
		lines = append(lines, line)
	}
	s := scrub(strings.Join(lines, "; "), secrets)
	if len(s) > maxStderr {
		s = s[:maxStderr] + "…"
	}
	return s
}

// scrub replaces every occurrence of a secret in s.
func scrub(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "xxxxx")
		}
	}
	return s
}

// RedactURL renders a repository URL without its password, for messages
// and output: an http(s) URL loses its user info, an ssh:// URL keeps the
// user name, which is no secret. It copes with strings that are no URLs,
// which may still carry a password before an '@' ("user:pass@host:path"
// even parses, as an opaque URL).
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" && u.Opaque == "" {
		if u.User != nil && strings.EqualFold(u.Scheme, "ssh") && u.User.Username() != "" {
			u.User = url.User(u.User.Username())
		} else {
			u.User = nil
		}
		return u.String()
	}
	// Keep the user name, hide whatever follows its colon.
	at := strings.LastIndex(raw, "@")
	if at < 0 {
		return raw
	}
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 && i < at {
		start = i + 3
	}
	colon := strings.Index(raw[start:at], ":")
	if colon < 0 {
		return raw
	}
	return raw[:start+colon+1] + "xxxxx" + raw[at:]
}

// secretsOf lists the strings derived from a password that must never be
// shown: the password itself and the encodings sent on the wire.
func secretsOf(username, password string) []string {
	if password == "" {
		return nil
	}
	return []string{
		base64.StdEncoding.EncodeToString([]byte(username + ":" + password)),
		url.QueryEscape(password),
		url.PathEscape(password),
		password,
	}
}
