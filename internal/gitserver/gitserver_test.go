package gitserver_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/navarch-io/navarch/internal/gitserver"
)

// startServer starts a server on a fresh root and stops it when the test
// ends. A missing git installation fails the test with Start's error.
func startServer(t *testing.T, opts gitserver.Options) *gitserver.Server {
	t.Helper()
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	s, err := gitserver.Start(opts)
	if err != nil {
		t.Fatalf("Start: %v (these tests need git and git-http-backend installed)", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// git runs git in dir and fails the test on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitserver.Git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeFiles creates files (slash-separated path → content) below dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns the files below dir, outside .git, as slash-separated
// path → content.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lsRemote returns ref → SHA as advertised by the remote at url.
func lsRemote(t *testing.T, url string) map[string]string {
	t.Helper()
	refs := map[string]string{}
	for line := range strings.Lines(git(t, "", "ls-remote", url)) {
		sha, ref, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			t.Fatalf("ls-remote: unexpected line %q", line)
		}
		refs[ref] = sha
	}
	return refs
}

// clone clones url into a new temporary directory and returns its path.
func clone(t *testing.T, url string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	git(t, "", "clone", "--quiet", url, dir)
	return dir
}

// withUserinfo returns raw with user:pass added to its authority.
func withUserinfo(t *testing.T, raw, user, pass string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, pass)
	return u.String()
}

func TestCreateRepoCloneOverHTTP(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})

	tests := []struct {
		name  string
		repo  string
		files map[string]string // nil: CreateRepo with srcDir ""
	}{
		{
			name: "tree",
			repo: "app",
			files: map[string]string{
				"README.md":                   "# app\n",
				"deploy/kustomization.yaml":   "resources:\n- deployment.yaml\n",
				"deploy/deployment.yaml":      "kind: Deployment\n",
				"deploy/overlays/dev/empty":   "",
				".gitignore":                  "ignored.txt\n",
				"ignored.txt":                 "committed anyway\n",
				"dir with space/file name.md": "spaces\n",
			},
		},
		{
			name:  "nested name",
			repo:  "org/team/app",
			files: map[string]string{"a.txt": "a\n"},
		},
		{
			name: "empty initial commit",
			repo: "empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := ""
			if tt.files != nil {
				src = t.TempDir()
				writeFiles(t, src, tt.files)
			}
			commit, err := s.CreateRepo(tt.repo, src)
			if err != nil {
				t.Fatal(err)
			}

			work := clone(t, s.RepoURL(tt.repo))
			want := tt.files
			if want == nil {
				want = map[string]string{}
			}
			if got := readTree(t, work); !maps.Equal(got, want) {
				t.Errorf("cloned tree = %v, want %v", got, want)
			}
			if got := git(t, work, "rev-parse", "HEAD"); got != commit {
				t.Errorf("HEAD = %s, want CreateRepo's commit %s", got, commit)
			}
			if got := git(t, work, "symbolic-ref", "--short", "HEAD"); got != "main" {
				t.Errorf("checked-out branch = %q, want main", got)
			}
			if got := git(t, work, "rev-list", "--count", "HEAD"); got != "1" {
				t.Errorf("commit count = %s, want 1", got)
			}
		})
	}
}

func TestCreateRepoErrors(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	if _, err := s.CreateRepo("taken", ""); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "file")
	writeFiles(t, filepath.Dir(file), map[string]string{"file": "x"})

	tests := []struct {
		name, repo, src string
		is              error // if set, errors.Is must hold
	}{
		{name: "exists", repo: "taken", is: fs.ErrExist},
		{name: "empty name", repo: ""},
		{name: "dot dot", repo: "../escape"},
		{name: "inner dot dot", repo: "a/../b"},
		{name: "absolute", repo: "/abs"},
		{name: "trailing slash", repo: "a/"},
		{name: "hidden", repo: ".hidden"},
		{name: "option like", repo: "-x"},
		{name: "git suffix", repo: "app.git"},
		{name: "inner git suffix", repo: "org.git/app"},
		{name: "space", repo: "my app"},
		{name: "missing source", repo: "nosrc", src: filepath.Join(t.TempDir(), "missing"), is: fs.ErrNotExist},
		{name: "source is a file", repo: "filesrc", src: file},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.CreateRepo(tt.repo, tt.src)
			if err == nil {
				t.Fatalf("CreateRepo(%q, %q) succeeded, want error", tt.repo, tt.src)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("CreateRepo error %v, want one matching %v", err, tt.is)
			}
		})
	}
	// A failed creation must not leave a half-made repository behind.
	if _, err := os.Stat(filepath.Join(s.Root(), "nosrc.git")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("failed CreateRepo left a repository: stat error %v", err)
	}
}

