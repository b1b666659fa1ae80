// Package credentials finds the credentials navarch sends to a repository: Secrets of the
// system namespace labelled navarch.io/secret-type=repository, each holding a `url` and either
// a `username` and `password` (or a token as password), for http(s) URLs, or an
// `sshPrivateKey` (a passphrase-less deploy key), for SSH URLs.
//
// A Secret applies to a repository URL when both name the same scheme, host and port and the
// Secret's path is the repository's path or one of its parent directories, compared segment by
// segment: a Secret for https://git.example.com/team applies to
// https://git.example.com/team/apps.git, never to https://git.example.com/teamXYZ/apps.git
// nor to any URL on another host. The Secret with the longest path wins. URLs are parsed, not
// compared as strings, so "http://host-a@host-b/repo" (user info that reads like a host) can
// never borrow host-a's credentials; http(s) repository URLs with user info are refused
// altogether.
//
// SSH URLs, ssh://[user@]host[:port]/path and the scp-like user@host:path, have the scheme
// "ssh" whichever form they take, port 22 unless they name another, and their user name (git@)
// is ignored in matching; a password in one is refused. So a Secret for ssh://git@git.example.com/team
// applies to git@git.example.com:team/apps.git. A Secret for an SSH URL never applies to an
// http(s) URL of the same host, nor the other way round.
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/fleet/helm/repo"
	"github.com/navarch-io/navarch/internal/gitrepo"
)

const (
	// LabelSecretType marks credential Secrets.
	LabelSecretType = "navarch.io/secret-type"
	// SecretTypeRepository is the LabelSecretType value of repository credentials.
	SecretTypeRepository = "repository"
)

// Keys of a repository credential Secret's data.
const (
	// KeyURL is the URL the credentials apply to, and below.
	KeyURL = "url"
	// KeyUsername and KeyPassword authenticate to http(s) URLs.
	KeyUsername = "username"
	KeyPassword = "password"
	// KeySSHPrivateKey is the private key, in OpenSSH or PEM format and without passphrase,
	// that authenticates to SSH URLs.
	KeySSHPrivateKey = "sshPrivateKey"
	// KeyBearerToken authenticates to Helm repositories and OCI registries.
	KeyBearerToken = "bearerToken"
	// KeyTLSClientCertData and KeyTLSClientCertKey are a TLS client certificate and its key
	// (PEM), and KeyCAData a CA bundle (PEM), for Helm repositories and OCI registries.
	KeyTLSClientCertData = "tlsClientCertData"
	KeyTLSClientCertKey  = "tlsClientCertKey"
	KeyCAData            = "caData"
	// KeyPlainHTTP "true" talks HTTP rather than HTTPS to an OCI registry.
	KeyPlainHTTP = "plainHTTP"
)

// The SSH known hosts: a ConfigMap of the system namespace, in OpenSSH's known_hosts format.
const (
	KnownHostsConfigMap = "navarch-ssh-known-hosts"
	KnownHostsKey       = "ssh_known_hosts"
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
// does: the username and password of an http(s) Secret, the private key of an SSH one. A repoURL
// that carries user info (http(s)) or a password (SSH) is an error, and so is a Secret that
// applies but holds the wrong kind of credentials for its URL.
func (s *Store) Lookup(ctx context.Context, repoURL string) (*gitrepo.Credentials, error) {
	best, loc, err := s.find(ctx, repoURL)
	if err != nil || best == nil {
		return nil, err
	}
	key := best.Data[KeySSHPrivateKey]
	if loc.scheme == schemeSSH {
		if len(key) == 0 {
			return nil, fmt.Errorf("repository credential Secret %s/%s: its %s is an SSH URL but it has no %s",
				best.Namespace, best.Name, KeyURL, KeySSHPrivateKey)
		}
		return &gitrepo.Credentials{SSHPrivateKey: key}, nil
	}
	if len(key) > 0 && len(best.Data[KeyPassword]) == 0 {
		return nil, fmt.Errorf("repository credential Secret %s/%s: an %s only authenticates to SSH URLs (ssh:// or user@host:path), "+
			"and its %s is not one", best.Namespace, best.Name, KeySSHPrivateKey, KeyURL)
	}
	return &gitrepo.Credentials{Username: string(best.Data[KeyUsername]), Password: string(best.Data[KeyPassword])}, nil
}

// find returns the Secret that applies to repoURL, or nil, and the parsed repoURL.
func (s *Store) find(ctx context.Context, repoURL string) (*corev1.Secret, location, error) {
	repo, err := parse(repoURL)
	if err != nil {
		return nil, location{}, err
	}
	if repo.userinfo {
		return nil, location{}, fmt.Errorf("%w: user info (user:password@) is not allowed in a repository URL; keep credentials in a Secret labelled %s=%s",
			gitrepo.ErrInvalidURL, LabelSecretType, SecretTypeRepository)
	}
	var secrets corev1.SecretList
	if err := s.Reader.List(ctx, &secrets, client.InNamespace(s.Namespace), client.MatchingLabels{LabelSecretType: SecretTypeRepository}); err != nil {
		return nil, location{}, fmt.Errorf("list repository credentials in %s: %w", s.Namespace, err)
	}
	// Sorted by name, so that of two Secrets for the same URL the same one always wins.
	sort.Slice(secrets.Items, func(i, j int) bool { return secrets.Items[i].Name < secrets.Items[j].Name })
	var best *corev1.Secret
	bestLen := -1
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		scope, err := parse(string(sec.Data[KeyURL]))
		if err != nil || scope.userinfo {
			continue // not a usable scope: it applies to nothing
		}
		if n, ok := scope.covers(repo); ok && n > bestLen {
			best, bestLen = sec, n
		}
	}
	return best, repo, nil
}

