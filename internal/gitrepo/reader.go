// Package gitrepo reads Git repositories over HTTP(S) and SSH: it resolves
// revisions to commits and exposes the tree of a commit as an immutable,
// cached [Snapshot], without ever checking out a working copy.
//
// It is the one Git client of navarch: the ApplicationSet git generators use
// it to list directories and read files, and the fleet sync engine to read
// the manifests it renders. A process makes one [Reader] and shares it:
//
//	r, err := gitrepo.New(gitrepo.Options{CacheDir: dir})
//	…
//	defer r.Close()
//	snap, err := r.Snapshot(ctx, "https://git.example.com/platform/apps.git", "main", creds)
//	…
//	for _, dir := range snap.Dirs() { … }
//	data, err := snap.ReadFile("apps/guestbook/config.json")
//	err = fs.WalkDir(snap.FS(), "apps", walkFn)
//
// # Repository URLs
//
// A repository URL takes one of these forms:
//
//	https://host[:port]/path             (or http://)
//	ssh://[user@]host[:port]/path        (user "git" if none is given)
//	user@host:path                       (scp-like; the user is required)
//	user@[host:port]:path                (scp-like with a port)
//
// [IsSSH] tells the SSH forms apart and [ParseSSHURL] parses them. As git
// does, an scp-like path is relative to the user's home directory on the
// server and an ssh:// path absolute; Git hosts treat both alike. Scheme and
// host are compared in lower case; an SSH URL keeps its user name, which is
// no secret, in errors and cache keys, and port 22 is left out. User info
// in an http(s) URL, and a password in an SSH URL, are refused with
// [ErrInvalidURL].
//
// # How it works
//
// The package drives the git CLI (2.31 or newer), and for SSH URLs the
// OpenSSH client. Revisions are resolved with `git ls-remote`, which asks
// the server for the matching refs only.
// Commits are fetched into a bare mirror per repository URL under
// [Options.CacheDir], incrementally and only when the mirror lacks the
// commit. Trees are listed with `git ls-tree` and files read with a
// long-lived `git cat-file --batch`, from the mirror.
//
// Work is shared: concurrent calls for the same repository and revision run
// one ls-remote and one fetch; operations changing a mirror are serialised
// per repository while different repositories proceed in parallel;
// snapshots are cached by (URL, commit) and file contents by object, in
// memory, within the bounds set in [Options]. A snapshot by branch or tag
// costs one ls-remote round trip to the server; one by commit SHA is
// answered from memory once cached. Callers reading one revision many times
// (one per Application of a repository) can Resolve it once and take
// snapshots by the commit.
//
// # Credentials
//
// [Credentials] are passed per call, typically read by the caller from a
// Kubernetes Secret: a username and password (or token) for http(s) URLs, a
// private key for SSH URLs; the wrong kind for a URL is an error. A password
// reaches git only as an Authorization header in the environment of the git
// child process, scoped to the repository's origin: never in process
// arguments, files or error messages. A repository URL with user info is
// refused with [ErrInvalidURL]. Git runs with a private HOME and without
// system or global configuration, so no credential helper, .netrc or user
// setting applies.
//
// Over SSH, git runs the system's ssh with no configuration file, no agent
// and only the caller's key, in batch mode (it never prompts), and with
// strict host key checking against [Options.KnownHosts] alone: a host
// missing from them, or presenting another key, fails with [ErrHostKey]
// naming the host; it is never trusted on first use. ssh reads keys and
// known hosts only from files, so SSH keys do touch the disk, briefly: for
// each git run the key and the known hosts are written to files readable
// by this user only (0600), in a new private (0700) directory under
// os.TempDir, removed as soon as git exits. The key is never in process
// arguments, the environment, error messages or the cache directory. The
// OpenSSH client needs a passwd entry for the user the process runs as.
//
// Every call asks the server at least once with the caller's credentials
// before cached data is returned, so a tree cached for one caller is only
// served to another whom the server lets read the repository. The one
// exception is a snapshot by full commit SHA, served from cache to
// credentials the server accepted for that repository within the last few
// minutes.
//
// # Errors
//
// Errors of Reader methods are [*Error] values naming the operation, the
// URL (without password) and the revision, and wrap [ErrUnreachable],
// [ErrUnauthorized], [ErrRepositoryNotFound], [ErrRevisionNotFound],
// [ErrHostKey] or [ErrInvalidURL] where the cause was recognised, or the
// context's error. A failure is always an error, never an empty snapshot.
// Snapshot file reads fail with *fs.PathError, wrapping fs.ErrNotExist for
// a missing path.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// Defaults for [Options].
const (
	DefaultMaxCachedSnapshots = 256
	DefaultMaxCachedFileBytes = 64 << 20
)

