package gitserver

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshHandshakeTimeout bounds the SSH handshake and authentication of a
// connection.
const sshHandshakeTimeout = 30 * time.Second

// sshCommands are the programs an exec request may run, as git's ssh
// transport names them.
var sshCommands = map[string]bool{"git-upload-pack": true, "git-receive-pack": true}

// sshFrontend serves the repositories of a [Server] over SSH: it
// authenticates clients by public key and runs git-upload-pack (fetch,
// clone, ls-remote) or git-receive-pack (push) on the repository an exec
// request names, wiring the process to the session.
type sshFrontend struct {
	s        *Server
	execPath string // git --exec-path
	listener net.Listener
	addr     string // dialable host:port
	hostKey  ssh.PublicKey
	config   *ssh.ServerConfig
	log      *log.Logger

	// ctx ends when the frontend shuts down; running git processes are
	// killed with it.
	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	authorized map[string]bool // by ssh.PublicKey.Marshal()
	conns      map[net.Conn]bool
	closing    bool

	running sync.WaitGroup // commands in flight; Add only under mu, while !closing
	workers sync.WaitGroup // every goroutine of the frontend
}

// startSSH opens the SSH listener on addr with a new ed25519 host key and
// serves in background goroutines.
func startSSH(s *Server, addr string, logger *log.Logger) (*sshFrontend, error) {
	execPath, err := Git("", "--exec-path")
	if err != nil {
		return nil, fmt.Errorf("gitserver: locate git-upload-pack: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("gitserver: generate SSH host key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("gitserver: SSH host key: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gitserver: listen for SSH on %s: %w", addr, err)
	}
	f := &sshFrontend{
		s:          s,
		execPath:   execPath,
		listener:   ln,
		addr:       dialableAddr(ln.Addr()),
		hostKey:    signer.PublicKey(),
		log:        logger,
		authorized: map[string]bool{},
		conns:      map[net.Conn]bool{},
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.config = &ssh.ServerConfig{PublicKeyCallback: f.checkKey}
	f.config.AddHostKey(signer)
	f.workers.Add(1)
	go f.accept()
	return f, nil
}

// checkKey accepts the keys registered with AuthorizeKey, for any user
// name.
func (f *sshFrontend) checkKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	f.mu.Lock()
	ok := f.authorized[string(key.Marshal())]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("key %s of %s is not authorized", ssh.FingerprintSHA256(key), meta.User())
	}
	return &ssh.Permissions{Extensions: map[string]string{"key": ssh.FingerprintSHA256(key)}}, nil
}

func (f *sshFrontend) authorize(key ssh.PublicKey) {
	f.mu.Lock()
	f.authorized[string(key.Marshal())] = true
	f.mu.Unlock()
}

func (f *sshFrontend) accept() {
	defer f.workers.Done()
	for {
		conn, err := f.listener.Accept()
		if err != nil {
			f.mu.Lock()
			closing := f.closing
			f.mu.Unlock()
			if !closing {
				f.log.Printf("ssh: accept: %v", err)
			}
			return
		}
		if !f.track(conn) {
			conn.Close()
			return
		}
		f.workers.Add(1)
		go f.serveConn(conn)
	}
}

// track registers an open connection so that close can cut it; false means
// the frontend is shutting down.
func (f *sshFrontend) track(conn net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return false
	}
	f.conns[conn] = true
	return true
}

func (f *sshFrontend) serveConn(conn net.Conn) {
	defer f.workers.Done()
	defer func() {
		conn.Close()
		f.mu.Lock()
		delete(f.conns, conn)
		f.mu.Unlock()
	}()
	_ = conn.SetDeadline(time.Now().Add(sshHandshakeTimeout))
	sc, chans, reqs, err := ssh.NewServerConn(conn, f.config)
	if err != nil {
		f.log.Printf("ssh: handshake with %s: %v", conn.RemoteAddr(), err)
		return
	}
	_ = conn.SetDeadline(time.Time{})
	f.workers.Add(1)
	go func() {
		defer f.workers.Done()
		ssh.DiscardRequests(reqs)
	}()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions are served")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			f.log.Printf("ssh: accept session: %v", err)
			continue
		}
		f.workers.Add(1)
		go f.serveSession(sc, ch, chReqs)
	}
}

