package gitserver

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// DefaultBranch is the branch [Server.CreateRepo] commits to and HEAD of every
// repository it creates points at.
const DefaultBranch = "main"

// Identity used for every commit and annotated tag the package creates.
const (
	authorName  = "navarch"
	authorEmail = "navarch@localhost"
)

// repoConfig is set on every repository [Server.CreateRepo] creates.
var repoConfig = [][2]string{
	// Allow pushes over HTTP without authentication.
	{"http.receivepack", "true"},
	// Let clients fetch a commit by SHA even with protocol v0.
	{"uploadpack.allowReachableSHA1InWant", "true"},
	// Let clients make partial clones (--filter=blob:none).
	{"uploadpack.allowFilter", "true"},
}

// Git runs the git CLI in dir (the current directory if empty) and returns
// its standard output with surrounding white space trimmed.
//
// The environment is controlled so that results do not depend on the
// machine: the system and global git configuration are ignored, GIT_*
// variables of the calling process (except GIT_EXEC_PATH) are dropped,
// prompting for credentials is disabled, messages are in English, the
// default branch is main and commits are made as navarch <navarch@localhost>.
// Failures wrap git's stderr; passwords in URL arguments are redacted.
func Git(dir string, args ...string) (string, error) {
	return runGit(dir, nil, args...)
}

// runGit is [Git] with extra environment variables.
func runGit(dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("git not found in PATH; install git (it provides git-http-backend too): %w", err)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "(no output)"
		}
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(redactArgs(args), " "), err, msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// gitEnv returns the environment for git commands run by [Git].
func gitEnv() []string {
	base := os.Environ()
	env := make([]string, 0, len(base)+16)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "GIT_EXEC_PATH":
			// Kept: it locates git's helpers on unusual installs.
		case strings.HasPrefix(k, "GIT_"), k == "SSH_ASKPASS", k == "LC_ALL", k == "LANGUAGE":
			continue
		}
		env = append(env, kv)
	}
	config := [][2]string{
		{"user.name", authorName},
		{"user.email", authorEmail},
		{"init.defaultBranch", DefaultBranch},
		{"advice.detachedHead", "false"},
		{"commit.gpgSign", "false"},
		{"tag.gpgSign", "false"},
	}
	env = append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
		fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(config)),
	)
	for i, kv := range config {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// redactArgs hides passwords in arguments that are URLs with user info.
func redactArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if !strings.Contains(a, "@") {
			continue
		}
		if u, err := url.Parse(a); err == nil && u.User != nil {
			out[i] = u.Redacted()
		}
	}
	return out
}

