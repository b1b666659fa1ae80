package githubserver_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v57/github"

	"github.com/navarch-io/navarch/internal/githubserver"
)

// openPRs opens n pull requests in acme/app, from branches pr-1 ... pr-n.
func openPRs(s *githubserver.Server, n int) {
	for i := 1; i <= n; i++ {
		s.OpenPR("acme", "app", githubserver.PullRequest{
			Title:   fmt.Sprintf("Change %d", i),
			Head:    fmt.Sprintf("pr-%d", i),
			HeadSHA: sha(fmt.Sprintf("pr-%d", i)),
			Author:  "alice",
		})
	}
}

// listAllPulls lists pull requests with go-github, following NextPage, and
// returns their numbers page by page.
func listAllPulls(t *testing.T, c *github.Client, state string, perPage int) [][]int {
	t.Helper()
	opts := &github.PullRequestListOptions{State: state, ListOptions: github.ListOptions{PerPage: perPage}}
	var pages [][]int
	for {
		prs, resp, err := c.PullRequests.List(context.Background(), "acme", "app", opts)
		if err != nil {
			t.Fatalf("List page %d: %v", opts.Page, err)
		}
		var numbers []int
		for _, pr := range prs {
			numbers = append(numbers, pr.GetNumber())
		}
		pages = append(pages, numbers)
		if resp.NextPage == 0 {
			return pages
		}
		if len(pages) > 10 {
			t.Fatal("more than 10 pages: NextPage never ends")
		}
		opts.Page = resp.NextPage
	}
}

