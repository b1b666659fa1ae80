package gitrepo_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/navarch-io/navarch/internal/gitrepo"
	"github.com/navarch-io/navarch/internal/gitserver"
)

// testTimeout bounds every call to the Reader in these tests.
const testTimeout = 60 * time.Second

// startServer starts a Git server on a fresh root and stops it when the
// test ends.
func startServer(t testing.TB, opts gitserver.Options) *gitserver.Server {
	t.Helper()
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	s, err := gitserver.Start(opts)
	if err != nil {
		t.Fatalf("start git server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close git server: %v", err)
		}
	})
	return s
}

// newReader makes a Reader caching in a fresh directory, closed when the
// test ends.
func newReader(t testing.TB) *gitrepo.Reader {
	t.Helper()
	return newReaderIn(t, t.TempDir())
}

func newReaderIn(t testing.TB, cacheDir string) *gitrepo.Reader {
	t.Helper()
	r, err := gitrepo.New(gitrepo.Options{CacheDir: cacheDir})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// writeTree creates the files (slash-separated path → content) in a new
// directory and returns it. Content "-> target" makes a symbolic link.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// createRepo creates a repository whose first commit holds files.
func createRepo(t testing.TB, s *gitserver.Server, name string, files map[string]string) (url, commit string) {
	t.Helper()
	commit, err := s.CreateRepo(name, writeTree(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return s.RepoURL(name), commit
}

// addFiles commits files to main and returns the new commit.
func addFiles(t testing.TB, s *gitserver.Server, name string, files map[string]string) string {
	t.Helper()
	commit, err := s.Update(name, "add files", func(work string) error {
		for p, content := range files {
			full := filepath.Join(work, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return commit
}

var appsTree = map[string]string{
	"README.md":                               "# apps\n",
	"README.link":                             "-> README.md",
	"apps/a/config.json":                      `{"name":"a"}`,
	"apps/a/deployment.yaml":                  "kind: Deployment\n",
	"apps/b/base/kustomization.yaml":          "resources: [deployment.yaml]\n",
	"apps/b/base/deployment.yaml":             "kind: Deployment\n",
	"apps/b/overlays/prod/kustomization.yaml": "resources: [../../base]\n",
	"apps/b/overlays/prod/base":               "-> ../../base",
	"scripts/render.sh":                       "#!/bin/sh\n",
}

func TestSnapshotListsTreeAndReadsFiles(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	url, commit := createRepo(t, s, "apps", appsTree)
	r := newReader(t)

	snap, err := r.Snapshot(testContext(t), url, "main", nil)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if snap.Commit() != commit {
		t.Errorf("Commit() = %s, want %s", snap.Commit(), commit)
	}
	wantDirs := []string{"apps", "apps/a", "apps/b", "apps/b/base", "apps/b/overlays", "apps/b/overlays/prod", "scripts"}
	if got := snap.Dirs(); !slices.Equal(got, wantDirs) {
		t.Errorf("Dirs() = %q\nwant %q", got, wantDirs)
	}
	var wantFiles []string
	for p := range appsTree {
		wantFiles = append(wantFiles, p)
	}
	slices.Sort(wantFiles)
	if got := snap.Files(); !slices.Equal(got, wantFiles) {
		t.Errorf("Files() = %q\nwant %q", got, wantFiles)
	}

	t.Run("ReadFile", func(t *testing.T) {
		for _, tc := range []struct{ name, want string }{
			{"apps/a/config.json", `{"name":"a"}`},
			{"/apps/a/config.json", `{"name":"a"}`},
			{"README.link", "# apps\n"},
			{"apps/b/overlays/prod/base/kustomization.yaml", "resources: [deployment.yaml]\n"},
		} {
			got, err := snap.ReadFile(tc.name)
			if err != nil || string(got) != tc.want {
				t.Errorf("ReadFile(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
			}
		}
		// The caller owns the slice: changing it changes no later read.
		b, _ := snap.ReadFile("README.md")
		b[0] = 'X'
		if b, _ := snap.ReadFile("README.md"); string(b) != "# apps\n" {
			t.Errorf("ReadFile after modifying an earlier result = %q", b)
		}
		for _, missing := range []string{"nope.yaml", "apps/a/nope", "README.md/x"} {
			if _, err := snap.ReadFile(missing); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("ReadFile(%q) error = %v, want fs.ErrNotExist", missing, err)
			}
		}
		if _, err := snap.ReadFile("apps"); err == nil {
			t.Error("ReadFile of a directory succeeded")
		}
	})

	t.Run("FS", func(t *testing.T) {
		fsys := snap.FS()
		var walked []string
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != "." {
				walked = append(walked, p)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("WalkDir: %v", err)
		}
		want := slices.Concat(wantDirs, wantFiles)
		slices.Sort(want)
		slices.Sort(walked)
		if !slices.Equal(walked, want) {
			t.Errorf("WalkDir visited %q\nwant %q", walked, want)
		}
		if b, err := fs.ReadFile(fsys, "apps/b/base/deployment.yaml"); err != nil || string(b) != "kind: Deployment\n" {
			t.Errorf("fs.ReadFile = %q, %v", b, err)
		}
		if info, err := fs.Stat(fsys, "scripts/render.sh"); err != nil || info.Mode() != 0o755 {
			t.Errorf("fs.Stat(scripts/render.sh) = %v, %v; want mode 0755", info, err)
		}
		if target, err := fs.ReadLink(fsys, "apps/b/overlays/prod/base"); err != nil || target != "../../base" {
			t.Errorf("fs.ReadLink = %q, %v", target, err)
		}
		if _, err := fs.ReadFile(fsys, "/README.md"); err == nil {
			t.Error("fs.ReadFile accepted a rooted path")
		}
		if err := fstest.TestFS(fsys, wantFiles...); err != nil {
			t.Error(err)
		}
	})
}

func TestSymlinkOutsideTreeIsNotFollowed(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	url, _ := createRepo(t, s, "links", map[string]string{
		"app/values.yaml":  "a: 1\n",
		"app/escape.yaml":  "-> ../../../etc/passwd",
		"app/absolute":     "-> /etc/passwd",
		"app/loop":         "-> loop",
		"app/dangling.txt": "-> nowhere.txt",
	})
	snap, err := newReader(t).Snapshot(testContext(t), url, "", nil)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	for _, name := range []string{"app/escape.yaml", "app/absolute", "app/loop", "app/dangling.txt"} {
		if b, err := snap.ReadFile(name); err == nil {
			t.Errorf("ReadFile(%q) = %q, want an error", name, b)
		}
	}
	if _, err := snap.ReadFile("app/dangling.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a dangling link: %v, want fs.ErrNotExist", err)
	}
	// Listing still shows the links, as Git does.
	if !slices.Contains(snap.Files(), "app/escape.yaml") {
		t.Errorf("Files() = %q, want it to list app/escape.yaml", snap.Files())
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	url, first := createRepo(t, s, "apps", map[string]string{"a.yaml": "a"})
	must := func(_ string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Tag("apps", "light", first, ""))
	must(s.Tag("apps", "v1.0.0", first, "release 1.0.0"))
	must(s.Branch("apps", "release", first))
	second := addFiles(t, s, "apps", map[string]string{"b.yaml": "b"})
	third := addFiles(t, s, "apps", map[string]string{"c.yaml": "c"})
	r := newReader(t)

	tests := []struct {
		revision string
		want     string
	}{
		{"", third},
		{"HEAD", third},
		{"main", third},
		{"refs/heads/main", third},
		{"release", first},
		{"light", first},
		{"v1.0.0", first}, // annotated: peeled to the commit
		{"refs/tags/v1.0.0", first},
		{first, first},
		{strings.ToUpper(second), second},
		{second[:7], second}, // abbreviated, of an older commit
		{first[:12], first},
	}
	for _, tc := range tests {
		got, err := r.Resolve(testContext(t), url, tc.revision, nil)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %s, %v; want %s", tc.revision, got, err, tc.want)
		}
	}

	for _, rev := range []string{
		"nope",
		"refs/heads/nope",
		"0123456789abcdef0123456789abcdef01234567",
		"abcdef0",
		"-c",
		"main..release",
		"main:a.yaml",
	} {
		commit, err := r.Resolve(testContext(t), url, rev, nil)
		if !errors.Is(err, gitrepo.ErrRevisionNotFound) {
			t.Errorf("Resolve(%q) = %q, %v; want an error wrapping ErrRevisionNotFound", rev, commit, err)
			continue
		}
		if !strings.Contains(err.Error(), url) {
			t.Errorf("Resolve(%q) error %q does not name the repository", rev, err)
		}
		var e *gitrepo.Error
		if !errors.As(err, &e) || e.Revision != rev || e.URL != url {
			t.Errorf("Resolve(%q) error = %#v, want a *gitrepo.Error with URL and revision", rev, err)
		}
	}
}

func TestSnapshotSeesNewCommits(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	url, first := createRepo(t, s, "deploy", map[string]string{"apps/a/app.yaml": "a"})
	r := newReader(t)

	before, err := r.Snapshot(testContext(t), url, "main", nil)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	second := addFiles(t, s, "deploy", map[string]string{"apps/c/app.yaml": "c"})

	after, err := r.Snapshot(testContext(t), url, "main", nil)
	if err != nil {
		t.Fatalf("Snapshot after push: %v", err)
	}
	if after.Commit() != second {
		t.Errorf("after push: Commit() = %s, want the new commit %s", after.Commit(), second)
	}
	if want := []string{"apps", "apps/a", "apps/c"}; !slices.Equal(after.Dirs(), want) {
		t.Errorf("after push: Dirs() = %q, want %q", after.Dirs(), want)
	}

	old, err := r.Snapshot(testContext(t), url, first, nil)
	if err != nil {
		t.Fatalf("Snapshot of the old commit: %v", err)
	}
	for name, snap := range map[string]gitrepo.Snapshot{"earlier snapshot": before, "snapshot by old SHA": old} {
		if snap.Commit() != first {
			t.Errorf("%s: Commit() = %s, want %s", name, snap.Commit(), first)
		}
		if want := []string{"apps", "apps/a"}; !slices.Equal(snap.Dirs(), want) {
			t.Errorf("%s: Dirs() = %q, want %q", name, snap.Dirs(), want)
		}
		if _, err := snap.ReadFile("apps/c/app.yaml"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: ReadFile(apps/c/app.yaml) error = %v, want fs.ErrNotExist", name, err)
		}
	}
	if got := r.Stats().Fetches; got != 2 {
		t.Errorf("Fetches = %d, want 2 (one per new commit)", got)
	}
}

func TestSnapshotIsCachedByCommit(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	url, commit := createRepo(t, s, "apps", appsTree)
	r := newReader(t)
	ctx := testContext(t)

	first, err := r.Snapshot(ctx, url, "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Snapshot(ctx, url, "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	bySHA, err := r.Snapshot(ctx, url, commit, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first != second || first != bySHA {
		t.Error("Snapshot of one commit returned different snapshots")
	}
	st := r.Stats()
	if st.Fetches != 1 || st.SnapshotBuilds != 1 || st.SnapshotHits != 2 {
		t.Errorf("after three snapshots of one commit: %+v, want 1 fetch, 1 build, 2 hits", st)
	}
	// The second branch lookup asked the server for the branch; the
	// lookup by SHA did not need to.
	if st.RemoteLookups != 2 {
		t.Errorf("RemoteLookups = %d, want 2", st.RemoteLookups)
	}
}

func TestConcurrentSnapshotsShareOneFetch(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	url, commit := createRepo(t, s, "apps", appsTree)
	r := newReader(t)
	ctx := testContext(t)

	const callers = 8
	snaps := make([]gitrepo.Snapshot, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { snaps[i], errs[i] = r.Snapshot(ctx, url, "main", nil) })
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if snaps[i].Commit() != commit || !slices.Equal(snaps[i].Dirs(), snaps[0].Dirs()) {
			t.Errorf("caller %d got commit %s, dirs %q", i, snaps[i].Commit(), snaps[i].Dirs())
		}
	}
	if st := r.Stats(); st.Fetches != 1 || st.SnapshotBuilds != 1 {
		t.Errorf("%d concurrent snapshots: %+v, want 1 fetch and 1 build", callers, st)
	}
}

func TestDifferentRepositoriesInParallel(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	r := newReader(t)
	ctx := testContext(t)
	const repos = 4
	urls := make([]string, repos)
	commits := make([]string, repos)
	for i := range repos {
		name := "app" + string(rune('a'+i))
		urls[i], commits[i] = createRepo(t, s, name, map[string]string{name + "/x.yaml": name})
	}
	var wg sync.WaitGroup
	for i := range repos {
		for range 2 {
			wg.Go(func() {
				snap, err := r.Snapshot(ctx, urls[i], "main", nil)
				if err != nil {
					t.Errorf("%s: %v", urls[i], err)
					return
				}
				if snap.Commit() != commits[i] {
					t.Errorf("%s: commit %s, want %s", urls[i], snap.Commit(), commits[i])
				}
			})
		}
	}
	wg.Wait()
	if st := r.Stats(); st.Fetches != repos {
		t.Errorf("Fetches = %d, want one per repository (%d)", st.Fetches, repos)
	}
}

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	const user, password = "deploy", "s3cr3t-Pa55word"
	s := startServer(t, gitserver.Options{Username: user, Password: password})
	repoURL, commit := createRepo(t, s, "private", appsTree)
	cacheDir := t.TempDir()
	r := newReaderIn(t, cacheDir)
	ctx := testContext(t)

	snap, err := r.Snapshot(ctx, repoURL, "main", &gitrepo.Credentials{Username: user, Password: password})
	if err != nil {
		t.Fatalf("Snapshot with the right credentials: %v", err)
	}
	if snap.Commit() != commit {
		t.Errorf("Commit() = %s, want %s", snap.Commit(), commit)
	}
	withUser, err := url.Parse(repoURL)
	if err != nil {
		t.Fatal(err)
	}
	withUser.User = url.UserPassword(user, password)
	if _, err := r.Resolve(ctx, withUser.String(), "main", nil); !errors.Is(err, gitrepo.ErrInvalidURL) || strings.Contains(err.Error(), password) {
		t.Errorf("Resolve with credentials in the URL: %v; want ErrInvalidURL without the password", err)
	}

	secrets := []string{password, base64.StdEncoding.EncodeToString([]byte(user + ":" + password))}
	for name, call := range map[string]struct {
		url   string
		rev   string
		creds *gitrepo.Credentials
	}{
		"wrong password":               {repoURL, "main", &gitrepo.Credentials{Username: user, Password: password + "x"}},
		"no credentials":               {repoURL, "main", nil},
		"wrong password, cached SHA":   {repoURL, commit, &gitrepo.Credentials{Username: user, Password: "guess"}},
		"password only (token), wrong": {repoURL, "main", &gitrepo.Credentials{Password: password}},
	} {
		snap, err := r.Snapshot(ctx, call.url, call.rev, call.creds)
		if !errors.Is(err, gitrepo.ErrUnauthorized) {
			t.Errorf("%s: Snapshot = %v, %v; want an error wrapping ErrUnauthorized", name, snap, err)
			continue
		}
		for _, secret := range append(secrets, "bad-"+password) {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: error reveals a secret: %v", name, err)
			}
		}
	}

	// Nothing on disk holds the password, in any encoding.
	err = filepath.WalkDir(cacheDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, secret := range secrets {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s contains a secret", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUnreachableServerIsAnError(t *testing.T) {
	t.Parallel()
	// A port that was just free: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String() + "/apps.git"
	ln.Close()
	r := newReader(t)
	ctx := testContext(t)

	snap, err := r.Snapshot(ctx, closedURL, "main", nil)
	if !errors.Is(err, gitrepo.ErrUnreachable) || snap != nil {
		t.Errorf("Snapshot from a closed port = %v, %v; want nil and an error wrapping ErrUnreachable", snap, err)
	}
	if _, err := r.Resolve(ctx, closedURL, "main", nil); !errors.Is(err, gitrepo.ErrUnreachable) {
		t.Errorf("Resolve from a closed port: %v, want ErrUnreachable", err)
	}

	// A server that goes away after a snapshot was cached: the branch
	// cannot be resolved, and that is an error, not the stale tree.
	s := startServer(t, gitserver.Options{})
	repoURL, _ := createRepo(t, s, "apps", appsTree)
	if _, err := r.Snapshot(ctx, repoURL, "main", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err = r.Snapshot(ctx, repoURL, "main", nil)
	if !errors.Is(err, gitrepo.ErrUnreachable) || snap != nil {
		t.Errorf("Snapshot after the server stopped = %v, %v; want an error wrapping ErrUnreachable", snap, err)
	}
}

func TestRepositoryNotFound(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	_, err := newReader(t).Snapshot(testContext(t), s.RepoURL("missing"), "main", nil)
	if !errors.Is(err, gitrepo.ErrRepositoryNotFound) {
		t.Errorf("Snapshot of a missing repository: %v, want ErrRepositoryNotFound", err)
	}
}

func TestInvalidURL(t *testing.T) {
	t.Parallel()
	r := newReader(t)
	for _, raw := range []string{
		"github.com:org/repo.git",
		"ssh://git:hunter2@github.com/org/repo.git",
		"git:hunter2@github.com:org/repo.git",
		"file:///etc",
		"ftp://example.com/repo.git",
		"https:///repo.git",
		"https://user:hunter2@exa mple.com/repo.git",
		"https://example.com/repo.git#frag",
	} {
		_, err := r.Snapshot(testContext(t), raw, "main", nil)
		if !errors.Is(err, gitrepo.ErrInvalidURL) {
			t.Errorf("Snapshot(%q): %v, want ErrInvalidURL", raw, err)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Snapshot(%q): error reveals the password: %v", raw, err)
		}
	}
	if st := r.Stats(); st.RemoteLookups != 0 {
		t.Errorf("invalid URLs ran %d remote lookups", st.RemoteLookups)
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	repoURL, _ := createRepo(t, s, "apps", appsTree)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := newReader(t).Snapshot(ctx, repoURL, "main", nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Snapshot with a canceled context: %v, want context.Canceled", err)
	}
}

func TestCacheSurvivesRestart(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	repoURL, first := createRepo(t, s, "apps", appsTree)
	cacheDir := t.TempDir()
	ctx := testContext(t)

	r1, err := gitrepo.New(gitrepo.Options{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Snapshot(ctx, repoURL, "main", nil); err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	// A process killed mid-fetch leaves lock files behind.
	mirrors, _ := filepath.Glob(filepath.Join(cacheDir, "mirrors", "*", "refs", "heads"))
	if len(mirrors) != 1 {
		t.Fatalf("mirrors in cache: %q, want one", mirrors)
	}
	if err := os.WriteFile(filepath.Join(mirrors[0], "main.lock"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	r2 := newReaderIn(t, cacheDir)
	if _, err := r2.Snapshot(ctx, repoURL, first, nil); err != nil {
		t.Fatal(err)
	}
	if got := r2.Stats().Fetches; got != 0 {
		t.Errorf("snapshot of a commit fetched before the restart: %d fetches, want 0", got)
	}
	second := addFiles(t, s, "apps", map[string]string{"new/app.yaml": "new"})
	snap, err := r2.Snapshot(ctx, repoURL, "main", nil)
	if err != nil {
		t.Fatalf("fetch after restart with a stale lock file: %v", err)
	}
	if snap.Commit() != second {
		t.Errorf("Commit() = %s, want %s", snap.Commit(), second)
	}
}

func TestTemporaryCacheDirIsRemoved(t *testing.T) {
	t.Parallel()
	r, err := gitrepo.New(gitrepo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, gitserver.Options{})
	repoURL, _ := createRepo(t, s, "apps", appsTree)
	snap, err := r.Snapshot(testContext(t), repoURL, "main", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.ReadFile("README.md"); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Snapshot(testContext(t), repoURL, "main", nil); err == nil {
		t.Error("Snapshot after Close succeeded")
	}
	// Already read: still served from memory. Never read: an error.
	if _, err := snap.ReadFile("README.md"); err != nil {
		t.Errorf("ReadFile of a cached file after Close: %v", err)
	}
	if _, err := snap.ReadFile("apps/a/config.json"); err == nil {
		t.Error("ReadFile of an unread file after Close succeeded")
	}
}

// BenchmarkSnapshotCached measures a Snapshot call answered from the cache:
// by commit SHA, which needs no server round trip.
func BenchmarkSnapshotCached(b *testing.B) {
	s := startServer(b, gitserver.Options{})
	repoURL, commit := createRepo(b, s, "apps", appsTree)
	r := newReader(b)
	ctx := testContext(b)
	if _, err := r.Snapshot(ctx, repoURL, commit, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Snapshot(ctx, repoURL, commit, nil); err != nil {
			b.Fatal(err)
		}
	}
	if st := r.Stats(); st.Fetches != 1 {
		b.Fatalf("Fetches = %d, want 1", st.Fetches)
	}
}

// BenchmarkSnapshotCachedBranch measures a Snapshot of a branch whose
// commit is cached: one git ls-remote against a local server.
func BenchmarkSnapshotCachedBranch(b *testing.B) {
	s := startServer(b, gitserver.Options{})
	repoURL, _ := createRepo(b, s, "apps", appsTree)
	r := newReader(b)
	ctx := testContext(b)
	if _, err := r.Snapshot(ctx, repoURL, "main", nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Snapshot(ctx, repoURL, "main", nil); err != nil {
			b.Fatal(err)
		}
	}
}
