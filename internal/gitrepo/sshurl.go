package gitrepo

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// defaultSSHUser is the user name of an ssh:// URL that names none: the one
// every Git host (GitHub, GitLab, Bitbucket, Gitea) expects. Without it ssh
// would log in as the local user, whatever the controller's container
// happens to run as.
const defaultSSHUser = "git"

// defaultSSHPort is the port of an SSH URL that names none.
const defaultSSHPort = 22

// SSHURL is a parsed SSH repository URL, of either form:
//
//	ssh://[user@]host[:port]/path
//	user@host:path           (scp-like; the user is required)
//	user@[host:port]:path    (scp-like with a port, as git understands it)
type SSHURL struct {
	// User is the user name to log in as; "git" when an ssh:// URL names
	// none. It is not a secret and stays in the canonical URL.
	User string
	// Host is the host name or IP address, in lower case, without
	// brackets.
	Host string
	// Port is the TCP port, 22 unless the URL names another.
	Port int
	// Path is the repository path as the URL has it (decoded): absolute in
	// an ssh:// URL; in an scp-like URL relative to the user's home
	// directory on the server unless it starts with a slash. It may be
	// empty, as in the URL of a credential scope naming a whole host.
	Path string
	// SCPLike is set for the scp-like form.
	SCPLike bool
}

