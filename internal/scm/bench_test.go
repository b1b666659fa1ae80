package scm

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/navarch-io/navarch/internal/githubserver"
)

// BenchmarkUnchangedPolls measures the budget "polling an unchanged GitHub repository costs no
// rate limit": 10 polls of a repository with 50 open pull requests, each after the poll window,
// through the real go-github client against the GitHub-compatible server. It reports the share
// of the polls after the first that GitHub answered 304, and the rate limit they used.
func BenchmarkUnchangedPolls(b *testing.B) {
	for b.Loop() {
		f := newFixture(b, Options{})
		for i := range 50 {
			f.server.OpenPR("acme", "app", githubserver.PullRequest{Title: "pr", Head: fmt.Sprintf("b%d", i), Base: "main",
				HeadSHA: fmt.Sprintf("%040x", i), Author: "ana"})
		}
		prov := f.github.For("team-a")
		var afterFirst int
		for poll := range 10 {
			if _, err := prov.ListPullRequests(context.Background(), f.spec("gh")); err != nil {
				b.Fatal(err)
			}
			if poll == 0 {
				afterFirst = f.rateLimitRemaining(b)
			}
			f.clock.Add(DefaultPollWindow)
		}
		used := afterFirst - f.rateLimitRemaining(b)
		notModified := 0
		for _, r := range f.requests("/repos/acme/app/pulls")[1:] {
			if r.Status == http.StatusNotModified {
				notModified++
			}
		}
		b.ReportMetric(float64(notModified)/9*100, "not-modified-%")
		b.ReportMetric(float64(used), "rate-limit-used-after-first")
	}
}

// rateLimitRemaining asks GET /rate_limit, which costs no rate limit, what the token has left.
func (f *fixture) rateLimitRemaining(tb testing.TB) int {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, f.server.APIURL()+"rate_limit", nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	_ = resp.Body.Close()
	n, err := strconv.Atoi(resp.Header.Get("X-RateLimit-Remaining"))
	if err != nil {
		tb.Fatalf("X-RateLimit-Remaining %q", resp.Header.Get("X-RateLimit-Remaining"))
	}
	return n
}
