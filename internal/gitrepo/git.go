package gitrepo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Credentials authenticate to a Git server: with basic auth (Username and
// Password) over HTTP(S), with a private key (SSHPrivateKey) over SSH. A
// call with the wrong kind for its URL fails rather than going anonymous.
// Callers read them from wherever they are kept (a Kubernetes Secret) and
// pass them per call. The package keeps them in memory and hands a password
// to git through the environment of the child process, never its arguments
// or a file; an SSH key is written to a private file for the one ssh run
// that needs it (see the package documentation).
type Credentials struct {
	// Username is the user name. It may be empty when Password is an
	// access token: the placeholder user name "git" is then sent, which
	// token-accepting hosts (GitHub, GitLab, Azure DevOps, Gitea) ignore.
	Username string
	// Password is the password or access token.
	Password string
	// SSHPrivateKey is a private key in OpenSSH or PEM format, without
	// passphrase, for SSH URLs (a deploy key). The user name to log in as
	// is the URL's.
	SSHPrivateKey []byte
}

// String hides the password and the key, so that printing Credentials with
// %v or %+v by mistake does not leak them.
func (c Credentials) String() string {
	key := "<none>"
	if len(c.SSHPrivateKey) > 0 {
		key = "<redacted>"
	}
	return fmt.Sprintf("{Username:%q Password:<redacted> SSHPrivateKey:%s}", c.Username, key)
}

// GoString hides the password and the key from %#v too.
func (c Credentials) GoString() string { return "gitrepo.Credentials" + c.String() }

// tokenUsername is sent when Credentials carry a password but no user name.
const tokenUsername = "git"

// auth is the resolved authentication of one call.
type auth struct {
	// configKey and header are the git configuration entry that adds the
	// Authorization header, scoped to the repository's origin so that a
	// redirect to another host does not receive it. Empty without
	// credentials.
	configKey string
	header    string
	// secrets are scrubbed from any git output quoted in errors.
	secrets []string
	// id identifies the credentials in memory (cache keys, access checks)
	// without holding them in plain text.
	id string
	// ssh is set for a repository reached over SSH.
	ssh *sshAuth
}

// newAuth prepares the authentication of a call for the repository at u.
// Empty credentials mean anonymous access.
func newAuth(u repoURL, c Credentials) (*auth, error) {
	if u.ssh != nil {
		return newSSHAuth(*u.ssh, c)
	}
	if len(c.SSHPrivateKey) > 0 {
		return nil, errors.New("credentials: an SSH private key cannot authenticate to an http(s) URL; " +
			"use an ssh:// or user@host:path URL, or a username and password")
	}
	if c.Username == "" && c.Password == "" {
		return &auth{id: "anonymous"}, nil
	}
	user := c.Username
	if user == "" {
		user = tokenUsername
	}
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + c.Password))
	sum := sha256.Sum256([]byte(user + "\x00" + c.Password))
	return &auth{
		configKey: "http." + u.origin + "/.extraHeader",
		header:    "Authorization: Basic " + basic,
		secrets:   secretsOf(user, c.Password),
		id:        fmt.Sprintf("basic:%x", sum[:16]),
	}, nil
}

// gitConfig is set on every git command, through GIT_CONFIG_COUNT and
// friends, so it needs no file and cannot be overridden by one.
var gitConfig = [][2]string{
	// No credential helper may store or supply credentials.
	{"credential.helper", ""},
	// Automatic maintenance runs inside the fetch that triggered it
	// (under the repository's lock and the caller's context) instead of
	// in a daemon outliving it.
	{"gc.autoDetach", "false"},
	{"maintenance.autoDetach", "false"},
	{"protocol.version", "2"},
	{"core.askPass", ""},
}

// inheritedEnv are the variables of this process passed on to git: what it
// needs to find programs and to go through a proxy or trust a private CA.
// Everything else, in particular GIT_* and HOME, is left out so that the
// user's configuration cannot change what git does.
var inheritedEnv = []string{
	"PATH", "TMPDIR", "SYSTEMROOT",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
	"http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "GIT_SSL_CAINFO", "GIT_SSL_CAPATH",
	"GIT_EXEC_PATH",
}

// baseEnv returns the environment shared by every git command: a private,
// empty HOME, no system or global configuration, no prompts and messages
// in the C locale (they are parsed). SSH_AUTH_SOCK is not passed on: only
// the caller's key may be offered.
func baseEnv(home string) []string {
	env := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
		"LANG=C",
	}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// commandEnv returns the environment of one git command: the base plus the