// IsSSH reports whether raw is meant for the SSH transport: it is an
// ssh:// URL, or, as git decides, has no "://" and a colon before any slash
// (the scp-like user@host:path). It does not check that raw is valid; see
// [ParseSSHURL].
func IsSSH(raw string) bool {
	raw = strings.TrimSpace(raw)
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		return strings.EqualFold(scheme, "ssh")
	}
	colon := strings.IndexByte(raw, ':')
	slash := strings.IndexByte(raw, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// ParseSSHURL parses an SSH repository URL of either form (see [SSHURL]).
// It refuses a password in the URL, an scp-like URL without a user name,
// and host names, user names and paths that ssh or git could take for an
// option. Errors wrap [ErrInvalidURL] and never quote a password.
func ParseSSHURL(raw string) (SSHURL, error) {
	raw = strings.TrimSpace(raw)
	var (
		u   SSHURL
		err error
	)
	if strings.Contains(raw, "://") {
		u, err = parseSSHScheme(raw)
	} else {
		u, err = parseSCPLike(raw)
	}
	if err != nil {
		return SSHURL{}, fmt.Errorf("%w: %q: %s", ErrInvalidURL, RedactURL(raw), err.Error())
	}
	return u, nil
}

// parseSSHScheme parses ssh://[user@]host[:port]/path. Its errors do not
// name the URL; ParseSSHURL adds it, redacted.
func parseSSHScheme(raw string) (SSHURL, error) {
	pu, err := url.Parse(raw)
	if err != nil {
		return SSHURL{}, errors.New("does not parse")
	}
	switch {
	case !strings.EqualFold(pu.Scheme, "ssh"):
		return SSHURL{}, errors.New("scheme must be ssh")
	case pu.Opaque != "" || pu.Host == "":
		return SSHURL{}, errors.New("no host")
	case pu.RawQuery != "" || pu.ForceQuery || pu.Fragment != "":
		return SSHURL{}, errors.New("queries and fragments are not allowed")
	}
	u := SSHURL{User: defaultSSHUser, Port: defaultSSHPort, Path: pu.Path}
	if pu.User != nil {
		if _, hasPassword := pu.User.Password(); hasPassword {
			return SSHURL{}, errSSHPassword
		}
		u.User = pu.User.Username()
	}
	if u.Host, err = sshHost(pu.Hostname()); err != nil {
		return SSHURL{}, err
	}
	if p := pu.Port(); p != "" {
		if u.Port, err = sshPort(p); err != nil {
			return SSHURL{}, err
		}
	}
	return u, u.check()
}

// errSSHPassword refuses passwords in SSH URLs: ssh runs in batch mode and
// could not use one, and URLs are shown in specs, status and logs.
var errSSHPassword = errors.New("a password is not allowed in an SSH URL; authenticate with an SSH key kept in a repository credential Secret")

// parseSCPLike parses user@host:path and user@[host:port]:path.
func parseSCPLike(raw string) (SSHURL, error) {
	const form = "an scp-like SSH URL must read user@host:path (or user@[host:port]:path)"
	user, rest, ok := strings.Cut(raw, "@")
	switch {
	case !ok || user == "" || strings.ContainsAny(user, "/[]"):
		return SSHURL{}, fmt.Errorf("no user name: %s", form)
	case strings.Contains(user, ":"):
		if !strings.Contains(rest, ":") {
			// host:path with an '@' in the path.
			return SSHURL{}, fmt.Errorf("no user name: %s", form)
		}
		return SSHURL{}, errSSHPassword
	}
	u := SSHURL{User: user, Port: defaultSSHPort, SCPLike: true}
	var host string
	if bracketed, ok := strings.CutPrefix(rest, "["); ok {
		inside, after, ok := strings.Cut(bracketed, "]")
		if !ok {
			return SSHURL{}, fmt.Errorf("unclosed '[': %s", form)
		}
		if u.Path, ok = strings.CutPrefix(after, ":"); !ok {
			return SSHURL{}, fmt.Errorf("no ':' after ']': %s", form)
		}
		host = inside
		if h, p, ok := strings.Cut(inside, ":"); ok {
			if strings.Contains(p, ":") {
				return SSHURL{}, errors.New("IPv6 addresses need the ssh://git@[address]:port/path form")
			}
			port, err := sshPort(p)
			if err != nil {
				return SSHURL{}, err
			}
			host, u.Port = h, port
		}
	} else if host, u.Path, ok = strings.Cut(rest, ":"); !ok {
		return SSHURL{}, fmt.Errorf("no ':' before the path: %s", form)
	}
	var err error
	if u.Host, err = sshHost(host); err != nil {
		return SSHURL{}, err
	}
	return u, u.check()
}

// check validates the user name and path, which reach ssh's and the
// server's command lines.
func (u SSHURL) check() error {
	if !validSSHUser(u.User) {
		return fmt.Errorf("user name %q is not allowed (letters, digits, '.', '_' and '-', not starting with '-')", u.User)
	}
	if strings.HasPrefix(u.Path, "-") {
		return errors.New("the path must not start with '-'")
	}
	for _, c := range u.Path {
		if c < ' ' || c == 0x7f {
			return errors.New("the path holds control characters")
		}
	}
	return nil
}

func validSSHUser(user string) bool {
	if user == "" || user[0] == '-' {
		return false
	}
	for _, c := range user {
		if upper := 'A' <= c && c <= 'Z'; !upper && !isNameChar(c) {
			return false
		}
	}
	return true
}

// sshHost validates a host name or IP address and returns it in lower case.
func sshHost(host string) (string, error) {
	host = strings.ToLower(host)
	if host == "" {
		return "", errors.New("no host")
	}
	if net.ParseIP(host) != nil {
		return host, nil
	}
	if host[0] == '-' || host[0] == '.' {
		return "", fmt.Errorf("host %q is not allowed", host)
	}
	for _, c := range host {
		if !isNameChar(c) {
			return "", fmt.Errorf("host %q is not allowed", host)
		}
	}
	return host, nil
}

// isNameChar reports whether c may appear in a host name (lower-cased) or
// a user name: a lower-case letter, a digit, '.', '_' or '-'.
func isNameChar(c rune) bool {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		return true
	}
	return false
}

func sshPort(p string) (int, error) {
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 || p[0] == '+' || p[0] == '0' {
		return 0, fmt.Errorf("port %q is not a port number", p)
	}
	return port, nil
}

// HostPort is the address ssh connects to, as host:port ("[::1]:22" for
// IPv6), and how errors name the server.
func (u SSHURL) HostPort() string {
	return net.JoinHostPort(u.Host, strconv.Itoa(u.Port))
}

// String returns the canonical form of u: the form it was written in, with
// the host in lower case, the user name always present and port 22 left
// out.
func (u SSHURL) String() string {
	if u.SCPLike {
		if u.Port != defaultSSHPort {
			return u.User + "@[" + u.HostPort() + "]:" + u.Path
		}
		return u.User + "@" + u.Host + ":" + u.Path
	}
	host := u.Host
	if u.Port != defaultSSHPort {
		host = u.HostPort()
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return (&url.URL{Scheme: "ssh", User: url.User(u.User), Host: host, Path: u.Path}).String()
}
