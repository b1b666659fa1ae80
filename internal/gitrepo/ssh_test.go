package gitrepo_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/navarch-io/navarch/internal/gitrepo"
	"github.com/navarch-io/navarch/internal/gitserver"
)

// knownHostsSource is how the tests' Readers name their known hosts, as
// the controller does.
const knownHostsSource = "ConfigMap navarch-ssh-known-hosts"

// sshFixture is a Git server serving over SSH, a deploy key it accepts and
// the known hosts line trusting it.
type sshFixture struct {
	server     *gitserver.Server
	key        []byte
	knownHosts string
}

func startSSHServer(t testing.TB) sshFixture {
	t.Helper()
	s := startServer(t, gitserver.Options{SSHAddr: gitserver.DefaultAddr})
	key, pub, err := gitserver.GenerateSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	s.AuthorizeKey(pub)
	return sshFixture{server: s, key: key, knownHosts: s.KnownHostsLine() + "\n"}
}

// newSSHReader makes a Reader whose known hosts are knownHosts, closed when
// the test ends.
func newSSHReader(t testing.TB, knownHosts string, opts gitrepo.Options) *gitrepo.Reader {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	opts.KnownHosts = func(context.Context) ([]byte, error) { return []byte(knownHosts), nil }
	opts.KnownHostsSource = knownHostsSource
	r, err := gitrepo.New(opts)
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

// keyLines are the lines of a private key's body, none of which may ever
// show in an error.
func keyLines(key []byte) []string {
	var lines []string
	for line := range strings.SplitSeq(string(key), "\n") {
		if line != "" && !strings.HasPrefix(line, "-----") {
			lines = append(lines, line)
		}
	}
	return lines
}

func assertNoKeyIn(t *testing.T, what string, err error, key []byte) {
	t.Helper()
	if err == nil {
		return
	}
	for _, line := range keyLines(key) {
		if strings.Contains(err.Error(), line) {
			t.Errorf("%s: the error reveals the private key: %v", what, err)
			return
		}
	}
}

func TestSSHSnapshotWithDeployKey(t *testing.T) {
	t.Parallel()
	fx := startSSHServer(t)
	_, first := createRepo(t, fx.server, "platform/apps", appsTree)
	creds := &gitrepo.Credentials{SSHPrivateKey: fx.key}
	ctx := testContext(t)

	for form, repoURL := range map[string]string{
		"ssh://":    fx.server.SSHURL("platform/apps"),
		"scp-like":  fx.server.SCPLikeURL("platform/apps"),
		"user-less": strings.Replace(fx.server.SSHURL("platform/apps"), "git@", "", 1),
	} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			r := newSSHReader(t, fx.knownHosts, gitrepo.Options{})
			commit, err := r.Resolve(ctx, repoURL, "main", creds)
			if err != nil {
				t.Fatalf("Resolve(%s): %v", repoURL, err)
			}
			if commit != first {
				t.Errorf("Resolve(%s) = %s, want %s", repoURL, commit, first)
			}
			snap, err := r.Snapshot(ctx, repoURL, "main", creds)
			if err != nil {
				t.Fatalf("Snapshot(%s): %v", repoURL, err)
			}
			if snap.Commit() != first {
				t.Errorf("Commit() = %s, want %s", snap.Commit(), first)
			}
			data, err := snap.ReadFile("apps/a/config.json")
			if err != nil || string(data) != appsTree["apps/a/config.json"] {
				t.Errorf("ReadFile = %q, %v; want %q", data, err, appsTree["apps/a/config.json"])
			}
			if dirs := snap.Dirs(); !strings.Contains(strings.Join(dirs, " "), "apps/b/overlays/prod") {
				t.Errorf("Dirs() = %q, want apps/b/overlays/prod among them", dirs)
			}
			// By SHA, within the access window: from memory, no server round trip.
			before := r.Stats()
			if again, err := r.Snapshot(ctx, repoURL, first, creds); err != nil || again.Commit() != first {
				t.Fatalf("Snapshot by SHA = %v, %v", again, err)
			}
			if after := r.Stats(); after.RemoteLookups != before.RemoteLookups || after.Fetches != before.Fetches {
				t.Errorf("snapshot of a cached SHA ran %d lookups and %d fetches, want none",
					after.RemoteLookups-before.RemoteLookups, after.Fetches-before.Fetches)
			}
		})
	}
}

