package gitrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// sshConnectTimeout bounds, in seconds, how long ssh waits for the TCP
// connection and the server's greeting.
const sshConnectTimeout = 30

// Names of the files written for one ssh run, in its private directory.
const (
	sshKeyFile        = "id"
	sshKnownHostsFile = "known_hosts"
)

// sshAuth is the SSH side of an [auth]: where to connect and the key to
// log in with.
type sshAuth struct {
	url SSHURL
	key []byte // normalised private key; nil to offer none
}

// newSSHAuth prepares the authentication for the SSH repository u.
func newSSHAuth(u SSHURL, c Credentials) (*auth, error) {
	if c.Username != "" || c.Password != "" {
		return nil, errors.New("credentials: a username and password cannot authenticate over SSH; " +
			"use an SSH private key, or an https:// URL")
	}
	a := &auth{id: "anonymous", ssh: &sshAuth{url: u}}
	if len(c.SSHPrivateKey) == 0 {
		return a, nil
	}
	key, err := normalizePrivateKey(c.SSHPrivateKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(key)
	a.id = fmt.Sprintf("ssh:%x", sum[:16])
	a.ssh.key = key
	a.secrets = keySecrets(key)
	return a, nil
}

// normalizePrivateKey checks that raw is a private key ssh can use
// without a passphrase and returns it with Unix line endings and the final
// newline OpenSSH insists on (keys pasted into a Secret often lack it).
// Its errors never quote the key.
func normalizePrivateKey(raw []byte) ([]byte, error) {
	key := bytes.TrimSpace(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n")))
	key = append(key, '\n')
	if _, err := ssh.ParseRawPrivateKey(key); err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, errors.New("credentials: the SSH private key is protected by a passphrase, which is not supported; " +
				"use a deploy key without one")
		}
		// x/crypto's parse errors describe the structure, never the content.
		return nil, fmt.Errorf("credentials: the SSH private key is not a PEM or OpenSSH private key: %w", err)
	}
	return key, nil
}

// keySecrets lists the strings of a private key to scrub from git's output:
// the lines of its body. ssh does not print them, but if anything ever did
// they would not reach an error.
func keySecrets(key []byte) []string {
	var secrets []string
	for line := range strings.SplitSeq(string(key), "\n") {
		if line = strings.TrimSpace(line); len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			secrets = append(secrets, line)
		}
	}
	return secrets
}