// Options configures a [Reader].
type Options struct {
	// CacheDir holds the repository mirrors and survives restarts, so a
	// restarted process fetches only what changed. It must not be shared
	// by processes running at the same time. Empty means a new temporary
	// directory, removed by [Reader.Close].
	CacheDir string

	// GitBinary is the git executable, looked up in PATH if it has no
	// slash. Empty means "git".
	GitBinary string

	// SSHBinary is the OpenSSH client git runs for SSH URLs, looked up in
	// PATH (when an SSH URL is first read, so that a process reading only
	// http(s) URLs needs none) if it has no slash. Empty means "ssh".
	SSHBinary string

	// KnownHosts returns the known hosts, in the format of OpenSSH's
	// known_hosts file, that SSH servers' host keys are checked against.
	// It is called for every git run over SSH, so it should read from a
	// cache. Nil, like empty content, trusts no host: every SSH URL then
	// fails with ErrHostKey.
	KnownHosts func(ctx context.Context) ([]byte, error)

	// KnownHostsSource says where KnownHosts reads from, for errors:
	// "ConfigMap navarch-ssh-known-hosts" makes "host key of
	// git.example.com:22 is not in the known hosts (ConfigMap
	// navarch-ssh-known-hosts)". Empty leaves it out.
	KnownHostsSource string

	// MaxCachedSnapshots bounds how many snapshots are kept in memory,
	// least recently used first out. Each costs memory proportional to
	// the number of paths in its tree. Zero means
	// DefaultMaxCachedSnapshots.
	MaxCachedSnapshots int

	// MaxCachedFileBytes bounds the memory holding file contents read
	// from snapshots, shared by all snapshots. Zero means
	// DefaultMaxCachedFileBytes.
	MaxCachedFileBytes int64
}

// Reader resolves revisions and reads snapshots of Git repositories. It is
// safe for concurrent use; a process normally has one.
type Reader struct {
	gitBinary   string
	sshBinary   string
	cacheDir    string
	ownCacheDir bool // created by New, removed by Close
	home        string
	mirrorsDir  string
	env         []string

	knownHosts       func(ctx context.Context) ([]byte, error)
	knownHostsSource string

	mu     sync.Mutex
	repos  map[string]*repo // by canonical URL
	closed bool

	snapshots     *lru[snapshotKey, *snapshot]
	blobs         *lru[blobKey, []byte]
	remoteFlights flightGroup[remoteRefs]
	buildFlights  flightGroup[*snapshot]

	stats struct {
		remoteLookups, fetches, snapshotBuilds, snapshotHits atomic.Int64
	}
}

type snapshotKey struct {
	repo   *repo
	commit string
}

type blobKey struct {
	repo *repo
	oid  string
}

// Stats counts what a [Reader] did since it was made, for metrics and
// tests.
type Stats struct {
	// RemoteLookups is the number of git ls-remote runs.
	RemoteLookups int64
	// Fetches is the number of git fetch runs.
	Fetches int64
	// SnapshotBuilds is the number of trees listed to make a snapshot.
	SnapshotBuilds int64
	// SnapshotHits is the number of Snapshot calls answered from the
	// snapshot cache.
	SnapshotHits int64
}