func TestSSHSnapshotSeesNewCommitsIncrementally(t *testing.T) {
	t.Parallel()
	fx := startSSHServer(t)
	createRepo(t, fx.server, "apps", appsTree)
	repoURL := fx.server.SSHURL("apps")
	creds := &gitrepo.Credentials{SSHPrivateKey: fx.key}
	r := newSSHReader(t, fx.knownHosts, gitrepo.Options{})
	ctx := testContext(t)

	if _, err := r.Snapshot(ctx, repoURL, "main", creds); err != nil {
		t.Fatal(err)
	}
	second := addFiles(t, fx.server, "apps", map[string]string{"apps/c/config.json": `{"name":"c"}`})
	snap, err := r.Snapshot(ctx, repoURL, "main", creds)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Commit() != second {
		t.Errorf("Commit() = %s, want the new commit %s", snap.Commit(), second)
	}
	if data, err := snap.ReadFile("apps/c/config.json"); err != nil || string(data) != `{"name":"c"}` {
		t.Errorf("ReadFile of the new file = %q, %v", data, err)
	}
	if got := r.Stats().Fetches; got != 2 {
		t.Errorf("Fetches = %d, want 2 (one per commit)", got)
	}
}

func TestSSHConcurrentSnapshotsShareOneFetch(t *testing.T) {
	t.Parallel()
	fx := startSSHServer(t)
	_, commit := createRepo(t, fx.server, "apps", appsTree)
	r := newSSHReader(t, fx.knownHosts, gitrepo.Options{})
	ctx := testContext(t)
	creds := &gitrepo.Credentials{SSHPrivateKey: fx.key}

	// Both forms name the same repository, but they are different URLs
	// (an scp-like path is relative to the home directory), so each has
	// its own mirror.
	urls := []string{fx.server.SSHURL("apps"), fx.server.SCPLikeURL("apps")}
	const callers = 8
	errs := make([]error, callers)
	commits := make([]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			snap, err := r.Snapshot(ctx, urls[i%2], "main", creds)
			if err == nil {
				commits[i] = snap.Commit()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range callers {
		if errs[i] != nil || commits[i] != commit {
			t.Errorf("caller %d: %s, %v; want %s", i, commits[i], errs[i], commit)
		}
	}
	if st := r.Stats(); st.Fetches != 2 || st.SnapshotBuilds != 2 {
		t.Errorf("%d concurrent snapshots of two URLs: %+v, want 2 fetches and 2 builds", callers, st)
	}
}

func TestSSHFailures(t *testing.T) {
	t.Parallel()
	fx := startSSHServer(t)
	_, commit := createRepo(t, fx.server, "apps", appsTree)
	repoURL := fx.server.SSHURL("apps")
	addr := fx.server.SSHAddr()
	creds := &gitrepo.Credentials{SSHPrivateKey: fx.key}
	otherKey, otherPub, err := gitserver.GenerateSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	// A port that was just free: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := ln.Addr().String()
	ln.Close()

	trusting := newSSHReader(t, fx.knownHosts, gitrepo.Options{})
	ctx := testContext(t)
	// Cache the commit, so that the wrong key is tried on a cached SHA too.
	if _, err := trusting.Snapshot(ctx, repoURL, "main", creds); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		r        *gitrepo.Reader
		url, rev string
		creds    *gitrepo.Credentials
		want     error
		message  string // the error must contain it
	}{
		{name: "wrong key", r: trusting, url: repoURL, rev: "main",
			creds: &gitrepo.Credentials{SSHPrivateKey: otherKey}, want: gitrepo.ErrUnauthorized},
		{name: "wrong key, cached SHA", r: trusting, url: repoURL, rev: commit,
			creds: &gitrepo.Credentials{SSHPrivateKey: otherKey}, want: gitrepo.ErrUnauthorized},
		{name: "no key", r: trusting, url: repoURL, rev: "main", want: gitrepo.ErrUnauthorized},
		{name: "missing repository", r: trusting, url: fx.server.SSHURL("missing"), rev: "main",
			creds: creds, want: gitrepo.ErrRepositoryNotFound},
		{name: "another host key for the host",
			r:   newSSHReader(t, knownhosts.Line([]string{knownhosts.Normalize(addr)}, otherPub)+"\n", gitrepo.Options{}),
			url: repoURL, rev: "main", creds: creds, want: gitrepo.ErrHostKey,
			message: "host key of " + addr + " does not match the known hosts (" + knownHostsSource + ")"},
		{name: "only other hosts known",
			r:   newSSHReader(t, strings.Replace(fx.knownHosts, "127.0.0.1", "127.0.0.2", 1), gitrepo.Options{}),
			url: repoURL, rev: "main", creds: creds, want: gitrepo.ErrHostKey,
			message: "host key of " + addr + " is not in the known hosts (" + knownHostsSource + ")"},
		{name: "empty known hosts", r: newSSHReader(t, "\n", gitrepo.Options{}),
			url: fx.server.SCPLikeURL("apps"), rev: "main", creds: creds, want: gitrepo.ErrHostKey,
			message: "host key of " + addr + " is not in the known hosts (" + knownHostsSource + ")"},
		{name: "unreachable port", r: trusting, url: "ssh://git@" + closedAddr + "/apps.git", rev: "main",
			creds: creds, want: gitrepo.ErrUnreachable},
	} {
		snap, err := tc.r.Snapshot(ctx, tc.url, tc.rev, tc.creds)
		t.Logf("%s: %v", tc.name, err)
		if !errors.Is(err, tc.want) || snap != nil {
			t.Errorf("%s: Snapshot = %v, %v; want an error wrapping %q", tc.name, snap, err, tc.want)
		} else if !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: error %q does not say %q", tc.name, err, tc.message)
		}
		if errors.Is(tc.want, gitrepo.ErrHostKey) && (strings.Contains(err.Error(), os.TempDir()) || strings.Contains(err.Error(), "@@@")) {
			t.Errorf("%s: the error quotes ssh's warning or its files: %v", tc.name, err)
		}
		assertNoKeyIn(t, tc.name, err, fx.key)
		assertNoKeyIn(t, tc.name, err, otherKey)
	}

	// No known hosts at all.
	noKnownHosts, err := gitrepo.New(gitrepo.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer noKnownHosts.Close()
	_, err = noKnownHosts.Resolve(ctx, repoURL, "main", creds)
	if !errors.Is(err, gitrepo.ErrHostKey) || !strings.Contains(err.Error(), "host key of "+addr+" is not in the known hosts") {
		t.Errorf("Resolve without known hosts: %v, want ErrHostKey naming %s", err, addr)
	}
}

func TestSSHCredentialsOfTheWrongKind(t *testing.T) {
	t.Parallel()
	fx := startSSHServer(t)
	createRepo(t, fx.server, "apps", appsTree)
	r := newSSHReader(t, fx.knownHosts, gitrepo.Options{})
	ctx := testContext(t)

	passphrase := []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n")
	for name, call := range map[string]struct {
		url   string
		creds gitrepo.Credentials
	}{
		"password over ssh": {fx.server.SSHURL("apps"), gitrepo.Credentials{Username: "git", Password: "s3cret"}},
		"key over https":    {fx.server.RepoURL("apps"), gitrepo.Credentials{SSHPrivateKey: fx.key}},
		"garbage key":       {fx.server.SSHURL("apps"), gitrepo.Credentials{SSHPrivateKey: passphrase}},
	} {
		_, err := r.Resolve(ctx, call.url, "main", &call.creds)
		t.Logf("%s: %v", name, err)
		if err == nil || !strings.Contains(err.Error(), "credentials: ") {
			t.Errorf("%s: Resolve = %v, want an error about the credentials", name, err)
		}
		assertNoKeyIn(t, name, err, fx.key)
		if err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "not a key")) {
			t.Errorf("%s: the error reveals the credentials: %v", name, err)
		}
	}
	if st := r.Stats(); st.RemoteLookups != 0 {
		t.Errorf("credentials of the wrong kind ran %d remote lookups", st.RemoteLookups)
	}

	// A key as pasted into a Secret by hand: CRLF line endings, no final newline.
	pasted := []byte(strings.TrimSpace(strings.ReplaceAll(string(fx.key), "\n", "\r\n")))
	if _, err := r.Resolve(ctx, fx.server.SSHURL("apps"), "main", &gitrepo.Credentials{SSHPrivateKey: pasted}); err != nil {
		t.Errorf("Resolve with a key in CRLF without final newline: %v", err)
	}
}