func TestUpdateSeenByFetch(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"keep.txt": "v1\n", "gone.txt": "bye\n", "sub/x.txt": "x\n"})
	first, err := s.CreateRepo("app", src)
	if err != nil {
		t.Fatal(err)
	}
	work := clone(t, s.RepoURL("app"))

	second, err := s.Update("app", "edit files", func(dir string) error {
		if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
			return err
		}
		if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
			return err
		}
		writeFiles(t, dir, map[string]string{"keep.txt": "v2\n", "new/file.txt": "new\n"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatalf("Update returned the old commit %s", first)
	}
	if got := lsRemote(t, s.RepoURL("app"))["refs/heads/main"]; got != second {
		t.Errorf("ls-remote main = %s, want %s", got, second)
	}
	git(t, work, "fetch", "--quiet", "origin")
	if got := git(t, work, "rev-parse", "origin/main"); got != second {
		t.Errorf("fetched origin/main = %s, want %s", got, second)
	}
	if got := git(t, work, "rev-parse", second+"^"); got != first {
		t.Errorf("parent of update = %s, want %s", got, first)
	}
	if got := git(t, work, "log", "-1", "--format=%s", second); got != "edit files" {
		t.Errorf("commit message = %q, want %q", got, "edit files")
	}
	git(t, work, "merge", "--quiet", "--ff-only", "origin/main")
	want := map[string]string{"keep.txt": "v2\n", "new/file.txt": "new\n"}
	if got := readTree(t, work); !maps.Equal(got, want) {
		t.Errorf("tree after update = %v, want %v", got, want)
	}

	// Without changes Update still makes a (empty) commit.
	third, err := s.Update("app", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Resolve("app", "main"); got != third || third == second {
		t.Errorf("after empty Update: main = %s, returned %s, previous %s", got, third, second)
	}

	// A failing edit changes nothing.
	boom := errors.New("boom")
	if _, err := s.Update("app", "", func(string) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Update with failing edit: error %v, want %v", err, boom)
	}
	if got, _ := s.Resolve("app", "main"); got != third {
		t.Errorf("main moved to %s after failed Update, want %s", got, third)
	}

	if _, err := s.Update("missing", "", nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Update of missing repository: error %v, want fs.ErrNotExist", err)
	}
}

func TestFetchBySHA(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	first, err := s.CreateRepo("app", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update("app", "second", nil); err != nil {
		t.Fatal(err)
	}
	// first is no longer a ref tip; fetching it needs
	// uploadpack.allowReachableSHA1InWant under protocol v0.
	for _, version := range []string{"0", "2"} {
		t.Run("protocol v"+version, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			git(t, dir, "init", "--quiet")
			git(t, dir, "-c", "protocol.version="+version, "fetch", "--quiet", "--depth=1", s.RepoURL("app"), first)
			if got := git(t, dir, "rev-parse", "FETCH_HEAD"); got != first {
				t.Errorf("FETCH_HEAD = %s, want %s", got, first)
			}
		})
	}
}

func TestPushOverHTTP(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	if _, err := s.CreateRepo("app", ""); err != nil {
		t.Fatal(err)
	}
	work := clone(t, s.RepoURL("app"))

	// More than http.postBuffer (1 MiB), so git sends a chunked request
	// body, which net/http/cgi cannot take as is.
	big := make([]byte, 3<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, work, map[string]string{"small.txt": "hello\n", "big.bin": string(big)})
	git(t, work, "add", "--all")
	git(t, work, "commit", "--quiet", "--message", "pushed over HTTP")
	git(t, work, "push", "--quiet", "origin", "main")
	head := git(t, work, "rev-parse", "HEAD")

	if got, err := s.Resolve("app", "main"); err != nil || got != head {
		t.Errorf("server main = %s (err %v), want pushed %s", got, err, head)
	}
	got := readTree(t, clone(t, s.RepoURL("app")))
	if got["small.txt"] != "hello\n" || !bytes.Equal([]byte(got["big.bin"]), big) {
		t.Errorf("fresh clone does not have the pushed files (have %d files)", len(got))
	}

	// Without http.receivepack and without authentication,
	// git-http-backend refuses pushes: the server grants nothing extra.
	repoDir, err := s.RepoDir("app")
	if err != nil {
		t.Fatal(err)
	}
	git(t, repoDir, "config", "http.receivepack", "false")
	git(t, work, "commit", "--quiet", "--allow-empty", "--message", "refused")
	if _, err := gitserver.Git(work, "push", "--quiet", "origin", "main"); err == nil {
		t.Error("push succeeded with http.receivepack=false and no authentication")
	} else if !strings.Contains(err.Error(), "403") {
		t.Errorf("push error = %v, want HTTP 403", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the server to write while the test
// reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestBasicAuth(t *testing.T) {
	t.Parallel()
	const user, pass, wrongPass = "alice", "s3cret-Pa55", "N0t-the-Pa55"
	var logs syncBuffer
	s := startServer(t, gitserver.Options{Username: user, Password: pass, Log: &logs})
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"f.txt": "f\n"})
	commit, err := s.CreateRepo("private", src)
	if err != nil {
		t.Fatal(err)
	}
	repoURL := s.RepoURL("private")

	t.Run("raw HTTP", func(t *testing.T) {
		tests := []struct {
			name       string
			user, pass string
			auth       bool
			want       int
		}{
			{name: "no credentials", want: http.StatusUnauthorized},
			{name: "wrong password", auth: true, user: user, pass: wrongPass, want: http.StatusUnauthorized},
			{name: "wrong user", auth: true, user: "bob", pass: pass, want: http.StatusUnauthorized},
			{name: "empty password", auth: true, user: user, want: http.StatusUnauthorized},
			{name: "password prefix", auth: true, user: user, pass: pass[:4], want: http.StatusUnauthorized},
			{name: "right credentials", auth: true, user: user, pass: pass, want: http.StatusOK},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodGet, repoURL+"/info/refs?service=git-upload-pack", nil)
				if err != nil {
					t.Fatal(err)
				}
				if tt.auth {
					req.SetBasicAuth(tt.user, tt.pass)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.want {
					t.Errorf("status = %d, want %d", resp.StatusCode, tt.want)
				}
				if tt.want == http.StatusUnauthorized {
					if got, want := resp.Header.Get("WWW-Authenticate"), `Basic realm="navarch"`; got != want {
						t.Errorf("WWW-Authenticate = %q, want %q", got, want)
					}
				} else if got, want := resp.Header.Get("Content-Type"), "application/x-git-upload-pack-advertisement"; got != want {
					t.Errorf("Content-Type = %q, want %q", got, want)
				}
			})
		}
	})

	helper := "!f() { echo username=" + user + "; echo password=" + pass + "; }; f"
	clones := []struct {
		name    string
		args    []string // before "clone"
		url     string
		wantErr bool
	}{
		{name: "no credentials", url: repoURL, wantErr: true},
		{name: "wrong credentials in URL", url: withUserinfo(t, repoURL, user, wrongPass), wantErr: true},
		{name: "wrong user in URL", url: withUserinfo(t, repoURL, "mallory", pass), wantErr: true},
		{name: "right credentials in URL", url: withUserinfo(t, repoURL, user, pass)},
		{name: "credential helper", args: []string{"-c", "credential.helper=" + helper}, url: repoURL},
	}
	for _, tt := range clones {
		t.Run("clone/"+tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "clone")
			args := append(append([]string{}, tt.args...), "clone", "--quiet", tt.url, dir)
			_, err := gitserver.Git("", args...)
			if tt.wantErr {
				if err == nil {
					t.Fatal("clone succeeded, want authentication failure")
				}
				if strings.Contains(err.Error(), wrongPass) {
					t.Errorf("error leaks the password from the URL: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := git(t, dir, "rev-parse", "HEAD"); got != commit {
				t.Errorf("cloned HEAD = %s, want %s", got, commit)
			}
		})
	}

	t.Run("push as authenticated user", func(t *testing.T) {
		// An authenticated user may push even without http.receivepack.
		repoDir, err := s.RepoDir("private")
		if err != nil {
			t.Fatal(err)
		}
		git(t, repoDir, "config", "--unset", "http.receivepack")
		work := clone(t, withUserinfo(t, repoURL, user, pass))
		git(t, work, "commit", "--quiet", "--allow-empty", "--message", "authenticated push")
		git(t, work, "push", "--quiet", "origin", "main")
		if got, want := lsRemote(t, withUserinfo(t, repoURL, user, pass))["refs/heads/main"], git(t, work, "rev-parse", "HEAD"); got != want {
			t.Errorf("main after push = %s, want %s", got, want)
		}
	})

	// Close waits for handlers, so the log is complete afterwards.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	log := logs.String()
	if strings.Contains(log, pass) {
		t.Errorf("log contains the password:\n%s", log)
	}
	for _, want := range []string{" 401 user=- ", " 200 user=alice ", "POST /private.git/git-receive-pack 200 user=alice"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestBranchAndTag(t *testing.T) {
	t.Parallel()
	s := startServer(t, gitserver.Options{})
	first, err := s.CreateRepo("app", "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Update("app", "second", nil)
	if err != nil {
		t.Fatal(err)
	}

	if got, err := s.Branch("app", "release-1", first); err != nil || got != first {
		t.Fatalf("Branch = %s, %v; want %s", got, err, first)
	}
	if got, err := s.Branch("app", "feature/x", "main"); err != nil || got != second {
		t.Fatalf("Branch = %s, %v; want %s", got, err, second)
	}
	if got, err := s.Tag("app", "v1.0.0", "release-1", ""); err != nil || got != first {
		t.Fatalf("lightweight Tag = %s, %v; want %s", got, err, first)
	}
	if got, err := s.Tag("app", "v2.0.0", "main", "release 2"); err != nil || got != second {
		t.Fatalf("annotated Tag = %s, %v; want %s", got, err, second)
	}
	// Branches and tags made by an Update callback are pushed too.
	third, err := s.Update("app", "on topic", func(dir string) error {
		if _, err := gitserver.Git(dir, "tag", "v2.1.0"); err != nil {
			return err
		}
		if _, err := gitserver.Git(dir, "switch", "--quiet", "--create", "topic"); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "topic.txt"), []byte("topic\n"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}

	refs := lsRemote(t, s.RepoURL("app"))
	want := map[string]string{
		"refs/heads/main":         second,
		"refs/heads/release-1":    first,
		"refs/heads/feature/x":    second,
		"refs/heads/topic":        third,
		"refs/tags/v1.0.0":        first,
		"refs/tags/v2.0.0^{}":     second,
		"refs/tags/v2.1.0":        second,
		"HEAD":                    second,
		"refs/tags/v2.0.0":        "", // the tag object; checked below
		"refs/tags/v2.1.0^{}":     "", // lightweight: must not be listed
		"refs/tags/v1.0.0^{}":     "",
		"refs/heads/does-not-exi": "",
	}
	for ref, sha := range want {
		got, ok := refs[ref]
		switch {
		case ref == "refs/tags/v2.0.0":
			if !ok || got == second {
				t.Errorf("annotated tag %s = %q, want a tag object distinct from %s", ref, got, second)
			}
		case sha == "" && ok:
			t.Errorf("ls-remote lists unexpected %s", ref)
		case sha != "" && got != sha:
			t.Errorf("ls-remote %s = %q, want %s", ref, got, sha)
		}
	}
	for ref, sha := range map[string]string{"v2.0.0": second, "topic": third, first[:12]: first} {
		if got, err := s.Resolve("app", ref); err != nil || got != sha {
			t.Errorf("Resolve(%q) = %s, %v; want %s", ref, got, err, sha)
		}
	}

	errCases := []struct {
		name string
		call func() (string, error)
	}{
		{"existing branch", func() (string, error) { return s.Branch("app", "main", first) }},
		{"existing tag", func() (string, error) { return s.Tag("app", "v1.0.0", "main", "") }},
		{"existing annotated tag", func() (string, error) { return s.Tag("app", "v2.0.0", "main", "again") }},
		{"invalid branch name", func() (string, error) { return s.Branch("app", "bad..name", "main") }},
		{"option-like tag", func() (string, error) { return s.Tag("app", "-d", "main", "") }},
		{"unknown ref", func() (string, error) { return s.Branch("app", "new", "nope") }},
		{"option-like ref", func() (string, error) { return s.Branch("app", "new", "--all") }},
		{"missing repository", func() (string, error) { return s.Tag("missing", "v1", "main", "") }},
		{"resolve unknown", func() (string, error) { return s.Resolve("app", "nope") }},
	}
	for _, tt := range errCases {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := tt.call(); err == nil {
				t.Errorf("succeeded with %q, want error", got)
			}
		})
	}
}

func TestCloseStopsServing(t *testing.T) {
	t.Parallel()
	s, err := gitserver.Start(gitserver.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL() = %q, want http://127.0.0.1:PORT", s.URL())
	}
	if got, want := s.RepoURL("org/app"), s.URL()+"/org/app.git"; got != want {
		t.Errorf("RepoURL = %q, want %q", got, want)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()

	for range 2 { // Close is idempotent.
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("Wait after Close = %v, want nil", err)
	}
	if resp, err := http.Get(s.URL() + "/"); err == nil {
		resp.Body.Close()
		t.Error("server still answers after Close")
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	if _, err := gitserver.Start(gitserver.Options{}); err == nil {
		t.Error("Start without Root succeeded")
	}
	s := startServer(t, gitserver.Options{})
	// The port is taken.
	if s2, err := gitserver.Start(gitserver.Options{Root: t.TempDir(), Addr: strings.TrimPrefix(s.URL(), "http://")}); err == nil {
		s2.Close()
		t.Error("Start on a busy port succeeded")
	}
}