// sshSession prepares one run of git over SSH: it writes the known hosts
// and the key to a new private directory and returns the directory, which
// the caller removes as soon as git exits, and the environment that makes
// git use them.
func (r *Reader) sshSession(ctx context.Context, s *sshAuth) (dir string, env []string, err error) {
	sshPath, err := exec.LookPath(r.sshBinary)
	if err != nil {
		return "", nil, fmt.Errorf("ssh not found (install an OpenSSH client, e.g. the openssh-client package, to read repositories over SSH): %w", err)
	}
	var knownHosts []byte
	if r.knownHosts != nil {
		if knownHosts, err = r.knownHosts(ctx); err != nil {
			return "", nil, fmt.Errorf("read the SSH known hosts: %w", err)
		}
	}
	if len(bytes.TrimSpace(knownHosts)) == 0 {
		return "", nil, fmt.Errorf("%w: host key of %s is not in %s: there are no known hosts",
			ErrHostKey, s.url.HostPort(), r.knownHostsName())
	}

	if dir, err = os.MkdirTemp("", "navarch-ssh-"); err != nil {
		return "", nil, fmt.Errorf("create a directory for ssh: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
			dir = ""
		}
	}()
	// ssh splits option values at white space and expands '%' tokens.
	if strings.ContainsAny(dir, " \t\n\"'\\%#") {
		return "", nil, fmt.Errorf("the temporary directory %q cannot be handed to ssh: set TMPDIR to a path without spaces, quotes, '%%' or '#'", dir)
	}
	// MkdirTemp makes it 0700 (less with a strict umask); make sure.
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("create a directory for ssh: %w", err)
	}
	knownHostsPath := filepath.Join(dir, sshKnownHostsFile)
	if err := writePrivateFile(knownHostsPath, append(bytes.TrimSpace(knownHosts), '\n')); err != nil {
		return "", nil, fmt.Errorf("write the SSH known hosts: %w", err)
	}

	args := []string{
		sshPath,
		"-F", os.DevNull, // no user or system configuration
		"-o", "BatchMode=yes", // never prompt
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + knownHostsPath,
		"-o", "GlobalKnownHostsFile=" + os.DevNull,
		"-o", "UpdateHostKeys=no",
		"-o", "CheckHostIP=no",
		"-o", "IdentitiesOnly=yes",
		"-o", "IdentityAgent=none",
		"-o", "PasswordAuthentication=no",
		"-o", "KbdInteractiveAuthentication=no",
		"-o", "ConnectTimeout=" + strconv.Itoa(sshConnectTimeout),
		"-o", "ServerAliveInterval=15",
		"-o", "ServerAliveCountMax=4",
	}
	if s.key != nil {
		keyPath := filepath.Join(dir, sshKeyFile)
		if err := writePrivateFile(keyPath, s.key); err != nil {
			return "", nil, fmt.Errorf("write the SSH key: %w", err)
		}
		args = append(args, "-i", keyPath)
	} else {
		// Without -i ssh would offer the default keys of the user the
		// process runs as (~/.ssh/id_*), which are not the caller's.
		args = append(args, "-o", "PubkeyAuthentication=no")
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	// git runs GIT_SSH_COMMAND through the shell and appends the port
	// (-p), the user@host and the remote command. The variant tells it
	// the command is OpenSSH whatever its name, so that it passes
	// GIT_PROTOCOL on (protocol v2).
	return dir, []string{
		"GIT_SSH_COMMAND=" + strings.Join(quoted, " "),
		"GIT_SSH_VARIANT=ssh",
	}, nil
}

// writePrivateFile creates path, readable by this user only, with data.
func writePrivateFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// removeSSHDir removes the directory of one ssh run.
func removeSSHDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the SSH key directory: %w", err)
	}
	return nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// knownHostsName names the known hosts in errors.
func (r *Reader) knownHostsName() string {
	if r.knownHostsSource == "" {
		return "the known hosts"
	}
	return "the known hosts (" + r.knownHostsSource + ")"
}

// offeredKeyPattern finds the key a server presented in ssh's warning about
// a changed host key.
var offeredKeyPattern = regexp.MustCompile(`fingerprint for the (\S+) key sent by the remote host is\s+(SHA256:[A-Za-z0-9+/=]+)`)

// hostKeyError recognises in ssh's stderr that the host key was not
// accepted and returns an error naming the host, or nil. ssh's own message
// is left out: it is a screenful and names the temporary files.
func (r *Reader) hostKeyError(s *sshAuth, stderr string) error {
	msg := strings.ToLower(stderr)
	if !strings.Contains(msg, "host key verification failed") {
		return nil
	}
	var problem string
	switch {
	case strings.Contains(msg, "has changed"):
		// "Host key for [h]:p has changed and you have requested strict checking."
		problem = "does not match"
	case strings.Contains(msg, "revoked"):
		problem = "is revoked in"
	case strings.Contains(msg, "host key is known for"):
		// "No ED25519 host key is known for [h]:p and you have requested strict checking."
		problem = "is not in"
	default:
		problem = "could not be verified against"
	}
	offered := ""
	if m := offeredKeyPattern.FindStringSubmatch(stderr); m != nil {
		offered = fmt.Sprintf(" (the server presented %s key %s)", m[1], m[2])
	}
	return fmt.Errorf("%w: host key of %s %s %s%s", ErrHostKey, s.url.HostPort(), problem, r.knownHostsName(), offered)
}
