package gitrepo

import (
	"errors"
	"strings"
	"testing"
)

func TestIsSSH(t *testing.T) {
	for raw, want := range map[string]bool{
		"ssh://git@host/org/a.git":       true,
		"SSH://host/a.git":               true,
		"git@github.com:org/a.git":       true,
		"git@[127.0.0.1:2222]:a.git":     true,
		"host:a.git":                     true, // git's reading; ParseSSHURL wants a user
		"https://host/a.git":             false,
		"http://host:8080/a.git":         false,
		"git+ssh://host/a.git":           false,
		"file:///srv/a.git":              false,
		"/srv/git/a.git":                 false,
		"./a:b":                          false,
		"apps":                           false,
		"":                               false,
		"  git@github.com:org/a.git\n  ": true,
	} {
		if got := IsSSH(raw); got != want {
			t.Errorf("IsSSH(%q) = %v, want %v", raw, got, want)
		}
	}
}

func TestParseSSHURL(t *testing.T) {
	tests := []struct {
		raw       string
		want      SSHURL
		canonical string
	}{
		{"ssh://git@github.com/org/apps.git", SSHURL{User: "git", Host: "github.com", Port: 22, Path: "/org/apps.git"},
			"ssh://git@github.com/org/apps.git"},
		{"ssh://GitHub.COM/org/Apps.git", SSHURL{User: "git", Host: "github.com", Port: 22, Path: "/org/Apps.git"},
			"ssh://git@github.com/org/Apps.git"},
		{"ssh://deploy@git.example.com:2222/a.git", SSHURL{User: "deploy", Host: "git.example.com", Port: 2222, Path: "/a.git"},
			"ssh://deploy@git.example.com:2222/a.git"},
		{"ssh://git@host:22/a.git", SSHURL{User: "git", Host: "host", Port: 22, Path: "/a.git"}, "ssh://git@host/a.git"},
		{"ssh://git@[::1]:2222/a.git", SSHURL{User: "git", Host: "::1", Port: 2222, Path: "/a.git"}, "ssh://git@[::1]:2222/a.git"},
		{"ssh://git@[::1]/a.git", SSHURL{User: "git", Host: "::1", Port: 22, Path: "/a.git"}, "ssh://git@[::1]/a.git"},
		{"ssh://git@host/a%20b.git", SSHURL{User: "git", Host: "host", Port: 22, Path: "/a b.git"}, "ssh://git@host/a%20b.git"},
		{"ssh://git@host", SSHURL{User: "git", Host: "host", Port: 22}, "ssh://git@host"},
		{"git@github.com:org/apps.git", SSHURL{User: "git", Host: "github.com", Port: 22, Path: "org/apps.git", SCPLike: true},
			"git@github.com:org/apps.git"},
		{"Git@GitHub.com:/srv/apps.git", SSHURL{User: "Git", Host: "github.com", Port: 22, Path: "/srv/apps.git", SCPLike: true},
			"Git@github.com:/srv/apps.git"},
		{"git@[127.0.0.1:2222]:apps.git", SSHURL{User: "git", Host: "127.0.0.1", Port: 2222, Path: "apps.git", SCPLike: true},
			"git@[127.0.0.1:2222]:apps.git"},
		{"git@[host]:apps.git", SSHURL{User: "git", Host: "host", Port: 22, Path: "apps.git", SCPLike: true}, "git@host:apps.git"},
		{"git@host:org/a@v1.git", SSHURL{User: "git", Host: "host", Port: 22, Path: "org/a@v1.git", SCPLike: true},
			"git@host:org/a@v1.git"},
		{"git@host:", SSHURL{User: "git", Host: "host", Port: 22, SCPLike: true}, "git@host:"},
	}
	for _, tc := range tests {
		u, err := ParseSSHURL(tc.raw)
		if err != nil {
			t.Errorf("ParseSSHURL(%q): %v", tc.raw, err)
			continue
		}
		if u != tc.want || u.String() != tc.canonical {
			t.Errorf("ParseSSHURL(%q) = %+v (%s), want %+v (%s)", tc.raw, u, u, tc.want, tc.canonical)
		}
		if again, err := ParseSSHURL(u.String()); err != nil || again != u {
			t.Errorf("ParseSSHURL(%q) = %+v, %v; want the canonical form to parse the same", u.String(), again, err)
		}
	}
}