// serveSession answers the requests of one session: environment variables
// (GIT_PROTOCOL only) and one exec of a git command. Everything else is
// refused: there are no shells, terminals or subsystems here.
func (f *sshFrontend) serveSession(sc *ssh.ServerConn, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer f.workers.Done()
	var protocol string
	started := false
	for req := range reqs {
		switch {
		case req.Type == "env":
			var kv struct{ Name, Value string }
			ok := ssh.Unmarshal(req.Payload, &kv) == nil && kv.Name == "GIT_PROTOCOL"
			if ok {
				protocol = kv.Value
			}
			_ = req.Reply(ok, nil)
		case req.Type == "exec" && !started:
			var cmd struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &cmd); err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			if !f.startCommand() {
				_ = req.Reply(false, nil)
				continue
			}
			started = true
			_ = req.Reply(true, nil)
			f.workers.Add(1)
			go func(command, protocol string) {
				defer f.workers.Done()
				defer f.running.Done()
				f.exec(sc, ch, command, protocol)
			}(cmd.Command, protocol)
		default:
			_ = req.Reply(false, nil)
		}
	}
	if !started {
		ch.Close()
	}
}

// startCommand counts a command in flight, unless the frontend is shutting
// down.
func (f *sshFrontend) startCommand() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return false
	}
	f.running.Add(1)
	return true
}

// exec runs command, wired to ch, and reports its exit status. Like a Git
// host it runs only git-upload-pack and git-receive-pack, on repositories
// below the root; for anything else it answers the way git does.
func (f *sshFrontend) exec(sc *ssh.ServerConn, ch ssh.Channel, command, protocol string) {
	defer ch.Close()
	start := time.Now()
	status := 128
	defer func() {
		f.log.Printf("ssh: %q user=%s key=%s exit=%d %s", command, sc.User(), sc.Permissions.Extensions["key"],
			status, time.Since(start).Round(time.Millisecond))
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status)}))
	}()

	program, arg, _ := strings.Cut(command, " ")
	if !sshCommands[program] {
		fmt.Fprintf(ch.Stderr(), "fatal: unknown command %q: only git-upload-pack and git-receive-pack are served\n", program)
		return
	}
	repoPath, ok := sqDequote(arg)
	if !ok {
		fmt.Fprintf(ch.Stderr(), "fatal: cannot parse the arguments of %s\n", program)
		return
	}
	dir, err := f.repoDir(repoPath)
	if err != nil {
		// git's own words, which clients recognise.
		fmt.Fprintf(ch.Stderr(), "fatal: '%s' does not appear to be a git repository\n", repoPath)
		return
	}

	args := []string{dir}
	if program == "git-upload-pack" {
		args = []string{"--strict", dir}
	}
	cmd := exec.CommandContext(f.ctx, filepath.Join(f.execPath, program), args...)
	cmd.Env = gitEnv()
	if protocol != "" {
		cmd.Env = append(cmd.Env, "GIT_PROTOCOL="+protocol)
	}
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	// Not cmd.Stdin = ch: Wait would wait for the client to close its
	// side, which it may not do before seeing the exit status.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(ch.Stderr(), "fatal: %v\n", err)
		return
	}
	f.workers.Add(1)
	go func() {
		defer f.workers.Done()
		// Ends when the client closes its side or the channel is closed.
		_, _ = io.Copy(stdin, ch)
		stdin.Close()
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		status = 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		status = exit.ExitCode()
	default:
		status = 255
	}
}

// repoDir maps the path of an exec request ("/org/app.git" from an ssh://
// URL, "org/app.git" from an scp-like one) to an existing repository below
// the root. The name rules of [Server.CreateRepo] keep it there.
func (f *sshFrontend) repoDir(p string) (string, error) {
	name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(p, "~"), "/"), "/")
	name = strings.TrimSuffix(name, ".git")
	return f.s.existingRepoDir(name)
}

