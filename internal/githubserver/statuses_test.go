package githubserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v57/github"
)

func TestCreateStatusThenListStatuses(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.AddToken(testToken)
	ctx := context.Background()
	c := newClient(t, s, testToken)
	head := sha("login")

	created := []*github.RepoStatus{
		{State: github.String("pending"), Context: github.String("navarch/preview"), Description: github.String("Deploying")},
		{State: github.String("success"), Context: github.String("navarch/preview"), Description: github.String("Deployed"), TargetURL: github.String("http://preview.local")},
		{State: github.String("failure"), Context: github.String("ci/lint")},
	}
	for _, st := range created {
		got, resp, err := c.Repositories.CreateStatus(ctx, "acme", "app", head, st)
		if err != nil {
			t.Fatalf("CreateStatus: %v", err)
		}
		if resp.StatusCode != http.StatusCreated || got.GetID() == 0 || got.GetState() != st.GetState() || got.GetCreator().GetLogin() == "" {
			t.Errorf("created status = %d %+v", resp.StatusCode, got)
		}
	}

	for _, ref := range []string{head, "feature/login"} {
		t.Run("list by "+ref, func(t *testing.T) {
			list, _, err := c.Repositories.ListStatuses(ctx, "acme", "app", ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, st := range list {
				got = append(got, st.GetContext()+"="+st.GetState())
			}
			want := "ci/lint=failure navarch/preview=success navarch/preview=pending"
			if strings.Join(got, " ") != want {
				t.Errorf("statuses = %v, want newest first: %s", got, want)
			}
		})
	}

	combined, _, err := c.Repositories.GetCombinedStatus(ctx, "acme", "app", head, nil)
	if err != nil {
		t.Fatal(err)
	}
	if combined.GetState() != "failure" || combined.GetTotalCount() != 2 || combined.GetSHA() != head {
		t.Errorf("combined = state %s, %d statuses, sha %s; want failure, 2 (one per context), %s",
			combined.GetState(), combined.GetTotalCount(), combined.GetSHA(), head)
	}

	stored := s.Statuses("acme", "app", head)
	if len(stored) != 3 || stored[0].State != "pending" || stored[2].Context != "ci/lint" || stored[1].TargetURL != "http://preview.local" {
		t.Errorf("Statuses() = %+v, want the three, oldest first", stored)
	}
	if got := s.Statuses("acme", "app", sha("main")); len(got) != 0 {
		t.Errorf("Statuses of another commit = %+v, want none", got)
	}
}

func TestCreateStatusIsValidated(t *testing.T) {
	s := startServer(t)
	addAppRepo(s)
	s.AddToken(testToken)
	ctx := context.Background()
	tests := []struct {
		name   string
		token  string
		status *github.RepoStatus
		want   int
	}{
		{"description of 140 characters", testToken, &github.RepoStatus{State: github.String("success"), Description: github.String(strings.Repeat("é", 140))}, http.StatusCreated},
		{"description of 141 characters", testToken, &github.RepoStatus{State: github.String("success"), Description: github.String(strings.Repeat("a", 141))}, http.StatusUnprocessableEntity},
		{"unknown state", testToken, &github.RepoStatus{State: github.String("done")}, http.StatusUnprocessableEntity},
		{"no state", testToken, &github.RepoStatus{Context: github.String("x")}, http.StatusUnprocessableEntity},
		{"anonymous", "", &github.RepoStatus{State: github.String("success")}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := newClient(t, s, tt.token).Repositories.CreateStatus(ctx, "acme", "app", sha("x"), tt.status)
			if tt.want == http.StatusCreated {
				if err != nil || resp.StatusCode != tt.want {
					t.Errorf("CreateStatus: %v, want %d", err, tt.want)
				}
				return
			}
			if got := errorStatus(t, err); got != tt.want {
				t.Errorf("CreateStatus: %v, want %d", err, tt.want)
			}
		})
	}
	if got := s.Statuses("acme", "app", sha("x")); len(got) != 1 || got[0].Context != "default" {
		t.Errorf("Statuses() = %+v, want only the valid one, with context default", got)
	}
}
