package render

import (
	"errors"
	"testing"
)

func TestParseGitRef(t *testing.T) {
	tests := []struct {
		in   string
		want gitRef
	}{
		// GitHub, with and without scheme, normalised to https with ".git".
		{"github.com/org/repo//path?ref=v1", gitRef{"https://github.com/org/repo.git", "v1", "path"}},
		{"github.com/org/repo/path?ref=v1", gitRef{"https://github.com/org/repo.git", "v1", "path"}},
		{"github.com/org/repo", gitRef{"https://github.com/org/repo.git", "", "."}},
		{"GitHub.com:org/repo//a/b", gitRef{"https://github.com/org/repo.git", "", "a/b"}},
		{"https://github.com/org/repo//deploy?ref=v1.0.0", gitRef{"https://github.com/org/repo.git", "v1.0.0", "deploy"}},
		{"https://github.com/org/repo.git//deploy", gitRef{"https://github.com/org/repo.git", "", "deploy"}},
		{"git@github.com:org/repo.git/base", gitRef{"git@github.com:org/repo.git", "", "base"}},
		{"ssh://git@github.com/org/repo//base", gitRef{"git@github.com:org/repo.git", "", "base"}},

		// Other hosts: the repository ends at "//", at ".git", at "_git/<name>", or after two
		// segments.
		{"https://host/org/repo.git//path?ref=v1", gitRef{"https://host/org/repo.git", "v1", "path"}},
		{"https://host/org/repo//path?ref=v1", gitRef{"https://host/org/repo", "v1", "path"}},
		{"https://host/group/sub/repo.git/path/deeper", gitRef{"https://host/group/sub/repo.git", "", "path/deeper"}},
		{"https://host/org/repo/path?ref=main", gitRef{"https://host/org/repo", "main", "path"}},
		{"https://host:8443/org/repo", gitRef{"https://host:8443/org/repo", "", "."}},
		{"http://host/org/repo.git", gitRef{"http://host/org/repo.git", "", "."}},
		{"https://dev.azure.com/org/project/_git/repo/path?ref=v1", gitRef{"https://dev.azure.com/org/project/_git/repo", "v1", "path"}},
		{"https://host/org/my.gitops/repo.git//x", gitRef{"https://host/org/my.gitops/repo.git", "", "x"}},
		{"git::https://host/org/repo.git//path?ref=v1", gitRef{"https://host/org/repo.git", "v1", "path"}},
		{"GIT::HTTPS://host/org/repo//path", gitRef{"https://host/org/repo", "", "path"}},
		{"ssh://git@host/org/repo.git//path?ref=v2", gitRef{"ssh://git@host/org/repo.git", "v2", "path"}},
		{"ssh://host:2222/org/repo.git", gitRef{"ssh://host:2222/org/repo.git", "", "."}},
		{"git@host:org/repo.git//path?ref=v3", gitRef{"git@host:org/repo.git", "v3", "path"}},
		{"deploy-bot@host:org/repo//path", gitRef{"deploy-bot@host:org/repo", "", "path"}},

		// Queries: version is ref's alias, ref wins, timeout and submodules are ignored.
		{"https://host/org/repo//path?version=v4", gitRef{"https://host/org/repo", "v4", "path"}},
		{"https://host/org/repo//path?version=v4&ref=v5", gitRef{"https://host/org/repo", "v5", "path"}},
		{"https://host/org/repo//path?timeout=90s&submodules=false&ref=abc123", gitRef{"https://host/org/repo", "abc123", "path"}},

		// The directory is cleaned.
		{"https://host/org/repo//a/./b/../c/", gitRef{"https://host/org/repo", "", "a/c"}},
		{"https://host/org/repo//", gitRef{"https://host/org/repo", "", "."}},
	}
	for _, tt := range tests {
		got, err := parseGitRef(tt.in)
		if err != nil {
			t.Errorf("parseGitRef(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("parseGitRef(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if !isRemote(tt.in) {
			t.Errorf("isRemote(%q) = false", tt.in)
		}
	}
}

func TestParseGitRefRefuses(t *testing.T) {
	tests := []struct {
		in   string
		want string
		is   error
	}{
		// Files to download, not repositories.
		{in: "https://example.com/deploy.yaml", is: errFileURL},
		{in: "http://example.com/manifests/all.json", is: errFileURL},
		{in: "https://raw.githubusercontent.com/org/repo/main/deploy.yaml", is: errFileURL},
		{in: "file:///srv/git/repo.git//base", is: errFileGit},
		{in: "git::file:///srv/git/repo", is: errFileGit},
		// Not enough to name a repository, or a directory outside it.
		{in: "github.com/org", want: "no repository path"},
		{in: "https://host/repo", want: "no repository path"},
		{in: "https://host/org/repo//../other", want: "the directory leaves the repository"},
		{in: "github.com/org/repo//a/../../b", want: "the directory leaves the repository"},
		{in: "https:///org/repo.git", want: "no host"},
		{in: "https://host/org/repo//x?ref=%zz", want: `query: invalid URL escape "%zz"`},
		{in: "host:org/repo", want: "not a Git URL"},
		{in: "../base", want: "not a Git URL"},
	}
	for _, tt := range tests {
		got, err := parseGitRef(tt.in)
		switch {
		case err == nil:
			t.Errorf("parseGitRef(%q) = %+v, want an error", tt.in, got)
		case tt.is != nil && !errors.Is(err, tt.is):
			t.Errorf("parseGitRef(%q) error = %v, want %v", tt.in, err, tt.is)
		case tt.want != "" && err.Error() != tt.want:
			t.Errorf("parseGitRef(%q) error = %q, want %q", tt.in, err, tt.want)
		}
	}
}

func TestGitRefString(t *testing.T) {
	for _, tt := range []struct {
		ref  gitRef
		want string
	}{
		{gitRef{"https://github.com/org/repo.git", "v1", "web"}, "https://github.com/org/repo.git//web?ref=v1"},
		{gitRef{"git@host:org/repo.git", "", "."}, "git@host:org/repo.git"},
		{gitRef{"https://host/org/repo", "main", "."}, "https://host/org/repo?ref=main"},
	} {
		if got := tt.ref.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.ref, got, tt.want)
		}
	}
}