// repoNamePattern accepts slash-separated names whose elements start with a
// letter or digit and contain only letters, digits, '.', '_' and '-'. This
// keeps names free of "..", hidden directories, option-like arguments and
// characters that would need escaping in a URL.
var repoNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$`)

// repoDir validates name and returns the path of its bare repository.
func (s *Server) repoDir(name string) (string, error) {
	if !repoNamePattern.MatchString(name) {
		return "", fmt.Errorf("invalid repository name %q: want slash-separated elements of letters, digits, '.', '_' and '-', each starting with a letter or digit", name)
	}
	for _, elem := range strings.Split(name, "/") {
		if strings.HasSuffix(elem, ".git") {
			return "", fmt.Errorf("invalid repository name %q: no element may end in .git (the suffix is added)", name)
		}
	}
	return filepath.Join(s.root, filepath.FromSlash(name)+".git"), nil
}

// existingRepoDir is repoDir plus a check that the repository exists.
func (s *Server) existingRepoDir(name string) (string, error) {
	dir, err := s.repoDir(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return "", fmt.Errorf("repository %q: %w", name, os.ErrNotExist)
	}
	return dir, nil
}

// RepoDir returns the path of the bare repository called name below
// [Server.Root], for running git commands on it directly with [Git]. It
// does not check that the repository exists.
func (s *Server) RepoDir(name string) (string, error) {
	dir, err := s.repoDir(name)
	if err != nil {
		return "", fmt.Errorf("gitserver: %w", err)
	}
	return dir, nil
}

// CreateRepo creates the bare repository <Root>/<name>.git with HEAD on
// main and pushes over HTTP enabled (http.receivepack), and commits the
// whole directory tree of srcDir as its first commit on main, returning that
// commit's SHA. Every file below srcDir is committed, including ones a
// .gitignore would exclude, except .git directories (a nested repository is
// recorded as a gitlink, as git add does). An empty
// srcDir makes the first commit an empty tree.
//
// name may contain slashes ("org/app"); each element must start with a
// letter or digit and must not end in ".git". It is an error, matching
// fs.ErrExist, if the repository already exists.
func (s *Server) CreateRepo(name, srcDir string) (string, error) {
	commit, err := s.createRepo(name, srcDir)
	if err != nil {
		return "", fmt.Errorf("gitserver: create repository %q: %w", name, err)
	}
	return commit, nil
}

func (s *Server) createRepo(name, srcDir string) (string, error) {
	dir, err := s.repoDir(name)
	if err != nil {
		return "", err
	}
	if srcDir != "" {
		if srcDir, err = filepath.Abs(srcDir); err != nil {
			return "", err
		}
		if fi, err := os.Stat(srcDir); err != nil {
			return "", fmt.Errorf("source: %w", err)
		} else if !fi.IsDir() {
			return "", fmt.Errorf("source %s is not a directory", srcDir)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	// Mkdir fails if the directory exists, which makes concurrent
	// CreateRepo calls for one name safe: exactly one of them wins.
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	commit, err := initRepo(dir, srcDir)
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return commit, nil
}

// initRepo initializes the bare repository dir and commits srcDir to main
// without a working copy: the tree is staged into a throwaway index with
// srcDir as work tree.
func initRepo(dir, srcDir string) (string, error) {
	if _, err := Git("", "init", "--quiet", "--bare", "--initial-branch="+DefaultBranch, dir); err != nil {
		return "", err
	}
	for _, kv := range repoConfig {
		if _, err := Git(dir, "config", kv[0], kv[1]); err != nil {
			return "", err
		}
	}

	tmp, err := os.MkdirTemp("", "navarch-gitserver-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// A missing index file is an empty index, for which write-tree yields
	// the empty tree.
	indexEnv := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if srcDir != "" {
		if _, err := runGit(srcDir, indexEnv, "--git-dir="+dir, "--work-tree="+srcDir, "add", "--all", "--force"); err != nil {
			return "", err
		}
	}
	tree, err := runGit(dir, indexEnv, "write-tree")
	if err != nil {
		return "", err
	}
	commit, err := Git(dir, "commit-tree", "-m", "Initial commit", tree)
	if err != nil {
		return "", err
	}
	if _, err := Git(dir, "update-ref", "refs/heads/"+DefaultBranch, commit, ""); err != nil {
		return "", err
	}
	return commit, nil
}

// Update commits a change to the repository called name and returns the SHA
// of the resulting commit.
//
// It clones the repository into a scratch directory, calls edit with the
// path of the working tree (checked out on main), stages everything like
// `git add --all`, commits with message and pushes. edit may write, modify
// and delete files, and may also run git itself through [Git] — create
// commits, branches or tags, or check out another branch. After edit
// returns:
//   - if the working tree has changes, they are committed on the checked-out
//     branch; if it has none and edit made no commit, an empty commit is made,
//     so Update always produces a new commit unless edit committed itself;
//   - all local branches and tags are pushed atomically, so the update
//     fails, rather than overwrites, if a branch moved meanwhile;
//   - the returned SHA is that of HEAD, which must be on a branch.
//
// The scratch clone is removed when Update returns. edit must not call
// methods of s that modify the same branch. An empty message defaults to
// "Update".
func (s *Server) Update(name, message string, edit func(workdir string) error) (string, error) {
	commit, err := s.update(name, message, edit)
	if err != nil {
		return "", fmt.Errorf("gitserver: update repository %q: %w", name, err)
	}
	return commit, nil
}

func (s *Server) update(name, message string, edit func(workdir string) error) (string, error) {
	dir, err := s.existingRepoDir(name)
	if err != nil {
		return "", err
	}
	if message == "" {
		message = "Update"
	}
	tmp, err := os.MkdirTemp("", "navarch-gitserver-work-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	work := filepath.Join(tmp, "work")
	if _, err := Git("", "clone", "--quiet", dir, work); err != nil {
		return "", err
	}
	// Empty for a repository without commits.
	before, _ := Git(work, "rev-parse", "--verify", "--quiet", "HEAD")

	if edit != nil {
		if err := edit(work); err != nil {
			return "", fmt.Errorf("edit: %w", err)
		}
	}

	if _, err := Git(work, "symbolic-ref", "--quiet", "HEAD"); err != nil {
		return "", errors.New("edit left HEAD detached; check out a branch")
	}
	if _, err := Git(work, "add", "--all"); err != nil {
		return "", err
	}
	status, err := Git(work, "status", "--porcelain")
	if err != nil {
		return "", err
	}
	after, _ := Git(work, "rev-parse", "--verify", "--quiet", "HEAD")
	if status != "" || after == before {
		if _, err := Git(work, "commit", "--quiet", "--allow-empty", "--message", message); err != nil {
			return "", err
		}
	}
	if _, err := Git(work, "push", "--quiet", "--atomic", "origin",
		"refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"); err != nil {
		return "", err
	}
	return Git(work, "rev-parse", "HEAD")
}

// Branch creates branch in the repository called name, pointing at the
// commit fromRef (a branch, tag or SHA) resolves to, and returns that
// commit's SHA. It fails if the branch exists.
func (s *Server) Branch(name, branch, fromRef string) (string, error) {
	commit, err := s.createRef(name, "refs/heads/", branch, fromRef, "")
	if err != nil {
		return "", fmt.Errorf("gitserver: create branch %q in %q: %w", branch, name, err)
	}
	return commit, nil
}

// Tag creates tag in the repository called name, pointing at the commit ref
// (a branch, tag or SHA) resolves to, and returns that commit's SHA. With an
// empty message the tag is lightweight; otherwise it is an annotated tag
// object carrying message, and ls-remote lists it twice: as the tag object
// and peeled ("^{}") to the commit. It fails if the tag exists.
func (s *Server) Tag(name, tag, ref, message string) (string, error) {
	commit, err := s.createRef(name, "refs/tags/", tag, ref, message)
	if err != nil {
		return "", fmt.Errorf("gitserver: create tag %q in %q: %w", tag, name, err)
	}
	return commit, nil
}

func (s *Server) createRef(name, prefix, short, target, tagMessage string) (string, error) {
	dir, err := s.existingRepoDir(name)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(short, "-") {
		return "", errors.New("invalid ref name: must not start with '-'")
	}
	if _, err := Git(dir, "check-ref-format", prefix+short); err != nil {
		return "", errors.New("invalid ref name")
	}
	commit, err := resolveCommit(dir, target)
	if err != nil {
		return "", err
	}
	if prefix == "refs/tags/" && tagMessage != "" {
		_, err = Git(dir, "tag", "--annotate", "--message", tagMessage, short, commit)
	} else {
		// The empty old value makes update-ref fail if the ref exists.
		_, err = Git(dir, "update-ref", prefix+short, commit, "")
	}
	if err != nil {
		return "", err
	}
	return commit, nil
}

// Resolve returns the SHA of the commit ref (a branch, tag, SHA or any other
// revision git understands) resolves to in the repository called name.
func (s *Server) Resolve(name, ref string) (string, error) {
	dir, err := s.existingRepoDir(name)
	if err == nil {
		var commit string
		if commit, err = resolveCommit(dir, ref); err == nil {
			return commit, nil
		}
	}
	return "", fmt.Errorf("gitserver: resolve %q in %q: %w", ref, name, err)
}

func resolveCommit(dir, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("invalid revision %q", ref)
	}
	commit, err := Git(dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("revision %q does not name a commit", ref)
	}
	return commit, nil
}

// Remote returns a handle on the repositories of a server that another process runs, serving
// root at url (the values of its [Server.Root] and [Server.URL]). Its repository methods —
// CreateRepo, Update, Branch, Tag, Resolve, RepoURL — work on the files under root directly,
// so `navarch demo` can publish to the dev fleet's server. Wait and Close do nothing.
func Remote(root, url string) *Server {
	done := make(chan struct{})
	close(done)
	s := &Server{root: root, url: url, serveDone: done}
	s.closeOnce.Do(func() {})
	return s
}
