package render

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// gitRef is a remote kustomize base: a directory of a Git repository at a ref.
type gitRef struct {
	// RepoURL is the repository as Options.Remote gets it: "https://github.com/org/repo.git",
	// "ssh://git@host/org/repo.git", "git@host:org/repo.git".
	RepoURL string
	// Ref is the branch, tag or commit of ?ref= (or ?version=); empty means HEAD.
	Ref string
	// Dir is the directory in the repository, slash-separated; "." is the root.
	Dir string
}

// Errors of parseGitRef, for references that name no Git repository kustomize could clone.
var (
	errFileURL = errors.New("downloading files is not supported; only Git repositories can be remote bases")
	errFileGit = errors.New("file:// repositories are not supported")
)

// parseGitRef parses a remote base as kustomize does (git.NewRepoSpecFromURL in
// sigs.k8s.io/kustomize/api), in the forms
//
//	github.com/org/repo//dir?ref=v1
//	https://host/org/repo.git//dir?ref=v1     (also without .git, or with _git/ as Azure's)
//	git::https://host/org/repo//dir?ref=v1
//	ssh://git@host/org/repo.git//dir?ref=v1
//	git@host:org/repo.git//dir?ref=v1
//
// "//" or ".git" ends the repository's path; without either, it is the first two segments.
// ?version= stands for ?ref=, which wins; ?timeout= and ?submodules= are ignored. GitHub
// repositories are normalised as kustomize does, to https://github.com/org/repo (or
// git@github.com:org/repo with a user), and get the ".git" suffix.
//
// An http(s) URL that does not look like a repository (no "//", ".git" or "_git/", no ref,
// not GitHub, and a last segment with a file extension) is a file to download: errFileURL.
func parseGitRef(s string) (gitRef, error) {
	n, query, _ := strings.Cut(s, "?")
	values, err := url.ParseQuery(query)
	if err != nil {
		return gitRef{}, fmt.Errorf("query: %w", err)
	}
	ref := values.Get("version")
	if v := values.Get("ref"); v != "" {
		ref = v
	}

	n, _ = trimPrefixFold(n, "git::")
	var scheme string
	for _, prefix := range []string{"ssh://", "https://", "http://", "file://"} {
		if rest, ok := trimPrefixFold(n, prefix); ok {
			scheme, n = prefix, rest
			break
		}
	}
	if scheme == "file://" {
		return gitRef{}, errFileGit
	}
	var user string
	if m := scpUser.FindString(n); m != "" {
		user, n = m, n[len(m):]
	}
	github := hasPrefixFold(n, "github.com/") || hasPrefixFold(n, "github.com:")
	scp := scheme == "" && (user != "" || github)
	if scheme == "" && !scp {
		return gitRef{}, errors.New("not a Git URL")
	}

	host, rest := n, ""
	sep := strings.Index(n, "/")
	if scp {
		// In scp-like URLs (user@host:path), a colon before any slash ends the host.
		if colon := strings.Index(n, ":"); colon > 0 && (sep < 0 || colon < sep) {
			sep = colon
		}
	}
	if sep >= 0 {
		host, rest = n[:sep+1], n[sep+1:]
	}
	if github {
		if scheme == "ssh://" || user != "" {
			scheme, host = "", "github.com:"
		} else {
			scheme, user, host = "https://", "", "github.com/"
		}
	}
	if host == "" || host == "/" || host == ":" {
		return gitRef{}, errors.New("no host")
	}

	repoPath, dir, marked := splitRepoPath(rest)
	isHTTP := scheme == "https://" || scheme == "http://"
	if !marked && isHTTP && ref == "" && !github && strings.Contains(path.Base(rest), ".") {
		return gitRef{}, errFileURL
	}
	repoPath = strings.TrimSuffix(repoPath, "/")
	if repoPath == "" {
		return gitRef{}, errors.New("no repository path")
	}
	dir = path.Clean(strings.TrimLeft(dir, "/"))
	if dir == ".." || strings.HasPrefix(dir, "../") {
		return gitRef{}, errors.New("the directory leaves the repository")
	}
	if github && !strings.HasSuffix(repoPath, ".git") {
		repoPath += ".git"
	}
	return gitRef{RepoURL: scheme + user + host + repoPath, Ref: ref, Dir: dir}, nil
}

// splitRepoPath splits the path of a Git URL into the repository's path and the directory in
// the repository, at "_git/<repo>", "//" or ".git", or else after two segments. marked says
// whether one of the markers was found.
func splitRepoPath(p string) (repoPath, dir string, marked bool) {
	if i := strings.Index(p, "_git/"); i >= 0 {
		name, dir, _ := strings.Cut(p[i+len("_git/"):], "/")
		return p[:i+len("_git/")] + name, dir, true
	}
	if i := strings.Index(p, "//"); i >= 0 {
		return p[:i], p[i+2:], true
	}
	for i := 0; ; {
		j := strings.Index(p[i:], ".git")
		if j < 0 {
			break
		}
		end := i + j + len(".git")
		if end == len(p) || p[end] == '/' {
			return p[:end], p[end:], true
		}
		i = end
	}
	segments := strings.SplitN(p, "/", 3)
	if len(segments) < 2 {
		return "", "", false
	}
	repoPath = segments[0] + "/" + segments[1]
	if len(segments) == 3 {
		dir = segments[2]
	}
	return repoPath, dir, false
}

// String gives the reference back in kustomize's form, for messages:
// "https://github.com/org/repo.git//dir?ref=v1".
func (r gitRef) String() string {
	s := r.RepoURL
	if r.Dir != "." {
		s += "//" + r.Dir
	}
	if r.Ref != "" {
		s += "?ref=" + r.Ref
	}
	return s
}

func trimPrefixFold(s, prefix string) (string, bool) {
	if hasPrefixFold(s, prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