// configuration, including the Authorization header when a is non-nil, and
// the one transport the repository's URL needs.
func commandEnv(base []string, a *auth) []string {
	config := gitConfig
	if a != nil && a.configKey != "" {
		config = append(config[:len(config):len(config)], [2]string{a.configKey, a.header})
	}
	protocols := "http:https"
	if a != nil && a.ssh != nil {
		protocols = "ssh"
	}
	env := make([]string, 0, len(base)+2+2*len(config))
	env = append(env, base...)
	env = append(env, "GIT_ALLOW_PROTOCOL="+protocols, "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	for i, kv := range config {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

// terminateDelay is how long a git process gets to exit after SIGTERM
// (which lets it remove its lock files) before it is killed.
const terminateDelay = 5 * time.Second

// maxCapturedStderr bounds how much of a command's stderr is kept.
const maxCapturedStderr = 64 << 10

// run runs git with args and returns its standard output. gitDir, if not
// empty, is the repository to operate on. a, if not nil, authenticates
// network operations. When ctx ends the process is asked to terminate and
// the context's error is returned.
func (r *Reader) run(ctx context.Context, gitDir string, a *auth, args ...string) (out []byte, err error) {
	argv := args
	if gitDir != "" {
		argv = append([]string{"--git-dir=" + gitDir}, args...)
	}
	env := commandEnv(r.env, a)
	sshDir := ""
	if a != nil && a.ssh != nil {
		var sshEnv []string
		if sshDir, sshEnv, err = r.sshSession(ctx, a.ssh); err != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], err)
		}
		// The key leaves the disk as soon as git is done with it.
		defer func() {
			if rmErr := removeSSHDir(sshDir); rmErr != nil {
				out, err = nil, errors.Join(err, rmErr)
			}
		}()
		env = append(env, sshEnv...)
	}
	cmd := exec.CommandContext(ctx, r.gitBinary, argv...)
	cmd.Dir = r.home
	cmd.Env = env
	cmd.Cancel = func() error {
		if runtime.GOOS == "windows" {
			return cmd.Process.Kill()
		}
		return cmd.Process.Signal(syscall.SIGTERM)
	}
	cmd.WaitDelay = terminateDelay
	var stdout bytes.Buffer
	stderr := &cappedBuffer{max: maxCapturedStderr}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], ctxErr)
		}
		msg := stderr.String()
		var secrets []string
		if a != nil {
			secrets = a.secrets
			if a.ssh != nil {
				if hostKeyErr := r.hostKeyError(a.ssh, msg); hostKeyErr != nil {
					return nil, fmt.Errorf("git %s: %w", args[0], hostKeyErr)
				}
			}
		}
		if sshDir != "" {
			// The directory differs from run to run; errors should not.
			msg = strings.ReplaceAll(msg, sshDir, "<temporary directory>")
		}
		return nil, &commandError{
			Subcommand: args[0],
			Err:        err,
			Stderr:     summarizeStderr(msg, secrets),
		}
	}
	return stdout.Bytes(), nil
}

// cappedBuffer keeps the first max bytes written to it and drops the rest.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string { return b.buf.String() }

// checkGitVersion fails unless git is at least 2.31, the first version
// that reads configuration from GIT_CONFIG_COUNT, which is how credentials
// reach git.
func (r *Reader) checkGitVersion(ctx context.Context) error {
	out, err := r.run(ctx, "", nil, "version")
	if err != nil {
		return fmt.Errorf("run %s: %w", r.gitBinary, err)
	}
	// "git version 2.39.5" (possibly with a vendor suffix).
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return fmt.Errorf("unexpected output of %s version: %q", r.gitBinary, out)
	}
	parts := strings.SplitN(fields[2], ".", 3)
	major, err1 := strconv.Atoi(parts[0])
	minor := 0
	var err2 error
	if len(parts) > 1 {
		minor, err2 = strconv.Atoi(parts[1])
	}
	if err1 != nil || err2 != nil {
		return fmt.Errorf("unexpected output of %s version: %q", r.gitBinary, out)
	}
	if major < 2 || major == 2 && minor < 31 {
		return fmt.Errorf("git %s is too old: 2.31 or newer is required", fields[2])
	}
	return nil
}
