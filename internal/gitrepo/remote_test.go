package gitrepo

import (
	"errors"
	"slices"
	"testing"
)

func TestParseRepoURL(t *testing.T) {
	tests := []struct {
		raw, canonical, origin string
	}{
		{"https://git.example.com/org/apps.git", "https://git.example.com/org/apps.git", "https://git.example.com"},
		{"HTTPS://Git.Example.COM:8443/Org/Apps", "https://git.example.com:8443/Org/Apps", "https://git.example.com:8443"},
	}
	for _, tc := range tests {
		u, err := parseRepoURL(tc.raw)
		if err != nil {
			t.Errorf("parseRepoURL(%q): %v", tc.raw, err)
			continue
		}
		if u.canonical != tc.canonical || u.origin != tc.origin {
			t.Errorf("parseRepoURL(%q) = %q, %q; want %q, %q", tc.raw, u.canonical, u.origin, tc.canonical, tc.origin)
		}
	}
	for _, raw := range []string{"", "apps", "/srv/git/apps", "file:///srv/git/apps", "git+ssh://git@host/apps.git", "host:apps.git", "ssh://git:pw@host/apps.git", "https://", "https://host/a#b",
		// User info is refused, whether it is credentials or a host in disguise.
		"http://bot:s3cret@127.0.0.1:8080/a.git", "http://bot@host/a.git", "http://127.0.0.1:38503@127.0.0.1:18080/probe.git"} {
		if _, err := parseRepoURL(raw); !errors.Is(err, ErrInvalidURL) {
			t.Errorf("parseRepoURL(%q) = %v, want ErrInvalidURL", raw, err)
		}
	}
}

const lsRemoteOutput = "ref: refs/heads/main\tHEAD\n" +
	"1111111111111111111111111111111111111111\tHEAD\n" +
	"1111111111111111111111111111111111111111\trefs/heads/main\n" +
	"2222222222222222222222222222222222222222\trefs/heads/v1\n" +
	"3333333333333333333333333333333333333333\trefs/tags/v1\n" +
	"4444444444444444444444444444444444444444\trefs/tags/v1^{}\n" +
	"5555555555555555555555555555555555555555\trefs/pull/7/head\n"

func TestRemoteRefsMatch(t *testing.T) {
	refs, err := parseLsRemote([]byte(lsRemoteOutput))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		revision, ref, commit string
	}{
		{"", "refs/heads/main", "1111111111111111111111111111111111111111"},
		{"HEAD", "refs/heads/main", "1111111111111111111111111111111111111111"},
		{"main", "refs/heads/main", "1111111111111111111111111111111111111111"},
		// Tags win over branches of the same name, as in git, and are
		// peeled.
		{"v1", "refs/tags/v1", "4444444444444444444444444444444444444444"},
		{"refs/heads/v1", "refs/heads/v1", "2222222222222222222222222222222222222222"},
		{"heads/v1", "refs/heads/v1", "2222222222222222222222222222222222222222"},
		{"pull/7/head", "refs/pull/7/head", "5555555555555555555555555555555555555555"},
		{"refs/pull/7/head", "refs/pull/7/head", "5555555555555555555555555555555555555555"},
	}
	for _, tc := range tests {
		ref, commit, ok := refs.match(tc.revision)
		if !ok || ref != tc.ref || commit != tc.commit {
			t.Errorf("match(%q) = %q, %q, %v; want %q, %q", tc.revision, ref, commit, ok, tc.ref, tc.commit)
		}
	}
	for _, rev := range []string{"nope", "feature/main", "tags/nope", "1111111"} {
		if ref, commit, ok := refs.match(rev); ok {
			t.Errorf("match(%q) = %q, %q; want no match", rev, ref, commit)
		}
	}

	// Without the symref (old servers), HEAD itself is fetched.
	noSymref, _ := parseLsRemote([]byte("1111111111111111111111111111111111111111\tHEAD\n"))
	if ref, _, _ := noSymref.match(""); ref != "HEAD" {
		t.Errorf("match(\"\") without symref: ref %q, want HEAD", ref)
	}
}

func TestParseLsRemoteRejectsGarbage(t *testing.T) {
	for _, out := range []string{"nonsense\n", "1234\trefs/heads/main\n", "<html>\n"} {
		if _, err := parseLsRemote([]byte(out)); err == nil {
			t.Errorf("parseLsRemote(%q) succeeded", out)
		}
	}
}

func TestLsRemotePatterns(t *testing.T) {
	tests := map[string][]string{
		"":     {"HEAD"},
		"HEAD": {"HEAD"},
		"0123456789abcdef0123456789abcdef01234567": {"HEAD"},
		"main":    {"main", "main^{}"},
		"v1.2.3":  {"v1.2.3", "v1.2.3^{}"},
		"abc1234": {"abc1234", "abc1234^{}"},
	}
	for rev, want := range tests {
		if got := lsRemotePatterns(rev); !slices.Equal(got, want) {
			t.Errorf("lsRemotePatterns(%q) = %q, want %q", rev, got, want)
		}
	}
}

func TestValidRevision(t *testing.T) {
	for _, rev := range []string{"", "HEAD", "main", "feature/x-1", "v1.2.3", "refs/pull/1/head", "release@2024", "0123abc"} {
		if !validRevision(rev) {
			t.Errorf("validRevision(%q) = false", rev)
		}
	}
	for _, rev := range []string{"-c", "--upload-pack=x", "a..b", "main~1", "main^", "a:b", "a b", "a\nb", "*", "ma?n", "[x]", `a\b`, "main@{1}", "x/", "x.lock", "a//b"} {
		if validRevision(rev) {
			t.Errorf("validRevision(%q) = true", rev)
		}
	}
}

func TestSHAForms(t *testing.T) {
	full := "0123456789abcdef0123456789ABCDEF01234567"
	if !isFullSHA(full) || isShortSHA(full) {
		t.Errorf("full SHA misclassified")
	}
	for _, s := range []string{"abcd", "abc1234", full[:39]} {
		if !isShortSHA(s) || isFullSHA(s) {
			t.Errorf("%q should be an abbreviated SHA", s)
		}
	}
	for _, s := range []string{"abc", "main", "abcg123", full + "0"} {
		if isShortSHA(s) || isFullSHA(s) {
			t.Errorf("%q should be no SHA", s)
		}
	}
}

func FuzzParseLsRemote(f *testing.F) {
	f.Add([]byte(lsRemoteOutput))
	f.Add([]byte("ref: refs/heads/main\tHEAD\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		refs, err := parseLsRemote(out)
		if err != nil {
			return
		}
		for _, rev := range []string{"", "main", "v1", "refs/heads/main"} {
			refs.match(rev)
		}
	})
}
