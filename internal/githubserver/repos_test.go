package githubserver_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-github/v57/github"

	"github.com/navarch-io/navarch/internal/githubserver"
)

// repoNames lists the full names of repositories.
func repoNames(repos []*github.Repository) []string {
	var names []string
	for _, r := range repos {
		names = append(names, r.GetFullName())
	}
	return names
}

func TestGetRepository(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.AddRepo("acme", "legacy", githubserver.Repo{DefaultBranch: "master", Archived: true, CloneURL: "http://git.local/legacy.git"})
	ctx := context.Background()
	c := newClient(t, s, "")

	tests := []struct {
		repo                                        string
		defaultBranch, cloneURL, topics, visibility string
		archived                                    bool
	}{
		{"app", "main", s.URL() + "/acme/app.git", "[navarch preview]", "public", false},
		{"legacy", "master", "http://git.local/legacy.git", "[]", "public", true},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			r, _, err := c.Repositories.Get(ctx, "acme", tt.repo)
			if err != nil {
				t.Fatal(err)
			}
			checks := []struct {
				field     string
				got, want any
			}{
				{"name", r.GetName(), tt.repo},
				{"full_name", r.GetFullName(), "acme/" + tt.repo},
				{"owner.login", r.GetOwner().GetLogin(), "acme"},
				{"default_branch", r.GetDefaultBranch(), tt.defaultBranch},
				{"clone_url", r.GetCloneURL(), tt.cloneURL},
				{"html_url", r.GetHTMLURL(), s.URL() + "/acme/" + tt.repo},
				{"ssh_url", r.GetSSHURL(), "git@127.0.0.1:acme/" + tt.repo + ".git"},
				{"topics", fmt.Sprint(r.Topics), tt.topics},
				{"visibility", r.GetVisibility(), tt.visibility},
				{"private", r.GetPrivate(), false},
				{"archived", r.GetArchived(), tt.archived},
			}
			for _, chk := range checks {
				if chk.got != chk.want {
					t.Errorf("%s = %v, want %v", chk.field, chk.got, chk.want)
				}
			}
		})
	}

	_, _, err := c.Repositories.Get(ctx, "acme", "missing")
	if errorStatus(t, err) != http.StatusNotFound {
		t.Errorf("unknown repository: %v, want 404", err)
	}
	if r, _, err := c.Repositories.Get(ctx, "ACME", "App"); err != nil || r.GetFullName() != "acme/app" {
		t.Errorf("names are case-insensitive on GitHub: got %v, %v", r.GetFullName(), err)
	}
}

func TestListOwnerRepositoriesIsPaginated(t *testing.T) {
	s := startServer(t)
	for _, name := range []string{"delta", "alpha", "charlie", "bravo", "echo"} {
		s.AddRepo("acme", name, githubserver.Repo{})
	}
	s.AddRepo("other", "zulu", githubserver.Repo{})
	ctx := context.Background()
	c := newClient(t, s, "")

	collect := func(list func(page int) ([]*github.Repository, *github.Response, error)) [][]string {
		var pages [][]string
		for page := 1; page != 0; {
			repos, resp, err := list(page)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, repoNames(repos))
			page = resp.NextPage
		}
		return pages
	}
	tests := []struct {
		name string
		list func(page int) ([]*github.Repository, *github.Response, error)
		want string
	}{
		{"org: newest first", func(page int) ([]*github.Repository, *github.Response, error) {
			return c.Repositories.ListByOrg(ctx, "acme", &github.RepositoryListByOrgOptions{ListOptions: github.ListOptions{PerPage: 2, Page: page}})
		}, "[[acme/echo acme/bravo] [acme/charlie acme/alpha] [acme/delta]]"},
		{"org: by name", func(page int) ([]*github.Repository, *github.Response, error) {
			return c.Repositories.ListByOrg(ctx, "acme", &github.RepositoryListByOrgOptions{Sort: "full_name", ListOptions: github.ListOptions{PerPage: 3, Page: page}})
		}, "[[acme/alpha acme/bravo acme/charlie] [acme/delta acme/echo]]"},
		{"user: by name", func(page int) ([]*github.Repository, *github.Response, error) {
			return c.Repositories.ListByUser(ctx, "acme", &github.RepositoryListByUserOptions{ListOptions: github.ListOptions{PerPage: 2, Page: page}})
		}, "[[acme/alpha acme/bravo] [acme/charlie acme/delta] [acme/echo]]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(collect(tt.list)); got != tt.want {
				t.Errorf("pages = %s, want %s", got, tt.want)
			}
		})
	}

	if _, _, err := c.Repositories.ListByOrg(ctx, "nobody", nil); errorStatus(t, err) != http.StatusNotFound {
		t.Errorf("unknown org: %v, want 404", err)
	}
}