func TestSSHWithoutSSHClient(t *testing.T) {
	t.Parallel()
	fx := startSSHServer(t)
	createRepo(t, fx.server, "apps", appsTree)
	r := newSSHReader(t, fx.knownHosts, gitrepo.Options{SSHBinary: filepath.Join(t.TempDir(), "ssh")})
	_, err := r.Resolve(testContext(t), fx.server.SSHURL("apps"), "main", &gitrepo.Credentials{SSHPrivateKey: fx.key})
	if err == nil || !strings.Contains(err.Error(), "ssh not found") {
		t.Errorf("Resolve without an ssh client: %v, want an error saying ssh is missing", err)
	}
	// HTTPS needs no ssh.
	if _, err := r.Resolve(testContext(t), fx.server.RepoURL("apps"), "main", nil); err != nil {
		t.Errorf("Resolve over https without an ssh client: %v", err)
	}
}

// TestSSHKeyTouchesDiskOnlyDuringTheCall runs the real ssh through a
// wrapper that records what it was given: the key file, private, and gone
// once the call returns; the key itself never on the command line.
func TestSSHKeyTouchesDiskOnlyDuringTheCall(t *testing.T) {
	t.Parallel()
	fx := startSSHServer(t)
	createRepo(t, fx.server, "apps", appsTree)
	realSSH, err := exec.LookPath("ssh")
	if err != nil {
		t.Fatalf("these tests need the OpenSSH client: %v", err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "ssh.log")
	wrapper := filepath.Join(dir, "ssh")
	script := fmt.Sprintf(`#!/bin/sh
prev=
for a in "$@"; do
	printf 'arg %%s\n' "$a" >>'%[1]s'
	if [ "$prev" = -i ]; then
		stat -c 'mode %%a %%n' "$a" "$(dirname "$a")" >>'%[1]s'
	fi
	prev=$a
done
exec '%[2]s' "$@"
`, logPath, realSSH)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := newSSHReader(t, fx.knownHosts, gitrepo.Options{SSHBinary: wrapper})
	snap, err := r.Snapshot(testContext(t), fx.server.SSHURL("apps"), "main", &gitrepo.Credentials{SSHPrivateKey: fx.key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.ReadFile("README.md"); err != nil {
		t.Fatal(err)
	}

	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("the ssh wrapper did not run: %v", err)
	}
	var keyFiles, modes []string
	for line := range strings.SplitSeq(string(logged), "\n") {
		if m, ok := strings.CutPrefix(line, "mode "); ok {
			modes = append(modes, m)
		}
	}
	lines := strings.Split(string(logged), "\n")
	for i, line := range lines {
		if line == "arg -i" && i+1 < len(lines) {
			keyFiles = append(keyFiles, strings.TrimPrefix(lines[i+1], "arg "))
		}
	}
	// ls-remote and fetch: two runs of ssh, two files.
	if len(keyFiles) != 2 || keyFiles[0] == keyFiles[1] {
		t.Fatalf("ssh was given key files %q, want one per run (2)\n%s", keyFiles, logged)
	}
	for _, key := range keyFiles {
		for _, want := range []string{"600 " + key, "700 " + filepath.Dir(key)} {
			if !strings.Contains(strings.Join(modes, "\n"), want) {
				t.Errorf("ssh saw modes %q, want %q", modes, want)
			}
		}
		if _, err := os.Stat(filepath.Dir(key)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the directory of %s is still there after the call: %v", key, err)
		}
	}
	for _, line := range keyLines(fx.key) {
		if strings.Contains(string(logged), line) {
			t.Fatalf("the private key is in ssh's arguments:\n%s", logged)
		}
	}
	for _, opt := range []string{"StrictHostKeyChecking=yes", "BatchMode=yes", "IdentitiesOnly=yes", "IdentityAgent=none", "GlobalKnownHostsFile=/dev/null"} {
		if !strings.Contains(string(logged), "arg "+opt+"\n") {
			t.Errorf("ssh ran without -o %s:\n%s", opt, logged)
		}
	}
}