// New makes a Reader. It checks that git is installed and recent enough
// and creates the cache directory.
func New(opts Options) (*Reader, error) {
	r := &Reader{
		gitBinary:        opts.GitBinary,
		sshBinary:        opts.SSHBinary,
		cacheDir:         opts.CacheDir,
		knownHosts:       opts.KnownHosts,
		knownHostsSource: opts.KnownHostsSource,
		repos:            map[string]*repo{},
	}
	if r.gitBinary == "" {
		r.gitBinary = "git"
	}
	if r.sshBinary == "" {
		r.sshBinary = "ssh"
	}
	path, err := exec.LookPath(r.gitBinary)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: git not found (install git 2.31 or newer): %w", err)
	}
	r.gitBinary = path

	if r.cacheDir == "" {
		if r.cacheDir, err = os.MkdirTemp("", "navarch-gitrepo-"); err != nil {
			return nil, fmt.Errorf("gitrepo: create cache directory: %w", err)
		}
		r.ownCacheDir = true
	} else if r.cacheDir, err = filepath.Abs(r.cacheDir); err != nil {
		return nil, fmt.Errorf("gitrepo: cache directory: %w", err)
	}
	r.home = filepath.Join(r.cacheDir, "home")
	r.mirrorsDir = filepath.Join(r.cacheDir, "mirrors")
	for _, dir := range []string{r.home, r.mirrorsDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, errors.Join(fmt.Errorf("gitrepo: create cache directory: %w", err), r.removeOwnCacheDir())
		}
	}
	r.env = baseEnv(r.home)
	if err := r.checkGitVersion(context.Background()); err != nil {
		return nil, errors.Join(fmt.Errorf("gitrepo: %w", err), r.removeOwnCacheDir())
	}

	maxSnapshots := int64(opts.MaxCachedSnapshots)
	if maxSnapshots <= 0 {
		maxSnapshots = DefaultMaxCachedSnapshots
	}
	maxFileBytes := opts.MaxCachedFileBytes
	if maxFileBytes <= 0 {
		maxFileBytes = DefaultMaxCachedFileBytes
	}
	r.snapshots = newLRU[snapshotKey, *snapshot](maxSnapshots)
	r.blobs = newLRU[blobKey, []byte](maxFileBytes)
	return r, nil
}

// Close stops the background git processes and, if the cache directory was
// a temporary one made by New, removes it. Snapshots obtained earlier can no
// longer read files not yet read. Close is safe to call more than once.
func (r *Reader) Close() error {
	r.mu.Lock()
	already := r.closed
	r.closed = true
	repos := make([]*repo, 0, len(r.repos))
	for _, rp := range r.repos {
		repos = append(repos, rp)
	}
	r.mu.Unlock()
	if already {
		return nil
	}
	for _, rp := range repos {
		rp.cat.close()
	}
	return r.removeOwnCacheDir()
}

func (r *Reader) removeOwnCacheDir() error {
	if !r.ownCacheDir {
		return nil
	}
	if err := os.RemoveAll(r.cacheDir); err != nil {
		return fmt.Errorf("gitrepo: remove cache directory: %w", err)
	}
	return nil
}

// Stats returns the counters of r.
func (r *Reader) Stats() Stats {
	return Stats{
		RemoteLookups:  r.stats.remoteLookups.Load(),
		Fetches:        r.stats.fetches.Load(),
		SnapshotBuilds: r.stats.snapshotBuilds.Load(),
		SnapshotHits:   r.stats.snapshotHits.Load(),
	}
}

// Resolve returns the full SHA of the commit revision names in the
// repository at repoURL. revision is a branch, a tag (annotated tags are
// peeled to their commit), a full ref name (refs/pull/1/head), a full or
// abbreviated commit SHA, or empty or "HEAD" for the default branch. Names
// resolve as git resolves them, tags before branches. creds may be nil.
//
// Names are resolved with git ls-remote alone. A SHA is checked to exist in
// the repository, which may fetch it; an abbreviated SHA can only be
// resolved by fetching all branches and tags.
func (r *Reader) Resolve(ctx context.Context, repoURL, revision string, creds *Credentials) (string, error) {
	rp, a, err := r.open(repoURL, creds)
	if err != nil {
		return "", &Error{Op: "resolve", URL: RedactURL(repoURL), Revision: revision, Err: err}
	}
	t, err := r.resolve(ctx, rp, a, revision)
	if err != nil {
		return "", &Error{Op: "resolve", URL: rp.url, Revision: revision, Err: err}
	}
	return t.commit, nil
}