func TestBranches(t *testing.T) {
	s := startServer(t)
	s.AddRepo("acme", "app", githubserver.Repo{Branches: map[string]string{
		"main": sha("main"), "feature/login": sha("login"), "dev": sha("dev"),
	}})
	ctx := context.Background()
	c := newClient(t, s, "")

	var got []string
	opts := &github.BranchListOptions{ListOptions: github.ListOptions{PerPage: 2}}
	for {
		branches, resp, err := c.Repositories.ListBranches(ctx, "acme", "app", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range branches {
			got = append(got, b.GetName()+"@"+b.GetCommit().GetSHA()[:6])
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	want := fmt.Sprint([]string{"dev@" + sha("dev")[:6], "feature/login@" + sha("login")[:6], "main@" + sha("main")[:6]})
	if fmt.Sprint(got) != want {
		t.Errorf("branches = %v, want %s", got, want)
	}

	tests := []struct {
		branch string
		want   int
		sha    string
	}{
		{"main", http.StatusOK, sha("main")},
		{"feature/login", http.StatusOK, sha("login")},
		{"nope", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.branch, func(t *testing.T) {
			b, resp, err := c.Repositories.GetBranch(ctx, "acme", "app", tt.branch, 0)
			if tt.want != http.StatusOK {
				// GetBranch follows redirects itself and reports other
				// statuses as a plain error with the response.
				if err == nil || resp == nil || resp.StatusCode != tt.want {
					t.Errorf("GetBranch: %v, %v; want an error with status %d", resp, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.GetName() != tt.branch || b.GetCommit().GetSHA() != tt.sha {
				t.Errorf("branch = %s@%s, want %s@%s", b.GetName(), b.GetCommit().GetSHA(), tt.branch, tt.sha)
			}
		})
	}
}

func TestContents(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	ctx := context.Background()
	c := newClient(t, s, "")

	tests := []struct {
		name, path, ref string
		want            int
		file            string   // the path of the file answered
		entries         []string // or the entries of the directory
	}{
		{"file on the default branch", "README.md", "", http.StatusOK, "README.md", nil},
		{"nested file", "deploy/base/kustomization.yaml", "main", http.StatusOK, "deploy/base/kustomization.yaml", nil},
		{"directory", "deploy", "main", http.StatusOK, "", []string{"dir:deploy/base", "dir:deploy/overlays"}},
		{"directory with trailing slash", "deploy/overlays/", "main", http.StatusOK, "", []string{"dir:deploy/overlays/dev"}},
		{"root", "", "main", http.StatusOK, "", []string{"file:README.md", "dir:deploy"}},
		{"file on a branch with a slash", "README.md", "feature/login", http.StatusOK, "README.md", nil},
		{"ref by head SHA", "deploy", sha("main"), http.StatusOK, "", []string{"dir:deploy/base", "dir:deploy/overlays"}},
		{"missing file", "deploy/prod.yaml", "main", http.StatusNotFound, "", nil},
		{"not on that branch", "deploy", "feature/login", http.StatusNotFound, "", nil},
		{"unknown ref", "README.md", "nope", http.StatusNotFound, "", nil},
		{"prefix is not a directory", "depl", "main", http.StatusNotFound, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, dir, _, err := c.Repositories.GetContents(ctx, "acme", "app", tt.path, &github.RepositoryContentGetOptions{Ref: tt.ref})
			if tt.want != http.StatusOK {
				if errorStatus(t, err) != tt.want {
					t.Errorf("GetContents: %v, want %d", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.file != "" {
				if file == nil || file.GetType() != "file" || file.GetPath() != tt.file {
					t.Fatalf("file = %+v, want the file %s", file, tt.file)
				}
				if content, err := file.GetContent(); err != nil || content != "" {
					t.Errorf("content = %q, %v; want empty", content, err)
				}
				return
			}
			var entries []string
			for _, e := range dir {
				entries = append(entries, e.GetType()+":"+e.GetPath())
			}
			if fmt.Sprint(entries) != fmt.Sprint(tt.entries) {
				t.Errorf("entries = %v, want %v", entries, tt.entries)
			}
		})
	}

	for path, want := range map[string]int{"README.md": http.StatusOK, "deploy": http.StatusOK, "nope.md": http.StatusNotFound} {
		resp := get(t, http.MethodHead, s.URL()+"/api/v3/repos/acme/app/contents/"+path+"?ref=main")
		if resp.status != want || len(resp.body) != 0 {
			t.Errorf("HEAD %s: status %d with %d body bytes, want %d without a body", path, resp.status, len(resp.body), want)
		}
		if want == http.StatusOK && resp.header.Get("ETag") == "" {
			t.Errorf("HEAD %s: no ETag", path)
		}
	}
}
