package githubserver_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/google/go-github/v57/github"

	"github.com/navarch-io/navarch/internal/githubserver"
)

func TestRemoteDrivesTheServerThroughTheAdminAPI(t *testing.T) {
	s := startServer(t)
	rm := githubserver.Remote{URL: s.URL()}
	ctx := context.Background()
	hook := newReceiver(t, "hook-secret")

	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("AddRepo", rm.AddRepo(ctx, "acme", "app", githubserver.Repo{
		Private:  true,
		Branches: map[string]string{"main": sha("main"), "feature": sha("feature")},
		Files:    map[string][]string{"main": {"deploy/app.yaml"}},
	}))
	must("AddToken", rm.AddToken(ctx, "remote-token"))
	must("AddHook", rm.AddHook(ctx, "acme", "app", hook.srv.URL, hook.secret))

	c := newClient(t, s, "remote-token")
	if repo, _, err := c.Repositories.Get(ctx, "acme", "app"); err != nil || !repo.GetPrivate() {
		t.Fatalf("the private repository with the added token: %v, %v", repo, err)
	}
	if _, _, _, err := c.Repositories.GetContents(ctx, "acme", "app", "deploy/app.yaml", nil); err != nil {
		t.Errorf("contents added through the admin API: %v", err)
	}

	n, err := rm.OpenPR(ctx, "acme", "app", githubserver.PullRequest{Title: "Feature", Head: "feature", Labels: []string{"preview"}})
	must("OpenPR", err)
	if n != 1 {
		t.Errorf("OpenPR = %d, want 1", n)
	}
	must("EditPR", rm.EditPR(ctx, "acme", "app", n, func(pr *githubserver.PullRequest) {
		if pr.Title != "Feature" || pr.Head != "feature" || !slices.Equal(pr.Labels, []string{"preview"}) {
			t.Errorf("EditPR sees %+v, want the pull request as opened", pr)
		}
		pr.Title = "Feature, renamed"
		pr.Labels = nil
	}))
	must("PushPR", rm.PushPR(ctx, "acme", "app", n, sha("feature-2")))
	must("Push", rm.Push(ctx, "acme", "app", "feature", sha("feature-3")))

	pr, _, err := c.PullRequests.Get(ctx, "acme", "app", n)
	must("Get", err)
	if pr.GetTitle() != "Feature, renamed" || len(pr.Labels) != 0 || pr.GetHead().GetSHA() != sha("feature-3") {
		t.Errorf("pull request = title %q, labels %v, head %s", pr.GetTitle(), pr.Labels, pr.GetHead().GetSHA())
	}
	must("ClosePR", rm.ClosePR(ctx, "acme", "app", n, false))
	if pr, _, err := c.PullRequests.Get(ctx, "acme", "app", n); err != nil || pr.GetState() != "closed" || pr.GetMerged() {
		t.Errorf("after ClosePR: %v %v", pr.GetState(), err)
	}
	want := "pull_request/opened pull_request/edited pull_request/unlabeled pull_request/synchronize push pull_request/synchronize pull_request/closed"
	if got := describe(hook.take()); got != want {
		t.Errorf("webhooks = %q, want %q", got, want)
	}

	head := sha("feature-3")
	if _, _, err := c.Repositories.CreateStatus(ctx, "acme", "app", head, &github.RepoStatus{State: github.String("success"), Context: github.String("navarch")}); err != nil {
		t.Fatal(err)
	}
	statuses, err := rm.Statuses(ctx, "acme", "app", head)
	must("Statuses", err)
	if len(statuses) != 1 || statuses[0].State != "success" || statuses[0].Context != "navarch" || statuses[0].CreatedAt.IsZero() {
		t.Errorf("Statuses = %+v, want the one created", statuses)
	}
}

func TestRemoteErrors(t *testing.T) {
	s := startServer(t)
	s.AddRepo("acme", "app", githubserver.Repo{})
	rm := githubserver.Remote{URL: s.URL()}
	ctx := context.Background()
	tests := []struct {
		name     string
		call     func() error
		status   int
		notFound bool
	}{
		{"OpenPR in an unknown repository", func() error {
			_, err := rm.OpenPR(ctx, "acme", "nope", githubserver.PullRequest{Head: "x"})
			return err
		}, http.StatusNotFound, true},
		{"OpenPR without head", func() error {
			_, err := rm.OpenPR(ctx, "acme", "app", githubserver.PullRequest{Title: "x"})
			return err
		}, http.StatusUnprocessableEntity, false},
		{"PushPR of an unknown pull request", func() error { return rm.PushPR(ctx, "acme", "app", 7, sha("x")) }, http.StatusNotFound, true},
		{"EditPR of an unknown pull request", func() error {
			return rm.EditPR(ctx, "acme", "app", 7, func(*githubserver.PullRequest) {})
		}, http.StatusNotFound, true},
		{"ClosePR of an unknown pull request", func() error { return rm.ClosePR(ctx, "acme", "app", 7, true) }, http.StatusNotFound, true},
		{"deleting the default branch", func() error { return rm.Push(ctx, "acme", "app", "main", "") }, http.StatusUnprocessableEntity, false},
		{"AddHook without URL", func() error { return rm.AddHook(ctx, "acme", "app", "", "x") }, http.StatusUnprocessableEntity, false},
		{"Statuses of an unknown repository", func() error {
			_, err := rm.Statuses(ctx, "acme", "nope", sha("x"))
			return err
		}, http.StatusNotFound, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var re *githubserver.RemoteError
			if !errors.As(err, &re) || re.StatusCode != tt.status || re.Message == "" {
				t.Fatalf("error = %v (%T), want a *RemoteError with status %d and a message", err, err, tt.status)
			}
			if got := errors.Is(err, githubserver.ErrNotFound); got != tt.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", got, tt.notFound)
			}
		})
	}

	if err := (githubserver.Remote{URL: "http://127.0.0.1:1"}).AddToken(ctx, "x"); err == nil {
		t.Error("AddToken to a server that is not there succeeded")
	}
}

func TestServerPanicsOnChangesToWhatDoesNotExist(t *testing.T) {
	s := startServer(t)
	s.AddRepo("acme", "app", githubserver.Repo{})
	tests := []struct {
		name   string
		change func()
	}{
		{"OpenPR in an unknown repository", func() { s.OpenPR("acme", "nope", githubserver.PullRequest{Head: "x"}) }},
		{"PushPR of an unknown pull request", func() { s.PushPR("acme", "app", 3, sha("x")) }},
		{"EditPR of an unknown pull request", func() { s.EditPR("acme", "app", 3, func(*githubserver.PullRequest) {}) }},
		{"ClosePR of an unknown pull request", func() { s.ClosePR("acme", "app", 3, false) }},
		{"AddHook to an unknown repository", func() { s.AddHook("acme", "nope", "http://127.0.0.1:1", "") }},
		{"Push to an unknown repository", func() { s.Push("acme", "nope", "main", sha("x")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tt.change()
		})
	}
}