// Snapshot returns the tree of the commit revision resolves to (see
// [Reader.Resolve]) in the repository at repoURL, fetching it into the local
// mirror if needed. Snapshots are cached by repository and commit.
func (r *Reader) Snapshot(ctx context.Context, repoURL, revision string, creds *Credentials) (Snapshot, error) {
	rp, a, err := r.open(repoURL, creds)
	if err != nil {
		return nil, &Error{Op: "snapshot", URL: RedactURL(repoURL), Revision: revision, Err: err}
	}
	s, err := r.snapshot(ctx, rp, a, revision)
	if err != nil {
		return nil, &Error{Op: "snapshot", URL: rp.url, Revision: revision, Err: err}
	}
	return s, nil
}

func (r *Reader) snapshot(ctx context.Context, rp *repo, a *auth, revision string) (*snapshot, error) {
	// A commit SHA names the same tree forever: no need to ask the
	// server, if it recently let these credentials in.
	if isFullSHA(revision) && rp.hasAccess(a.id) {
		if s, ok := r.snapshots.get(snapshotKey{rp, strings.ToLower(revision)}); ok {
			r.stats.snapshotHits.Add(1)
			return s, nil
		}
	}
	t, err := r.resolve(ctx, rp, a, revision)
	if err != nil {
		return nil, err
	}
	key := snapshotKey{rp, t.commit}
	if s, ok := r.snapshots.get(key); ok {
		r.stats.snapshotHits.Add(1)
		return s, nil
	}
	return r.buildFlights.do(ctx, rp.url+"\x00"+t.commit, func(ctx context.Context) (*snapshot, error) {
		// A flight that ended just before this one started may have
		// cached it.
		if s, ok := r.snapshots.get(key); ok {
			return s, nil
		}
		if !t.fetched {
			if err := r.ensureCommit(ctx, rp, a, t); err != nil {
				return nil, err
			}
		}
		r.stats.snapshotBuilds.Add(1)
		s, err := r.buildSnapshot(ctx, rp, t.commit)
		if err != nil {
			return nil, err
		}
		r.snapshots.add(key, s, 1)
		return s, nil
	})
}

// open parses repoURL and returns its repository state and the call's
// authentication.
func (r *Reader) open(repoURL string, creds *Credentials) (*repo, *auth, error) {
	u, err := parseRepoURL(repoURL)
	if err != nil {
		return nil, nil, err
	}
	a, err := newAuth(u, credentials(creds))
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, errClosed
	}
	rp := r.repos[u.canonical]
	if rp == nil {
		rp = newRepo(r, u.canonical)
		r.repos[u.canonical] = rp
	}
	return rp, a, nil
}

// resolve turns revision into a commit (see Resolve).
func (r *Reader) resolve(ctx context.Context, rp *repo, a *auth, revision string) (target, error) {
	if !validRevision(revision) {
		return target{}, fmt.Errorf("%w: %q is not a valid branch, tag or commit name", ErrRevisionNotFound, revision)
	}
	// Always ask the server: it checks the credentials, and names move.
	refs, err := r.listRemote(ctx, rp, a, revision)
	if err != nil {
		return target{}, err
	}
	if isFullSHA(revision) {
		t := target{commit: strings.ToLower(revision)}
		if err := r.ensureCommit(ctx, rp, a, t); err != nil {
			return target{}, err
		}
		t.fetched = true
		return t, nil
	}
	if ref, commit, ok := refs.match(revision); ok {
		return target{commit: commit, ref: ref}, nil
	}
	if isShortSHA(revision) {
		commit, err := r.resolveAbbreviated(ctx, rp, a, strings.ToLower(revision))
		if err != nil {
			return target{}, err
		}
		return target{commit: commit, fetched: true}, nil
	}
	if revision == "" || revision == "HEAD" {
		return target{}, fmt.Errorf("%w: the repository has no HEAD (is it empty?)", ErrRevisionNotFound)
	}
	return target{}, fmt.Errorf("%w: no branch, tag or commit %q", ErrRevisionNotFound, revision)
}

// readBlob returns the content of a blob, cached. Callers must not modify
// the returned slice.
func (r *Reader) readBlob(rp *repo, oid string) ([]byte, error) {
	key := blobKey{rp, oid}
	if data, ok := r.blobs.get(key); ok {
		return data, nil
	}
	data, err := rp.cat.read(oid)
	if err != nil {
		if errors.Is(err, errClosed) {
			return nil, fmt.Errorf("gitrepo: %w", err)
		}
		return nil, err
	}
	r.blobs.add(key, data, int64(len(data)))
	return data, nil
}