func TestListPullRequestsFollowsNextPageAndFiltersByState(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	openPRs(s, 6)
	s.ClosePR("acme", "app", 2, false)
	s.ClosePR("acme", "app", 4, true)
	c := newClient(t, s, "")

	tests := []struct {
		state   string
		perPage int
		want    [][]int
	}{
		{"", 2, [][]int{{6, 5}, {3, 1}}},
		{"open", 2, [][]int{{6, 5}, {3, 1}}},
		{"closed", 2, [][]int{{4, 2}}},
		{"all", 2, [][]int{{6, 5}, {4, 3}, {2, 1}}},
		{"all", 4, [][]int{{6, 5, 4, 3}, {2, 1}}},
		{"all", 0, [][]int{{6, 5, 4, 3, 2, 1}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("state=%q per_page=%d", tt.state, tt.perPage), func(t *testing.T) {
			got := listAllPulls(t, c, tt.state, tt.perPage)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("pages = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestListPullRequestsAcrossThreePages(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	openPRs(s, 5)
	c := newClient(t, s, "")

	pages := listAllPulls(t, c, "open", 2)
	if len(pages) != 3 {
		t.Fatalf("pages = %v, want 3 pages of per_page=2 for 5 pull requests", pages)
	}
	var all []int
	for _, p := range pages {
		all = append(all, p...)
	}
	slices.Sort(all)
	if fmt.Sprint(all) != "[1 2 3 4 5]" {
		t.Errorf("pull requests listed = %v, want each of 1..5 once", all)
	}
}

func TestPaginationLinkHeaderIsGitHubs(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	openPRs(s, 5)
	base := s.URL() + "/api/v3/repos/acme/app/pulls"
	link := func(page int, rel string) string {
		return fmt.Sprintf(`<%s?page=%d&per_page=2&state=open>; rel="%s"`, base, page, rel)
	}
	tests := []struct {
		page int
		want string
	}{
		{1, link(2, "next") + ", " + link(3, "last")},
		{2, link(1, "prev") + ", " + link(3, "next") + ", " + link(3, "last") + ", " + link(1, "first")},
		{3, link(2, "prev") + ", " + link(1, "first")},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("page ", tt.page), func(t *testing.T) {
			resp := get(t, http.MethodGet, fmt.Sprintf("%s?state=open&per_page=2&page=%d", base, tt.page))
			if resp.status != http.StatusOK {
				t.Fatalf("status = %d", resp.status)
			}
			if got := resp.header.Get("Link"); got != tt.want {
				t.Errorf("Link =\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}

	if got := get(t, http.MethodGet, base+"?per_page=30").header.Get("Link"); got != "" {
		t.Errorf("single page: Link = %q, want none", got)
	}
}

func TestPullRequestJSONIsGitHubs(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	n := s.OpenPR("acme", "app", githubserver.PullRequest{
		Title:  "Add login",
		Head:   "feature/login",
		Author: "alice",
		Labels: []string{"preview", "team:web"},
	})
	s.ClosePR("acme", "app", n, true)
	ctx := context.Background()
	c := newClient(t, s, "")

	prs, _, err := c.PullRequests.List(ctx, "acme", "app", &github.PullRequestListOptions{State: "closed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 {
		t.Fatalf("closed pull requests = %d, want 1", len(prs))
	}
	single, _, err := c.PullRequests.Get(ctx, "acme", "app", n)
	if err != nil {
		t.Fatal(err)
	}
	for name, pr := range map[string]*github.PullRequest{"list": prs[0], "get": single} {
		t.Run(name, func(t *testing.T) {
			var labels []string
			for _, l := range pr.Labels {
				labels = append(labels, l.GetName())
			}
			checks := []struct {
				field     string
				got, want any
			}{
				{"number", pr.GetNumber(), 1},
				{"state", pr.GetState(), "closed"},
				{"title", pr.GetTitle(), "Add login"},
				{"html_url", pr.GetHTMLURL(), s.URL() + "/acme/app/pull/1"},
				{"user.login", pr.GetUser().GetLogin(), "alice"},
				{"labels", fmt.Sprint(labels), "[preview team:web]"},
				{"head.ref", pr.GetHead().GetRef(), "feature/login"},
				{"head.sha", pr.GetHead().GetSHA(), sha("login")},
				{"head.label", pr.GetHead().GetLabel(), "acme:feature/login"},
				{"head.repo.name", pr.GetHead().GetRepo().GetName(), "app"},
				{"head.repo.full_name", pr.GetHead().GetRepo().GetFullName(), "acme/app"},
				{"head.repo.owner.login", pr.GetHead().GetRepo().GetOwner().GetLogin(), "acme"},
				{"base.ref", pr.GetBase().GetRef(), "main"},
				{"base.sha", pr.GetBase().GetSHA(), sha("main")},
				{"base.repo.full_name", pr.GetBase().GetRepo().GetFullName(), "acme/app"},
				{"merged", pr.GetMerged(), true},
				{"created_at set", !pr.GetCreatedAt().IsZero(), true},
				{"updated_at set", !pr.GetUpdatedAt().IsZero(), true},
				{"closed_at set", !pr.GetClosedAt().IsZero(), true},
				{"merged_at set", !pr.GetMergedAt().IsZero(), true},
			}
			for _, chk := range checks {
				if chk.got != chk.want {
					t.Errorf("%s = %v, want %v", chk.field, chk.got, chk.want)
				}
			}
		})
	}

	if _, _, err := c.PullRequests.Get(ctx, "acme", "app", 99); errorStatus(t, err) != http.StatusNotFound {
		t.Errorf("Get #99: %v, want 404", err)
	}
	raw := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app/pulls/1")
	for _, field := range []string{`"closed_at":"`, `"merged":true`, `"draft":false`, `"body":null`} {
		if !strings.Contains(string(raw.body), field) {
			t.Errorf("pull request JSON lacks %s: %s", field, raw.body)
		}
	}
}

func TestOpenPullRequestTimesAreNull(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	openPRs(s, 1)
	raw := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app/pulls/1")
	for _, field := range []string{`"closed_at":null`, `"merged_at":null`, `"merged":false`, `"state":"open"`} {
		if !strings.Contains(string(raw.body), field) {
			t.Errorf("open pull request JSON lacks %s: %s", field, raw.body)
		}
	}
}

func TestConditionalRequestAnswers304WithoutCounting(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	openPRs(s, 3)
	s.AddToken(testToken)
	ctx := context.Background()
	c := newClient(t, s, testToken)
	opts := &github.PullRequestListOptions{ListOptions: github.ListOptions{PerPage: 2}}

	_, first, err := c.PullRequests.List(ctx, "acme", "app", opts)
	if err != nil {
		t.Fatal(err)
	}
	etag := first.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("ETag = %q, want a strong, quoted tag", etag)
	}
	if first.Header.Get("Cache-Control") == "" {
		t.Error("Cache-Control missing on a 200")
	}
	remaining := first.Rate.Remaining

	t.Run("go-github", func(t *testing.T) {
		req, err := c.NewRequest(http.MethodGet, "repos/acme/app/pulls?per_page=2", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("If-None-Match", etag)
		var prs []*github.PullRequest
		resp, err := c.Do(ctx, req, &prs)
		// go-github treats every non-2xx answer, 304 included, as an
		// *ErrorResponse; callers look at the status.
		if got := errorStatus(t, err); got != http.StatusNotModified {
			t.Fatalf("status = %d, want 304", got)
		}
		if resp.Rate.Remaining != remaining {
			t.Errorf("X-RateLimit-Remaining = %d after a 304, want %d (unchanged)", resp.Rate.Remaining, remaining)
		}
		if len(prs) != 0 {
			t.Errorf("decoded %d pull requests from a 304", len(prs))
		}
	})

	t.Run("plain HTTP", func(t *testing.T) {
		url := s.URL() + "/api/v3/repos/acme/app/pulls?per_page=2"
		resp := get(t, http.MethodGet, url, "Authorization", "token "+testToken, "If-None-Match", etag)
		if resp.status != http.StatusNotModified {
			t.Fatalf("status = %d, want 304", resp.status)
		}
		if len(resp.body) != 0 {
			t.Errorf("304 body = %q, want none", resp.body)
		}
		if got := resp.header.Get("X-RateLimit-Remaining"); got != fmt.Sprint(remaining) {
			t.Errorf("X-RateLimit-Remaining = %s after a 304, want %d (unchanged)", got, remaining)
		}
		if got := resp.header.Get("ETag"); got != etag {
			t.Errorf("304 ETag = %q, want %q", got, etag)
		}
		if resp.header.Get("X-GitHub-Request-Id") == "" {
			t.Error("304 without X-GitHub-Request-Id")
		}

		weak := get(t, http.MethodGet, url, "Authorization", "token "+testToken, "If-None-Match", `"other", W/`+etag)
		if weak.status != http.StatusNotModified {
			t.Errorf("If-None-Match with a list holding W/ETag: status = %d, want 304", weak.status)
		}
	})

	t.Run("representation changes", func(t *testing.T) {
		page2 := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app/pulls?per_page=2&page=2", "If-None-Match", etag)
		if page2.status != http.StatusOK || page2.header.Get("ETag") == etag {
			t.Errorf("page 2: status %d, ETag %q; want 200 with an ETag other than page 1's", page2.status, page2.header.Get("ETag"))
		}
		beyond := []string{
			get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app/pulls?page=8").header.Get("ETag"),
			get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app/pulls?page=9").header.Get("ETag"),
		}
		if beyond[0] == beyond[1] {
			t.Errorf("two empty pages share ETag %s", beyond[0])
		}

		s.EditPR("acme", "app", 3, func(pr *githubserver.PullRequest) { pr.Title = "Renamed" })
		changed := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app/pulls?per_page=2", "Authorization", "token "+testToken, "If-None-Match", etag)
		if changed.status != http.StatusOK {
			t.Errorf("after an edit: status = %d, want 200 with the new list", changed.status)
		}
		if got := changed.header.Get("X-RateLimit-Remaining"); got != fmt.Sprint(remaining-1) {
			t.Errorf("after a 200: X-RateLimit-Remaining = %s, want %d", got, remaining-1)
		}
	})
}