// LookupChartRepository returns the credentials of the Secret that applies to the Helm
// repository or OCI registry at repoURL, or nil when none does: HTTP basic (username and
// password) or a bearer token, a TLS client certificate, a CA bundle, and for OCI plainHTTP.
func (s *Store) LookupChartRepository(ctx context.Context, repoURL string) (*repo.Credentials, error) {
	best, _, err := s.find(ctx, repoURL)
	if err != nil || best == nil {
		return nil, err
	}
	d := best.Data
	if len(d[KeySSHPrivateKey]) > 0 && len(d[KeyPassword]) == 0 && len(d[KeyBearerToken]) == 0 {
		return nil, fmt.Errorf("repository credential Secret %s/%s: an %s only authenticates to Git over SSH, not to a chart repository",
			best.Namespace, best.Name, KeySSHPrivateKey)
	}
	if (len(d[KeyTLSClientCertData]) == 0) != (len(d[KeyTLSClientCertKey]) == 0) {
		return nil, fmt.Errorf("repository credential Secret %s/%s: %s and %s go together",
			best.Namespace, best.Name, KeyTLSClientCertData, KeyTLSClientCertKey)
	}
	plain := strings.TrimSpace(string(d[KeyPlainHTTP]))
	if plain != "" && plain != "true" && plain != "false" {
		return nil, fmt.Errorf("repository credential Secret %s/%s: %s must be true or false", best.Namespace, best.Name, KeyPlainHTTP)
	}
	return &repo.Credentials{
		Username:    string(d[KeyUsername]),
		Password:    string(d[KeyPassword]),
		BearerToken: string(d[KeyBearerToken]),
		CertData:    d[KeyTLSClientCertData],
		KeyData:     d[KeyTLSClientCertKey],
		CAData:      d[KeyCAData],
		PlainHTTP:   plain == "true",
	}, nil
}

// KnownHosts returns the SSH known hosts of the ConfigMap KnownHostsConfigMap in the
// Store's namespace (key KnownHostsKey), or nothing when there is none.
func (s *Store) KnownHosts(ctx context.Context) ([]byte, error) {
	var cm corev1.ConfigMap
	err := s.Reader.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: KnownHostsConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", s.Namespace, KnownHostsConfigMap, err)
	}
	return []byte(cm.Data[KnownHostsKey]), nil
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

// schemeSSH is the scheme of both forms of SSH URL.
const schemeSSH = "ssh"

// location is a parsed URL reduced to what credentials are scoped by.
type location struct {
	scheme   string
	host     string // lower-case host:port, with the scheme's default port made explicit
	segments []string
	userinfo bool // user info in an http(s) URL; SSH URLs keep their user name out of it
}

func parse(raw string) (location, error) {
	raw = strings.TrimSpace(raw)
	if gitrepo.IsSSH(raw) {
		// The one parser of SSH URLs, shared with the Git client, so that both read the
		// same host and path out of a URL. It refuses passwords.
		u, err := gitrepo.ParseSSHURL(raw)
		if err != nil {
			return location{}, err
		}
		return location{scheme: schemeSSH, host: u.HostPort(), segments: segments(u.Path)}, nil
	}
	u, err := url.Parse(raw)
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
		case "https", "oci":
			port = "443"
		}
	}
	return location{scheme: scheme, host: net.JoinHostPort(host, port), segments: segments(u.Path), userinfo: u.User != nil}, nil
}

// segments splits a path into its segments. Dot segments are resolved as the HTTP client
// will resolve them before sending (and an SSH server's file system will).
func segments(p string) []string {
	var segs []string
	for seg := range strings.SplitSeq(path.Clean("/"+p), "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	return segs
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
