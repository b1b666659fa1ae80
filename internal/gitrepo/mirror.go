package gitrepo

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// accessRecheck is how long a successful contact with the server vouches
// for a set of credentials. Within it, a snapshot of a commit SHA already
// cached is served without asking the server again; after it, the server is
// asked again, so revoked credentials stop working.
const accessRecheck = 5 * time.Minute

// repo is the local state of one repository URL: a bare mirror on disk
// (fetched incrementally, never checked out), the lock serialising changes
// to it, a cat-file process for reading blobs, and which credentials the
// server accepted recently.
type repo struct {
	url string // canonical, without user info
	dir string // bare mirror

	// lock serialises operations that change the mirror. It is a channel so
	// that waiting for it honours the caller's context.
	lock  chan struct{}
	ready bool // the mirror exists and was cleaned up; guarded by lock

	cat *catFile

	accessMu sync.Mutex
	access   map[string]time.Time // auth.id → last time the server accepted it
}

func newRepo(r *Reader, canonical string) *repo {
	dir := filepath.Join(r.mirrorsDir, mirrorName(canonical))
	return &repo{
		url:    canonical,
		dir:    dir,
		lock:   make(chan struct{}, 1),
		cat:    &catFile{gitBinary: r.gitBinary, gitDir: dir, env: commandEnv(r.env, nil), home: r.home},
		access: map[string]time.Time{},
	}
}

// mirrorName is the directory name of a URL's mirror: readable, unique and
// safe as a file name.
func mirrorName(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	readable := canonical
	if _, rest, ok := strings.Cut(readable, "://"); ok {
		readable = rest
	}
	readable = strings.Map(func(c rune) rune {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' {
			return c
		}
		return '_'
	}, strings.TrimSuffix(readable, ".git"))
	if len(readable) > 60 {
		readable = readable[:60]
	}
	return fmt.Sprintf("%s-%x.git", readable, sum[:8])
}

func (rp *repo) acquire(ctx context.Context) error {
	select {
	case rp.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rp *repo) release() { <-rp.lock }

// grantAccess records that the server just accepted the credentials id.
func (rp *repo) grantAccess(id string) {
	rp.accessMu.Lock()
	rp.access[id] = time.Now()
	rp.accessMu.Unlock()
}

// hasAccess reports whether the server accepted the credentials id within
// accessRecheck.
func (rp *repo) hasAccess(id string) bool {
	rp.accessMu.Lock()
	defer rp.accessMu.Unlock()
	t, ok := rp.access[id]
	return ok && time.Since(t) < accessRecheck
}

// prepare creates the mirror if needed. On first use by this process of a
// mirror left by an earlier one, it removes lock files a killed git may have
// left behind: the cache directory belongs to one process, so no live git
// holds them. The caller holds rp.lock.
func (r *Reader) prepare(ctx context.Context, rp *repo) error {
	if rp.ready {
		return nil
	}
	if _, err := os.Stat(filepath.Join(rp.dir, "HEAD")); err == nil {
		if err := removeStaleLocks(rp.dir); err != nil {
			return fmt.Errorf("clean up mirror: %w", err)
		}
		rp.ready = true
		return nil
	}
	// Initialise aside and rename, so that a crash never leaves a
	// half-made mirror in place.
	tmp, err := os.MkdirTemp(r.mirrorsDir, ".init-")
	if err != nil {
		return fmt.Errorf("create mirror: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := r.run(ctx, "", nil, "init", "--quiet", "--bare", tmp); err != nil {
		return fmt.Errorf("create mirror: %w", err)
	}
	if err := os.Rename(tmp, rp.dir); err != nil {
		return fmt.Errorf("create mirror: %w", err)
	}
	rp.ready = true
	return nil
}

// removeStaleLocks deletes *.lock files in the places git puts them for
// the operations this package runs: the repository's top level and refs/.
func removeStaleLocks(dir string) error {
	top, err := filepath.Glob(filepath.Join(dir, "*.lock"))
	if err != nil {
		return err
	}
	for _, p := range top {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".lock") {
			return os.Remove(p)
		}
		return nil
	})
}