func TestParseSSHURLRefuses(t *testing.T) {
	for _, raw := range []string{
		"github.com:org/a.git",         // scp-like without user
		"git:hunter2@github.com:a.git", // password
		"ssh://git:hunter2@host/a.git", // password
		"ssh://:hunter2@host/a.git",    // password
		"https://git@host/a.git",       // not ssh
		"ssh:///a.git",                 // no host
		"ssh://git@-oProxyCommand=x/a.git",
		"-oProxyCommand=x@host:a.git",
		"git@-oProxyCommand=x:a.git",
		"git@host:-u/evil",
		"ssh://git@host/a.git?x=1",
		"ssh://git@host/a.git#frag",
		"ssh://git@host:99999/a.git",
		"ssh://git@host:0/a.git",
		"git@[host:22:a.git",
		"git@[host:22]a.git",
		"git@[::1]:a.git",
		"git@[host:x]:a.git",
		"git@ho st:a.git",
		"us er@host:a.git",
		"git@host:a\x00.git",
		"git@host",
		"@host:a.git",
	} {
		u, err := ParseSSHURL(raw)
		if !errors.Is(err, ErrInvalidURL) {
			t.Errorf("ParseSSHURL(%q) = %+v, %v; want ErrInvalidURL", raw, u, err)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseSSHURL(%q): the error reveals the password: %v", raw, err)
		}
	}
}

func TestParseRepoURLSSH(t *testing.T) {
	for raw, canonical := range map[string]string{
		"ssh://GIT.example.com/org/apps.git":     "ssh://git@git.example.com/org/apps.git",
		"git@git.example.com:org/apps.git":       "git@git.example.com:org/apps.git",
		"git@[git.example.com:2222]:org/a.git":   "git@[git.example.com:2222]:org/a.git",
		"ssh://git@git.example.com:22/org/a.git": "ssh://git@git.example.com/org/a.git",
	} {
		u, err := parseRepoURL(raw)
		if err != nil || u.canonical != canonical || u.ssh == nil || u.origin != "" {
			t.Errorf("parseRepoURL(%q) = %+v, %v; want canonical %q over ssh", raw, u, err, canonical)
		}
	}
	for _, raw := range []string{"ssh://git@host", "ssh://git@host/", "git@host:", "git@host:/"} {
		if _, err := parseRepoURL(raw); !errors.Is(err, ErrInvalidURL) {
			t.Errorf("parseRepoURL(%q) = %v, want ErrInvalidURL (no repository path)", raw, err)
		}
	}
}

func FuzzParseSSHURL(f *testing.F) {
	for _, seed := range []string{
		"ssh://git@github.com/org/apps.git", "git@github.com:org/apps.git", "git@[127.0.0.1:2222]:a.git",
		"ssh://git@[::1]:2222/a%20b.git", "git:pw@host:a", "ssh://u:p@h/a",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ParseSSHURL(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) {
				t.Fatalf("ParseSSHURL(%q): %v, want ErrInvalidURL", raw, err)
			}
			return
		}
		if !IsSSH(raw) {
			t.Errorf("ParseSSHURL(%q) succeeded but IsSSH is false", raw)
		}
		canonical := u.String()
		again, err := ParseSSHURL(canonical)
		if err != nil || again != u {
			t.Fatalf("ParseSSHURL(%q) = %+v; its canonical form %q parses as %+v, %v", raw, u, canonical, again, err)
		}
		if strings.HasPrefix(u.Host, "-") || strings.HasPrefix(u.User, "-") || strings.HasPrefix(u.Path, "-") {
			t.Errorf("ParseSSHURL(%q) = %+v, which ssh could take for an option", raw, u)
		}
	})
}
