// Package credentials finds the credentials navarch sends to a repository: Secrets of the
// system namespace labelled navarch.io/secret-type=repository, each holding a `url` and a
// `username` and `password` (or a token as password).
//
// A Secret applies to a repository URL when both name the same scheme, host and port and the
// Secret's path is the repository's path or one of its parent directories, compared segment by
// segment: a Secret for https://git.example.com/team applies to
// https://git.example.com/team/apps.git, never to https://git.example.com/teamXYZ/apps.git
// nor to any URL on another host. The Secret with the longest path wins. URLs are parsed, not
// compared as strings, so "http://host-a@host-b/repo" (user info that reads like a host) can
// never borrow host-a's credentials; repository URLs with user info are refused altogether.
//
// The Store reads through a cache (a watch on the labelled Secrets of the system namespace),
// so a lookup costs no API request however many Applications ask.
package credentials

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/internal/gitrepo"
)

const (
	// LabelSecretType marks credential Secrets.
	LabelSecretType = "navarch.io/secret-type"
	// SecretTypeRepository is the LabelSecretType value of repository credentials.
	SecretTypeRepository = "repository"
)

// Store looks up repository credentials in Secrets.
type Store struct {
	// Reader lists Secrets; the controller passes a cache restricted to the labelled Secrets
	// of Namespace.
	Reader client.Reader
	// Namespace holds the credential Secrets.
	Namespace string
}

// Lookup returns the credentials of the Secret that applies to repoURL, or nil when none
// does. A repoURL that carries user info is an error.
func (s *Store) Lookup(ctx context.Context, repoURL string) (*gitrepo.Credentials, error) {
	repo, err := parse(repoURL)
	if err != nil {
		return nil, err
	}
	if repo.userinfo {
		return nil, fmt.Errorf("%w: user info (user:password@) is not allowed in a repository URL; keep credentials in a Secret labelled %s=%s",
			gitrepo.ErrInvalidURL, LabelSecretType, SecretTypeRepository)
	}
	var secrets corev1.SecretList
	if err := s.Reader.List(ctx, &secrets, client.InNamespace(s.Namespace), client.MatchingLabels{LabelSecretType: SecretTypeRepository}); err != nil {
		return nil, fmt.Errorf("list repository credentials in %s: %w", s.Namespace, err)
	}
	// Sorted by name, so that of two Secrets for the same URL the same one always wins.
	sort.Slice(secrets.Items, func(i, j int) bool { return secrets.Items[i].Name < secrets.Items[j].Name })
	var best *corev1.Secret
	bestLen := -1
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		scope, err := parse(string(sec.Data["url"]))
		if err != nil || scope.userinfo {
			continue // not a usable scope: it applies to nothing
		}
		if n, ok := scope.covers(repo); ok && n > bestLen {
			best, bestLen = sec, n
		}
	}
	if best == nil {
		return nil, nil
	}
	return &gitrepo.Credentials{Username: string(best.Data["username"]), Password: string(best.Data["password"])}, nil
}

// Applies reports whether credentials scoped to secretURL may be sent to repoURL.
func Applies(secretURL, repoURL string) bool {
	scope, err := parse(secretURL)
	if err != nil || scope.userinfo {
		return false
	}
	repo, err := parse(repoURL)
	if err != nil || repo.userinfo {
		return false
	}
	_, ok := scope.covers(repo)
	return ok
}

// location is a parsed URL reduced to what credentials are scoped by.
type location struct {
	scheme   string
	host     string // lower-case host:port, with the scheme's default port made explicit
	segments []string
	userinfo bool
}

func parse(raw string) (location, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Opaque != "" || u.Host == "" {
		return location{}, fmt.Errorf("%w: %q is not a URL with a host", gitrepo.ErrInvalidURL, gitrepo.RedactURL(raw))
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		case "ssh":
			port = "22"
		}
	}
	// Dot segments are resolved as the HTTP client will resolve them before sending.
	var segments []string
	for seg := range strings.SplitSeq(path.Clean("/"+u.Path), "/") {
		if seg != "" {
			segments = append(segments, seg)
		}
	}
	return location{scheme: scheme, host: net.JoinHostPort(host, port), segments: segments, userinfo: u.User != nil}, nil
}

// covers reports whether credentials scoped to l apply to repo, and how specific l is.
func (l location) covers(repo location) (int, bool) {
	if l.scheme != repo.scheme || l.host != repo.host || len(l.segments) > len(repo.segments) {
		return 0, false
	}
	for i, seg := range l.segments {
		if !sameSegment(seg, repo.segments[i], i == len(repo.segments)-1) {
			return 0, false
		}
	}
	return len(l.segments), true
}

// sameSegment compares path segments; the repository's own name may differ by a ".git" suffix.
func sameSegment(scope, repo string, last bool) bool {
	if scope == repo {
		return true
	}
	return last && strings.TrimSuffix(scope, ".git") == strings.TrimSuffix(repo, ".git")
}
