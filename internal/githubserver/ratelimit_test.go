package githubserver_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v57/github"
)

func TestPrimaryRateLimitExhaustionIsGoGithubsRateLimitError(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.AddToken(testToken)
	reset := time.Now().Add(30 * time.Minute).Truncate(time.Second)
	s.SetRateLimit(100, 2, reset)
	ctx := context.Background()
	c := newClient(t, s, testToken)

	for want := 1; want >= 0; want-- {
		_, resp, err := c.Repositories.Get(ctx, "acme", "app")
		if err != nil {
			t.Fatalf("request while %d remain: %v", want+1, err)
		}
		if resp.Rate.Remaining != want || resp.Rate.Limit != 100 || !resp.Rate.Reset.Time.Equal(reset) {
			t.Errorf("rate = %+v, want remaining %d of 100 until %v", resp.Rate, want, reset)
		}
	}

	// A fresh client, which has not seen remaining reach 0, goes to the
	// server and gets GitHub's 403.
	_, _, err := newClient(t, s, testToken).Repositories.Get(ctx, "acme", "app")
	var rle *github.RateLimitError
	if !errors.As(err, &rle) {
		t.Fatalf("error = %v (%T), want *github.RateLimitError", err, err)
	}
	if rle.Response.StatusCode != http.StatusForbidden || rle.Rate.Remaining != 0 || !rle.Rate.Reset.Time.Equal(reset) {
		t.Errorf("RateLimitError: status %d, rate %+v; want 403 with remaining 0 until %v", rle.Response.StatusCode, rle.Rate, reset)
	}
	if !strings.Contains(rle.Message, "API rate limit exceeded") {
		t.Errorf("message = %q, want GitHub's API rate limit exceeded", rle.Message)
	}

	// The limit is per token: anonymous requests have their own bucket.
	_, resp, err := newClient(t, s, "").Repositories.Get(ctx, "acme", "app")
	if err != nil || resp.Rate.Remaining != 1 {
		t.Errorf("anonymous request: err %v, remaining %d; want its own bucket (2 left, now 1)", err, resp.Rate.Remaining)
	}
}

func TestPrimaryRateLimitRefillsAfterReset(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.SetRateLimit(10, 0, time.Now().Add(-time.Second))

	resp := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app")
	if resp.status != http.StatusOK {
		t.Fatalf("status = %d after the reset time, want 200", resp.status)
	}
	if got := resp.header.Get("X-RateLimit-Remaining"); got != "9" {
		t.Errorf("X-RateLimit-Remaining = %s, want 9: refilled to 10, one used", got)
	}
	reset, _ := strconv.ParseInt(resp.header.Get("X-RateLimit-Reset"), 10, 64)
	if until := time.Until(time.Unix(reset, 0)); until < 59*time.Minute || until > time.Hour {
		t.Errorf("new reset in %v, want an hour from now", until)
	}
}

func TestDefaultRateLimitsAndRateLimitEndpoint(t *testing.T) {
	s := startServer(t)
	s.AddToken(testToken)
	ctx := context.Background()
	tests := []struct {
		name  string
		token string
		limit int
	}{
		{"anonymous", "", 60},
		{"token", testToken, 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, s, tt.token)
			for range 2 {
				limits, _, err := c.RateLimit.Get(ctx)
				if err != nil {
					t.Fatal(err)
				}
				core := limits.GetCore()
				if core.Limit != tt.limit || core.Remaining != tt.limit {
					t.Errorf("core = %+v, want %d of %d remaining: /rate_limit does not count", core, tt.limit, tt.limit)
				}
			}
		})
	}
}

func TestSecondaryRateLimit(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	ctx := context.Background()

	t.Run("403 is go-github's AbuseRateLimitError", func(t *testing.T) {
		s.SecondaryLimit(http.StatusForbidden, 30*time.Second)
		t.Cleanup(func() { s.SecondaryLimit(0, 0) })
		_, resp, err := newClient(t, s, "").Repositories.Get(ctx, "acme", "app")
		var arle *github.AbuseRateLimitError
		if !errors.As(err, &arle) {
			t.Fatalf("error = %v (%T), want *github.AbuseRateLimitError", err, err)
		}
		if arle.RetryAfter == nil || *arle.RetryAfter < 29*time.Second || *arle.RetryAfter > 30*time.Second {
			t.Errorf("RetryAfter = %v, want about 30s", arle.RetryAfter)
		}
		if resp.Rate.Remaining != 60 {
			t.Errorf("remaining = %d, want 60: a secondary limit does not use the primary one", resp.Rate.Remaining)
		}
	})

	t.Run("429 with Retry-After", func(t *testing.T) {
		s.SecondaryLimit(http.StatusTooManyRequests, 90*time.Second)
		t.Cleanup(func() { s.SecondaryLimit(0, 0) })
		resp := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app")
		if resp.status != http.StatusTooManyRequests {
			t.Fatalf("status = %d, want 429", resp.status)
		}
		if got := resp.header.Get("Retry-After"); got != "90" {
			t.Errorf("Retry-After = %q, want 90", got)
		}
		if got := message(t, resp.body); !strings.Contains(got, "secondary rate limit") {
			t.Errorf("message = %q, want GitHub's secondary rate limit message", got)
		}
	})

	t.Run("ends after retryAfter", func(t *testing.T) {
		s.SecondaryLimit(http.StatusForbidden, 300*time.Millisecond)
		if got := get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app").status; got != http.StatusForbidden {
			t.Fatalf("status during the limit = %d, want 403", got)
		}
		deadline := time.Now().Add(5 * time.Second)
		for get(t, http.MethodGet, s.URL()+"/api/v3/repos/acme/app").status != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatal("still limited 5s after a 300ms secondary limit")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

func TestFailAnswersEveryRequestUntilCleared(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	ctx := context.Background()
	c := newClient(t, s, "")

	for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable} {
		s.Fail(status)
		for _, path := range []string{"/api/v3/repos/acme/app", "/api/v3/rate_limit", "/api/v3/repos/acme/app/pulls"} {
			if got := get(t, http.MethodGet, s.URL()+path).status; got != status {
				t.Errorf("Fail(%d): GET %s = %d", status, path, got)
			}
		}
		if _, _, err := c.Repositories.Get(ctx, "acme", "app"); errorStatus(t, err) != status {
			t.Errorf("Fail(%d): go-github error %v", status, err)
		}
	}
	s.Fail(0)
	if _, _, err := c.Repositories.Get(ctx, "acme", "app"); err != nil {
		t.Errorf("after Fail(0): %v", err)
	}
}

func TestDelayMakesClientsTimeOut(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.Delay(2 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, _, err := newClient(t, s, "").Repositories.Get(ctx, "acme", "app")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want context.DeadlineExceeded", err)
	}

	s.Delay(0)
	if _, _, err := newClient(t, s, "").Repositories.Get(context.Background(), "acme", "app"); err != nil {
		t.Errorf("after Delay(0): %v", err)
	}
}
