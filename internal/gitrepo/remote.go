package gitrepo

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
)

// repoURL is a parsed repository URL.
type repoURL struct {
	// canonical identifies the repository in caches and appears in errors
	// and git's arguments: an http(s) URL without user info, or an SSH URL
	// in the form given, with the user name (see [SSHURL.String]); scheme
	// and host in lower case.
	canonical string
	// origin is scheme://host[:port] of an http(s) URL, the scope of the
	// Authorization header.
	origin string
	// ssh is set for an SSH URL.
	ssh *SSHURL
}

// parseRepoURL validates raw as an http(s) or SSH repository URL.
func parseRepoURL(raw string) (repoURL, error) {
	if IsSSH(raw) {
		u, err := ParseSSHURL(raw)
		if err != nil {
			return repoURL{}, err
		}
		if strings.Trim(u.Path, "/") == "" {
			return repoURL{}, fmt.Errorf("%w: %q: no repository path", ErrInvalidURL, u.String())
		}
		return repoURL{canonical: u.String(), ssh: &u}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the input, which may hold a password.
		return repoURL{}, fmt.Errorf("%w: %q does not parse", ErrInvalidURL, RedactURL(raw))
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return repoURL{}, fmt.Errorf("%w: %q: scheme must be http, https or ssh", ErrInvalidURL, RedactURL(raw))
	case u.Host == "" || u.Opaque != "":
		return repoURL{}, fmt.Errorf("%w: %q: no host", ErrInvalidURL, RedactURL(raw))
	case u.Fragment != "":
		return repoURL{}, fmt.Errorf("%w: %q: fragments are not allowed", ErrInvalidURL, RedactURL(raw))
	case u.User != nil:
		// User info is refused rather than used: it would be stored and shown wherever the
		// URL is (specs, status history, CLI output), and "host:port@other-host" reads like
		// one host while naming another, which misleads credential lookups by URL.
		return repoURL{}, fmt.Errorf("%w: %q: user info (user:password@) is not allowed in a repository URL; "+
			"keep credentials in a repository credential Secret", ErrInvalidURL, RedactURL(raw))
	}
	u.Scheme = scheme
	u.Host = strings.ToLower(u.Host)
	return repoURL{
		canonical: u.String(),
		origin:    scheme + "://" + u.Host,
	}, nil
}

// credentials returns the credentials of a call; nil means anonymous.
func credentials(creds *Credentials) Credentials {
	if creds == nil {
		return Credentials{}
	}
	return *creds
}

// remoteRefs is the answer of git ls-remote.
type remoteRefs struct {
	// objects maps ref names ("HEAD", "refs/heads/main", and peeled tags
	// as "refs/tags/v1^{}") to object names.
	objects map[string]string
	// symrefs maps symbolic refs to their targets ("HEAD" →
	// "refs/heads/main").
	symrefs map[string]string
}

// parseLsRemote reads the output of git ls-remote --symref.
func parseLsRemote(out []byte) (remoteRefs, error) {
	refs := remoteRefs{objects: map[string]string{}, symrefs: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		left, name, ok := strings.Cut(line, "\t")
		if !ok {
			return remoteRefs{}, fmt.Errorf("unexpected ls-remote line %q", line)
		}
		if target, ok := strings.CutPrefix(left, "ref: "); ok {
			refs.symrefs[name] = target
			continue
		}
		if !isFullSHA(left) {
			return remoteRefs{}, fmt.Errorf("unexpected ls-remote line %q", line)
		}
		refs.objects[name] = left
	}
	if err := sc.Err(); err != nil {
		return remoteRefs{}, fmt.Errorf("read ls-remote output: %w", err)
	}
	return refs, nil
}

// lsRemotePatterns are the patterns given to ls-remote for revision, so
// that the server sends only refs that may match. The peeled form is asked
// for explicitly: ls-remote shows "refs/tags/v1^{}" only if a pattern
// matches it.
func lsRemotePatterns(revision string) []string {
	if revision == "" || revision == "HEAD" || isFullSHA(revision) {
		return []string{"HEAD"}
	}
	return []string{revision, revision + "^{}"}
}

// match finds revision among the refs the way git resolves a name (see
// gitrevisions(7)): HEAD, then the name as a full ref, then refs/<name>,
// refs/tags/<name> and refs/heads/<name>. Tags are peeled to the commit.
// It returns the ref to fetch and the commit.
func (r remoteRefs) match(revision string) (ref, commit string, ok bool) {
	if revision == "" || revision == "HEAD" {
		commit, ok := r.objects["HEAD"]
		if !ok {
			return "", "", false
		}
		// Fetch the branch HEAD points at rather than HEAD itself, so
		// that the mirror's refs mirror the server's.
		if target := r.symrefs["HEAD"]; target != "" && r.objects[target] == commit {
			return target, commit, true
		}
		return "HEAD", commit, true
	}
	candidates := []string{"refs/" + revision, "refs/tags/" + revision, "refs/heads/" + revision}
	if strings.HasPrefix(revision, "refs/") {
		candidates = append([]string{revision}, candidates...)
	}
	for _, name := range candidates {
		if peeled, ok := r.objects[name+"^{}"]; ok {
			return name, peeled, true
		}
		if obj, ok := r.objects[name]; ok {
			return name, obj, true
		}
	}
	return "", "", false
}

// listRemote runs git ls-remote for the refs that may match revision.
// Concurrent identical calls (same repository, credentials and revision)
// share one process. A successful call records that the credentials may
// read the repository.
func (r *Reader) listRemote(ctx context.Context, rp *repo, a *auth, revision string) (remoteRefs, error) {
	patterns := lsRemotePatterns(revision)
	key := rp.url + "\x00" + a.id + "\x00" + strings.Join(patterns, "\x00")
	refs, err := r.remoteFlights.do(ctx, key, func(ctx context.Context) (remoteRefs, error) {
		r.stats.remoteLookups.Add(1)
		args := append([]string{"ls-remote", "--symref", rp.url}, patterns...)
		out, err := r.run(ctx, "", a, args...)
		if err != nil {
			return remoteRefs{}, classify(err)
		}
		return parseLsRemote(out)
	})
	if err != nil {
		return remoteRefs{}, err
	}
	rp.grantAccess(a.id)
	return refs, nil
}

// isFullSHA reports whether s is a full SHA-1 object name.
func isFullSHA(s string) bool { return len(s) == 40 && isHex(s) }

// isShortSHA reports whether s may abbreviate an object name (git accepts
// four hex digits or more).
func isShortSHA(s string) bool { return len(s) >= 4 && len(s) < 40 && isHex(s) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// validRevision rejects revisions that are no ref name or object name, in
// particular anything git could take for an option or a pattern.
func validRevision(rev string) bool {
	if strings.HasPrefix(rev, "-") || strings.Contains(rev, "..") || strings.Contains(rev, "@{") ||
		strings.HasSuffix(rev, "/") || strings.HasSuffix(rev, ".lock") || strings.Contains(rev, "//") {
		return false
	}
	for _, c := range rev {
		if c <= ' ' || c == 0x7f || strings.ContainsRune(`:?*[\^~`, c) {
			return false
		}
	}
	return true
}

// validRefName reports whether name, reported by a server, is safe to use
// in a refspec on git's command line.
func validRefName(name string) bool {
	return (name == "HEAD" || strings.HasPrefix(name, "refs/")) && validRevision(name)
}
