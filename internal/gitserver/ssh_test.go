package gitserver_test

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/navarch-io/navarch/internal/gitserver"
)

// sshClient is what an SSH client of a test server needs: a deploy key the
// server accepts and the known hosts trusting the server.
type sshClient struct {
	key            []byte
	signer         ssh.Signer
	keyFile        string
	knownHostsFile string
}

// startSSHServer starts a server serving SSH too, with one authorized key.
func startSSHServer(t *testing.T) (*gitserver.Server, sshClient) {
	t.Helper()
	s := startServer(t, gitserver.Options{SSHAddr: gitserver.DefaultAddr})
	key, pub, err := gitserver.GenerateSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	s.AuthorizeKey(pub)
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := sshClient{
		key:            key,
		signer:         signer,
		keyFile:        filepath.Join(dir, "id"),
		knownHostsFile: filepath.Join(dir, "known_hosts"),
	}
	if err := os.WriteFile(c.keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.knownHostsFile, []byte(s.KnownHostsLine()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// git runs git with the OpenSSH client set up to use c's key and known
// hosts alone, and fails the test on error.
func (c sshClient) git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := c.tryGit(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (c sshClient) tryGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "LC_ALL=C",
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=test",
		"GIT_CONFIG_KEY_1=user.email", "GIT_CONFIG_VALUE_1=test@localhost",
		"GIT_SSH_COMMAND=ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes"+
			" -o UserKnownHostsFile="+c.knownHostsFile+" -o GlobalKnownHostsFile=/dev/null"+
			" -o IdentitiesOnly=yes -o IdentityAgent=none -i "+c.keyFile,
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.New("git " + strings.Join(args, " ") + ": " + err.Error() + ": " + stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// dial opens an SSH connection to s with signer, checking the host key
// against s.KnownHostsLine.
func dial(t *testing.T, s *gitserver.Server, signer ssh.Signer) (*ssh.Client, error) {
	t.Helper()
	_, _, hostKey, _, _, err := ssh.ParseKnownHosts([]byte(s.KnownHostsLine()))
	if err != nil {
		t.Fatalf("KnownHostsLine %q does not parse: %v", s.KnownHostsLine(), err)
	}
	return ssh.Dial("tcp", s.SSHAddr(), &ssh.ClientConfig{
		User:            "git",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
	})
}

func TestSSHURLs(t *testing.T) {
	t.Parallel()
	s, _ := startSSHServer(t)
	addr := s.SSHAddr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("SSHAddr() = %q, want 127.0.0.1:PORT", addr)
	}
	port := strings.TrimPrefix(addr, "127.0.0.1:")
	for got, want := range map[string]string{
		s.SSHURL("org/app"):     "ssh://git@127.0.0.1:" + port + "/org/app.git",
		s.SCPLikeURL("org/app"): "git@[127.0.0.1:" + port + "]:org/app.git",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if line := s.KnownHostsLine(); !strings.HasPrefix(line, "[127.0.0.1]:"+port+" ssh-ed25519 AAAA") {
		t.Errorf("KnownHostsLine() = %q, want [127.0.0.1]:%s ssh-ed25519 AAAA…", line, port)
	}

	plain := startServer(t, gitserver.Options{})
	if plain.SSHURL("app") != "" || plain.SCPLikeURL("app") != "" || plain.KnownHostsLine() != "" || plain.SSHAddr() != "" {
		t.Error("a server without SSHAddr reports SSH URLs")
	}
}

func TestCloneFetchAndPushOverSSH(t *testing.T) {
	t.Parallel()
	s, c := startSSHServer(t)
	files := map[string]string{"README.md": "# app\n", "deploy/app.yaml": "kind: Deployment\n"}
	src := t.TempDir()
	writeFiles(t, src, files)
	first, err := s.CreateRepo("org/app", src)
	if err != nil {
		t.Fatal(err)
	}

	for form, url := range map[string]string{"ssh://": s.SSHURL("org/app"), "scp-like": s.SCPLikeURL("org/app")} {
		t.Run("clone "+form, func(t *testing.T) {
			t.Parallel()
			work := filepath.Join(t.TempDir(), "clone")
			c.git(t, "", "clone", "--quiet", url, work)
			if got := readTree(t, work); !maps.Equal(got, files) {
				t.Errorf("cloned tree = %v, want %v", got, files)
			}
			if got := git(t, work, "rev-parse", "HEAD"); got != first {
				t.Errorf("HEAD = %s, want %s", got, first)
			}
		})
	}

	t.Run("fetch by SHA, protocol v2", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "bare")
		git(t, "", "init", "--quiet", "--bare", dir)
		c.git(t, dir, "-c", "protocol.version=2", "fetch", "--quiet", s.SSHURL("org/app"), first)
		if got := git(t, dir, "rev-parse", "FETCH_HEAD"); got != first {
			t.Errorf("FETCH_HEAD = %s, want %s", got, first)
		}
	})

	t.Run("push", func(t *testing.T) {
		t.Parallel()
		if _, err := s.CreateRepo("pushed", src); err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(t.TempDir(), "clone")
		c.git(t, "", "clone", "--quiet", s.SSHURL("pushed"), work)
		writeFiles(t, work, map[string]string{"new.txt": "new\n"})
		git(t, work, "add", "new.txt")
		c.git(t, work, "commit", "--quiet", "-m", "new")
		c.git(t, work, "push", "--quiet", "origin", "main")
		pushed := git(t, work, "rev-parse", "HEAD")
		if got, err := s.Resolve("pushed", "main"); err != nil || got != pushed {
			t.Errorf("main on the server = %s, %v; want the pushed %s", got, err, pushed)
		}
	})
}

func TestSSHRefusals(t *testing.T) {
	t.Parallel()
	s, c := startSSHServer(t)
	if _, err := s.CreateRepo("app", ""); err != nil {
		t.Fatal(err)
	}

	// A key nobody authorized, until it is.
	otherKey, otherPub, err := gitserver.GenerateSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	other, err := ssh.ParsePrivateKey(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if client, err := dial(t, s, other); err == nil {
		client.Close()
		t.Error("an unauthorized key logged in")
	}
	s.AuthorizeKey(otherPub)
	if client, err := dial(t, s, other); err != nil {
		t.Errorf("dial with a key authorized while serving: %v", err)
	} else {
		client.Close()
	}

	if _, err := c.tryGit("", "ls-remote", strings.Replace(s.SSHURL("app"), "app.git", "missing.git", 1)); err == nil ||
		!strings.Contains(err.Error(), "does not appear to be a git repository") {
		t.Errorf("ls-remote of a missing repository: %v, want git's not-a-repository message", err)
	}

	client, err := dial(t, s, c.signer)
	if err != nil {
		t.Fatalf("dial with the authorized key: %v", err)
	}
	defer client.Close()
	for _, tc := range []struct {
		command, stderr string
	}{
		{"ls /", "unknown command"},
		{"sh -c 'id'", "unknown command"},
		{"git-upload-pack '/../../etc'", "does not appear to be a git repository"},
		{"git-upload-pack '/app.git/../../outside'", "does not appear to be a git repository"},
		{"git-upload-pack '/missing.git'", "does not appear to be a git repository"},
		{"git-upload-pack '--help'", "does not appear to be a git repository"},
		{"git-upload-pack /app.git", "cannot parse"},
		{"git-upload-pack '/app.git' '/other.git'", "cannot parse"},
	} {
		session, err := client.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		session.Stderr = &stderr
		err = session.Run(tc.command)
		var exit *ssh.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() == 0 || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("exec %q = %v, stderr %q; want a failure saying %q", tc.command, err, stderr.String(), tc.stderr)
		}
		session.Close()
	}
	session, err := client.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Shell(); err == nil {
		t.Error("the server opened a shell")
	}
	session.Close()
}

func TestSSHCloseWithOpenConnection(t *testing.T) {
	t.Parallel()
	s, err := gitserver.Start(gitserver.Options{Root: t.TempDir(), SSHAddr: gitserver.DefaultAddr})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	key, pub, err := gitserver.GenerateSSHKey()
	if err != nil {
		t.Fatal(err)
	}
	s.AuthorizeKey(pub)
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	client, err := dial(t, s, signer)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer client.Close()
	closed := make(chan error, 1)
	go func() { closed <- client.Wait() }()

	// An idle connection does not hold Close up, and is cut.
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	t.Logf("the client saw the connection end: %v", <-closed)
	if c, err := dial(t, s, signer); err == nil {
		c.Close()
		t.Error("the SSH server still accepts connections after Close")
	}
}
