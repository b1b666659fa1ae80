package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	// Messages as git 2.39 with libcurl prints them (LC_ALL=C).
	tests := []struct {
		stderr string
		want   error
	}{
		{"fatal: could not read Username for 'https://host': terminal prompts disabled", ErrUnauthorized},
		{"remote: Invalid username or password.\nfatal: Authentication failed for 'https://host/a.git/'", ErrUnauthorized},
		{"fatal: unable to access 'https://host/a.git/': The requested URL returned error: 403", ErrUnauthorized},
		{"fatal: repository 'https://host/a.git/' not found", ErrRepositoryNotFound},
		{"fatal: unable to access 'https://host/a.git/': The requested URL returned error: 404", ErrRepositoryNotFound},
		{"fatal: unable to access 'http://127.0.0.1:1/a.git/': Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server", ErrUnreachable},
		{"fatal: unable to access 'https://nohost/a.git/': Could not resolve host: nohost", ErrUnreachable},
		{"fatal: unable to access 'https://host/a.git/': The requested URL returned error: 503", ErrUnreachable},
		{"fatal: unable to access 'https://host/a.git/': Connection timed out after 30001 milliseconds", ErrUnreachable},
		// OpenSSH 9.2 through git.
		{"git@127.0.0.1: Permission denied (publickey).\r\nfatal: Could not read from remote repository.", ErrUnauthorized},
		{"Received disconnect from 1.2.3.4 port 22:2: Too many authentication failures", ErrUnauthorized},
		{"ERROR: Repository not found.\nfatal: Could not read from remote repository.", ErrRepositoryNotFound},
		{"fatal: '/missing.git' does not appear to be a git repository", ErrRepositoryNotFound},
		{"ssh: connect to host 127.0.0.1 port 1: Connection refused\r\nfatal: Could not read from remote repository.", ErrUnreachable},
		{"ssh: Could not resolve hostname nohost: Name or service not known", ErrUnreachable},
		{"ssh: connect to host 10.0.0.1 port 22: No route to host", ErrUnreachable},
		{"kex_exchange_identification: read: Connection reset by peer", ErrUnreachable},
		{"Connection closed by 1.2.3.4 port 22", ErrUnreachable},
		{"fatal: remote error: upload-pack: not our ref 0123", nil},
		{"error: unable to create temporary file: Permission denied", nil},
		{"fatal: couldn't find remote ref refs/heads/nope", nil},
	}
	sentinels := []error{ErrUnauthorized, ErrRepositoryNotFound, ErrUnreachable}
	for _, tc := range tests {
		err := classify(&commandError{Subcommand: "fetch", Err: errors.New("exit status 128"), Stderr: tc.stderr})
		for _, s := range sentinels {
			if got, want := errors.Is(err, s), errors.Is(tc.want, s); got != want {
				t.Errorf("classify(%q): errors.Is(%v) = %v, want %v", tc.stderr, s, got, want)
			}
		}
	}
	// A context error is the caller's, not the server's.
	got := classify(fmt.Errorf("git fetch: %w", context.DeadlineExceeded))
	if !errors.Is(got, context.DeadlineExceeded) || isRemoteSentinel(got) {
		t.Errorf("classify(context error) = %v, want the context error alone", got)
	}
}

func TestSummarizeStderrHidesSecrets(t *testing.T) {
	secrets := secretsOf("bot", "p@ss word")
	stderr := "hint: try this\n\nfatal: Authentication failed for 'https://bot:p%40ss+word@host/'\n" +
		"header Authorization: Basic " + secrets[0] + "\nraw p@ss word\n"
	got := summarizeStderr(stderr, secrets)
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("summary %q contains secret %q", got, s)
		}
	}
	if strings.Contains(got, "hint:") || !strings.HasPrefix(got, "fatal: Authentication failed") {
		t.Errorf("summary = %q", got)
	}
	long := summarizeStderr(strings.Repeat("x", 5000), nil)
	if len(long) > maxStderr+len("…") {
		t.Errorf("summary of a long message has %d bytes", len(long))
	}
}

func TestRedactURL(t *testing.T) {
	tests := map[string]string{
		"https://host/a.git":                  "https://host/a.git",
		"https://bot:tok@host/a.git":          "https://host/a.git",
		"https://bot:tok@ho st/a.git":         "https://bot:xxxxx@ho st/a.git",
		"git@host:org/a.git":                  "git@host:org/a.git",
		"ssh://git@host/org/a.git":            "ssh://git@host/org/a.git",
		"ssh://git:pw@host/org/a.git":         "ssh://git@host/org/a.git",
		"ssh://:pw@host/org/a.git":            "ssh://host/org/a.git",
		"bot:tok@host:org/a.git":              "bot:xxxxx@host:org/a.git",
		"https://bot:to@k@ho st/a.git":        "https://bot:xxxxx@ho st/a.git",
		"not a url at all, with no user info": "not a url at all, with no user info",
	}
	for raw, want := range tests {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestRunFailureIsCommandError(t *testing.T) {
	r, err := New(Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.run(t.Context(), "", nil, "rev-parse", "--verify", "nope")
	var ce *commandError
	var exit *exec.ExitError
	if !errors.As(err, &ce) || !errors.As(err, &exit) || !strings.Contains(ce.Stderr, "fatal") {
		t.Errorf("run failure = %#v, want a commandError wrapping the exit error with git's message", err)
	}
}

func isRemoteSentinel(err error) bool {
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRepositoryNotFound)
}