// sqDequote undoes git's quoting of a path in the command it sends over
// ssh (sq_quote_buf): the argument in single quotes, where a quote or an
// exclamation mark inside reads as quote, backslash, the character, quote.
// It accepts exactly one argument.
func sqDequote(s string) (string, bool) {
	if len(s) < 2 || s[0] != '\'' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c != '\'' {
			b.WriteByte(c)
			continue
		}
		// Closing quote: the end, or an escaped ' or ! and a new quote.
		if i == len(s)-1 {
			return b.String(), true
		}
		if i+3 < len(s) && s[i+1] == '\\' && (s[i+2] == '\'' || s[i+2] == '!') && s[i+3] == '\'' {
			b.WriteByte(s[i+2])
			i += 3
			continue
		}
		return "", false
	}
	return "", false
}

// close stops accepting connections, waits up to grace for commands in
// flight, then kills what still runs, cuts every connection and waits for
// all goroutines.
func (f *sshFrontend) close(grace time.Duration) error {
	f.mu.Lock()
	f.closing = true
	f.mu.Unlock()
	err := f.listener.Close()

	done := make(chan struct{})
	go func() {
		f.running.Wait()
		close(done)
	}()
	timer := time.NewTimer(grace)
	select {
	case <-done:
		timer.Stop()
	case <-timer.C:
		err = errors.Join(err, errors.New("ssh: commands still running after the grace period were killed"))
	}
	f.cancel()
	f.mu.Lock()
	for conn := range f.conns {
		conn.Close()
	}
	f.mu.Unlock()
	<-done
	f.workers.Wait()
	if err != nil {
		return fmt.Errorf("gitserver: stop SSH: %w", err)
	}
	return nil
}

// SSHURL returns the ssh:// clone URL of the repository called name,
// ssh://git@127.0.0.1:PORT/NAME.git, or "" if the server does not serve
// SSH (see [Options.SSHAddr]). It does not check that the repository
// exists.
func (s *Server) SSHURL(name string) string {
	if s.ssh == nil {
		return ""
	}
	return "ssh://git@" + s.ssh.addr + "/" + name + ".git"
}

// SCPLikeURL returns the scp-like clone URL of the repository called name,
// git@[127.0.0.1:PORT]:NAME.git (git's form of user@host:path with a port),
// or "" if the server does not serve SSH.
func (s *Server) SCPLikeURL(name string) string {
	if s.ssh == nil {
		return ""
	}
	return "git@[" + s.ssh.addr + "]:" + name + ".git"
}

// SSHAddr returns the host:port the SSH frontend listens on, or "".
func (s *Server) SSHAddr() string {
	if s.ssh == nil {
		return ""
	}
	return s.ssh.addr
}

// KnownHostsLine returns the line of an OpenSSH known_hosts file that
// trusts the server's SSH host key, "[127.0.0.1]:PORT ssh-ed25519 AAAA…",
// or "" if the server does not serve SSH. The key is new for every
// [Start].
func (s *Server) KnownHostsLine() string {
	if s.ssh == nil {
		return ""
	}
	return knownhosts.Line([]string{knownhosts.Normalize(s.ssh.addr)}, s.ssh.hostKey)
}

// AuthorizeKey lets clients presenting key log in over SSH, as any user.
// Until a key is authorized nobody can. It does nothing if the server does
// not serve SSH.
func (s *Server) AuthorizeKey(key ssh.PublicKey) {
	if s.ssh != nil {
		s.ssh.authorize(key)
	}
}

// GenerateSSHKey makes a new ed25519 key pair for an SSH client (a deploy
// key): the private key in OpenSSH format, without passphrase, and the
// public key to pass to [Server.AuthorizeKey].
func GenerateSSHKey() (private []byte, public ssh.PublicKey, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("gitserver: generate SSH key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "navarch-gitserver")
	if err != nil {
		return nil, nil, fmt.Errorf("gitserver: encode SSH key: %w", err)
	}
	if public, err = ssh.NewPublicKey(pub); err != nil {
		return nil, nil, fmt.Errorf("gitserver: SSH public key: %w", err)
	}
	return pem.EncodeToMemory(block), public, nil
}
