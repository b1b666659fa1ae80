package webhook

import (
	"strings"
	"testing"
)

func TestRepoKey(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://github.com/org/repo", "github.com/org/repo"},
		{"https://github.com/Org/Repo.git", "github.com/org/repo"},
		{"https://GitHub.com/org/repo/", "github.com/org/repo"},
		{"https://github.com/org/repo.git/", "github.com/org/repo"},
		{"http://github.com/org/repo", "github.com/org/repo"},
		{"https://github.com:443/org/repo", "github.com/org/repo"},
		{"https://user:token@github.com/org/repo.git", "github.com/org/repo"},
		{"ssh://git@github.com/org/repo.git", "github.com/org/repo"},
		{"ssh://git@github.com:22/org/repo", "github.com/org/repo"},
		{"git@github.com:org/repo.git", "github.com/org/repo"},
		{"git@github.com:Org/Repo", "github.com/org/repo"},
		{"github.com:org/repo", "github.com/org/repo"},
		{"git://github.com/org/repo.git", "github.com/org/repo"},
		{"  https://github.com/org/repo  ", "github.com/org/repo"},
		// A port that is not the scheme's default names another server.
		{"http://127.0.0.1:8080/git/platform.git", "127.0.0.1:8080/git/platform"},
		{"ssh://git@ghe.example:7999/org/repo.git", "ghe.example:7999/org/repo"},
		{"https://ghe.example/scm/team/sub/repo.git", "ghe.example/scm/team/sub/repo"},
		{"https://[::1]:8443/org/repo", "[::1]:8443/org/repo"},
		// Nothing to match on.
		{"", ""},
		{"/srv/git/repo.git", ""},
		{"file:///srv/git/repo.git", ""},
		{"https://github.com", ""},
		{"https://github.com/", ""},
		{"git@github.com:", ""},
		{"not a url", ""},
	} {
		if got := RepoKey(tc.url); got != tc.want {
			t.Errorf("RepoKey(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestRevision(t *testing.T) {
	for _, tc := range []struct{ rev, want string }{
		{"", "HEAD"},
		{"HEAD", "HEAD"},
		{"main", "main"},
		{"refs/heads/main", "main"},
		{"refs/heads/feature/x", "feature/x"},
		{"refs/tags/v1.2.0", "v1.2.0"},
		{"v1.2.0", "v1.2.0"},
		{"0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"},
	} {
		if got := Revision(tc.rev); got != tc.want {
			t.Errorf("Revision(%q) = %q, want %q", tc.rev, got, tc.want)
		}
	}
}

// FuzzRepoKey: a key is lower-case, has no trailing slash or user info, and is stable:
// normalising it again, with a scheme put back, changes nothing.
func FuzzRepoKey(f *testing.F) {
	for _, s := range []string{"https://github.com/org/repo.git", "git@github.com:org/repo", "ssh://u:p@h:22/a/b/", "http://[::1]:80/x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := RepoKey(s)
		if k == "" {
			return
		}
		if k != strings.ToLower(k) {
			t.Errorf("RepoKey(%q) = %q is not lower-case", s, k)
		}
		if host, _, _ := strings.Cut(k, "/"); strings.HasSuffix(k, "/") || strings.Contains(host, "@") {
			t.Errorf("RepoKey(%q) = %q ends in a slash or holds user info", s, k)
		}
		if again := RepoKey("https://" + k); again != k && plain(k) {
			t.Errorf("RepoKey(%q) = %q, but RepoKey(https://%s) = %q", s, k, k, again)
		}
	})
}

// plain reports whether k holds only characters a URL carries as they are.
func plain(k string) bool {
	for _, c := range k {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && !strings.ContainsRune("./-_~:[]", c) {
			return false
		}
	}
	return true
}