// lookupCommit resolves rev (a full or abbreviated SHA) to a commit in the
// mirror. found is false, without error, when the mirror has no such
// commit or the abbreviation is ambiguous.
func (r *Reader) lookupCommit(ctx context.Context, rp *repo, rev string) (commit string, found bool, err error) {
	out, err := r.run(ctx, rp.dir, nil, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		var ce *commandError
		var exit *exec.ExitError
		if errors.As(err, &ce) && errors.As(ce.Err, &exit) && exit.ExitCode() == 1 {
			return "", false, nil
		}
		return "", false, fmt.Errorf("look up %s: %w", rev, err)
	}
	return strings.TrimSpace(string(out)), true, nil
}

// fetch runs git fetch from the repository's URL with refspecs.
func (r *Reader) fetch(ctx context.Context, rp *repo, a *auth, prune bool, refspecs ...string) error {
	r.stats.fetches.Add(1)
	args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules"}
	if prune {
		args = append(args, "--prune")
	}
	args = append(args, rp.url)
	args = append(args, refspecs...)
	_, err := r.run(ctx, rp.dir, a, args...)
	return classify(err)
}

// allBranchesAndTags are the refspecs that bring the mirror up to date with
// every branch and tag of the server.
var allBranchesAndTags = []string{"+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"}

// target is a resolved revision.
type target struct {
	commit string
	// ref is the remote ref the commit was found at, which is what to
	// fetch; empty when the revision was a SHA.
	ref string
	// fetched is set once the mirror is known to hold the commit.
	fetched bool
}

// ensureCommit makes sure the mirror holds t.commit, fetching as little as
// it can: nothing if the commit is there, else the ref it was resolved
// from, else the commit by SHA, else all branches and tags (for servers
// that refuse requests for unadvertised objects).
func (r *Reader) ensureCommit(ctx context.Context, rp *repo, a *auth, t target) error {
	if err := rp.acquire(ctx); err != nil {
		return err
	}
	defer rp.release()
	if err := r.prepare(ctx, rp); err != nil {
		return err
	}
	if _, found, err := r.lookupCommit(ctx, rp, t.commit); err != nil || found {
		return err
	}

	type attempt struct {
		refspecs []string
		prune    bool
	}
	attempts := []attempt{
		{refspecs: []string{"+" + t.commit + ":refs/navarch/commits/" + t.commit}},
		{refspecs: allBranchesAndTags, prune: true},
	}
	if validRefName(t.ref) {
		dst := t.ref
		if dst == "HEAD" {
			dst = "refs/navarch/HEAD"
		}
		attempts = slices.Insert(attempts, 0, attempt{refspecs: []string{"+" + t.ref + ":" + dst}})
	}
	var lastErr error
	for _, at := range attempts {
		if err := r.fetch(ctx, rp, a, at.prune, at.refspecs...); err != nil {
			if isRemoteFailure(err) {
				return err
			}
			// The server lacks what this attempt asked for (a ref
			// deleted meanwhile, an unadvertised object): try the next.
			lastErr = err
			continue
		}
		if _, found, err := r.lookupCommit(ctx, rp, t.commit); err != nil || found {
			return err
		}
	}
	if lastErr != nil {
		return fmt.Errorf("%w: commit %s is not available from the server: %w", ErrRevisionNotFound, t.commit, lastErr)
	}
	return fmt.Errorf("%w: commit %s is not available from the server", ErrRevisionNotFound, t.commit)
}

// resolveAbbreviated resolves an abbreviated SHA, which only a repository
// with the objects can do: it looks in the mirror, and if the commit is not
// there fetches all branches and tags and looks again.
func (r *Reader) resolveAbbreviated(ctx context.Context, rp *repo, a *auth, short string) (string, error) {
	if err := rp.acquire(ctx); err != nil {
		return "", err
	}
	defer rp.release()
	if err := r.prepare(ctx, rp); err != nil {
		return "", err
	}
	if commit, found, err := r.lookupCommit(ctx, rp, short); err != nil || found {
		return commit, err
	}
	if err := r.fetch(ctx, rp, a, true, allBranchesAndTags...); err != nil {
		return "", err
	}
	commit, found, err := r.lookupCommit(ctx, rp, short)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%w: no branch, tag or commit matches %q (an abbreviated SHA must be unambiguous)", ErrRevisionNotFound, short)
	}
	return commit, nil
}
