package webhook

import (
	"net"
	"net/url"
	"path"
	"strings"
)

// defaultPorts are the ports a repository URL may name or leave out to the same effect.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ssh": "22", "git": "9418"}

// RepoKey returns the key a repository is matched by, whichever way a URL names it: its host
// and path, lower-cased, without scheme, user, default port, ".git" suffix or trailing slash.
// These all give "github.com/org/repo":
//
//	https://github.com/Org/Repo.git
//	http://github.com/org/repo/
//	ssh://git@github.com:22/org/repo.git
//	git@github.com:org/repo.git
//
// A URL without a host and a path (a local directory, an empty string) gives "": it matches
// nothing.
func RepoKey(repoURL string) string {
	s := strings.TrimSpace(repoURL)
	var host, p string
	switch {
	case strings.Contains(s, "://"):
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			return ""
		}
		host = u.Hostname()
		if strings.Contains(host, ":") && net.ParseIP(host) == nil {
			return ""
		}
		switch port := u.Port(); {
		case port != "" && port != defaultPorts[strings.ToLower(u.Scheme)]:
			host = net.JoinHostPort(host, port)
		case strings.Contains(host, ":"):
			host = "[" + host + "]" // IPv6
		}
		p = u.Path
	case scpLike(s):
		// [user@]host:path, as git and ssh write it.
		var rest string
		host, rest, _ = strings.Cut(s, ":")
		if at := strings.LastIndex(host, "@"); at >= 0 {
			host = host[at+1:]
		}
		if !validHost(host) {
			return ""
		}
		p = "/" + rest
	default:
		return ""
	}
	p = strings.TrimRight(p, "/")
	p = strings.TrimSuffix(p, ".git")
	p = path.Clean("/" + p)
	if host == "" || p == "/" {
		return ""
	}
	return strings.ToLower(host + p)
}

// scpLike reports whether s is git's scp-like syntax, [user@]host:path: a colon comes before
// any slash.
func scpLike(s string) bool {
	colon := strings.Index(s, ":")
	slash := strings.Index(s, "/")
	return colon > 0 && (slash < 0 || colon < slash)
}

// validHost reports whether host is a DNS name or an IPv4 address, as an scp-like URL has.
func validHost(host string) bool {
	for _, c := range host {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return host != ""
}

// Revision returns the name an Application's targetRevision is matched by against pushes:
// "HEAD" for an empty revision or HEAD (the default branch), the branch or tag name for
// refs/heads/<name> and refs/tags/<name>, and the revision itself otherwise.
func Revision(targetRevision string) string {
	r := strings.TrimSpace(targetRevision)
	switch {
	case r == "" || r == "HEAD":
		return "HEAD"
	case strings.HasPrefix(r, "refs/heads/"):
		return strings.TrimPrefix(r, "refs/heads/")
	case strings.HasPrefix(r, "refs/tags/"):
		return strings.TrimPrefix(r, "refs/tags/")
	}
	return r
}
