package generators

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestPullRequests(t *testing.T) {
	prs := prList{prs: []PullRequest{
		{Number: 12, Title: "Add login", Branch: "feature/Add_Login&Stuff", TargetBranch: "main", HeadSHA: "0123456789abcdef", Author: "ana", Labels: []string{"preview", "team-a"}},
		{Number: 13, Title: "WIP: refactor", Branch: "refactor", TargetBranch: "release/1.2", HeadSHA: "abc", Author: "bo", Labels: []string{"preview"}},
		{Number: 14, Title: "Docs", Branch: "docs", TargetBranch: "main", HeadSHA: "fedcba9876543210", Author: "cy"},
	}}
	gh := func(labels ...string) *navarchv1.PullRequestGeneratorGithub {
		return &navarchv1.PullRequestGeneratorGithub{Owner: "org", Repo: "app", Labels: labels}
	}
	tests := []struct {
		name       string
		goTemplate bool
		lister     PullRequestLister
		spec       navarchv1.PullRequestGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name:   "parameters of a labelled pull request",
			lister: prs,
			spec:   navarchv1.PullRequestGenerator{Github: gh("preview", "team-a")},
			want: []map[string]any{{
				"number": "12", "title": "Add login", "branch": "feature/Add_Login&Stuff", "branch_slug": "feature-add-loginandstuff",
				"target_branch": "main", "target_branch_slug": "main", "head_sha": "0123456789abcdef",
				"head_short_sha": "01234567", "head_short_sha_7": "0123456", "author": "ana",
				ParamPullRequest: "org/app#12@0123456789abcdef",
			}},
		},
		{
			name:       "goTemplate adds labels; short SHAs of short hashes",
			goTemplate: true,
			lister:     prs,
			spec: navarchv1.PullRequestGenerator{Github: gh("preview"), Filters: []navarchv1.PullRequestGeneratorFilter{
				{TargetBranchMatch: ptr(`^release/`)},
			}},
			want: []map[string]any{{
				"number": "13", "title": "WIP: refactor", "branch": "refactor", "branch_slug": "refactor",
				"target_branch": "release/1.2", "target_branch_slug": "release-1-2", "head_sha": "abc",
				"head_short_sha": "abc", "head_short_sha_7": "abc", "author": "bo", "labels": []string{"preview"},
				ParamPullRequest: "org/app#13@abc",
			}},
		},
		{
			name:   "a pull request is kept when any filter matches all its expressions",
			lister: prs,
			spec: navarchv1.PullRequestGenerator{Github: gh(), Filters: []navarchv1.PullRequestGeneratorFilter{
				{BranchMatch: ptr("^feature/"), TitleMatch: ptr("^WIP")},
				{TitleMatch: ptr("^Docs$")},
			}},
			want: []map[string]any{{
				"number": "14", "title": "Docs", "branch": "docs", "branch_slug": "docs",
				"target_branch": "main", "target_branch_slug": "main", "head_sha": "fedcba9876543210",
				"head_short_sha": "fedcba98", "head_short_sha_7": "fedcba9", "author": "cy",
				ParamPullRequest: "org/app#14@fedcba9876543210",
			}},
		},
		{
			name:    "no lister yet",
			spec:    navarchv1.PullRequestGenerator{Github: gh()},
			wantErr: "spec.generators[0].pullRequest: no pull-request lister configured",
		},
		{
			name:    "a failing list is an error",
			lister:  prList{err: errors.New("403 rate limited")},
			spec:    navarchv1.PullRequestGenerator{Github: gh()},
			wantErr: "spec.generators[0].pullRequest: list pull requests of org/app: 403 rate limited",
		},
		{
			name:    "invalid regular expression",
			lister:  prs,
			spec:    navarchv1.PullRequestGenerator{Github: gh(), Filters: []navarchv1.PullRequestGeneratorFilter{{}, {TitleMatch: ptr("([")}}},
			wantErr: "spec.generators[0].pullRequest.filters[1].titleMatch: error parsing regexp",
		},
		{
			name:   "values see the pull request's parameters",
			lister: prs,
			spec: navarchv1.PullRequestGenerator{Github: gh("preview", "team-a"), Values: map[string]string{
				"host": "pr-{{number}}.preview.example.com", "tier": "preview",
			}},
			want: []map[string]any{{
				"number": "12", "title": "Add login", "branch": "feature/Add_Login&Stuff", "branch_slug": "feature-add-loginandstuff",
				"target_branch": "main", "target_branch_slug": "main", "head_sha": "0123456789abcdef",
				"head_short_sha": "01234567", "head_short_sha_7": "0123456", "author": "ana",
				"values.host": "pr-12.preview.example.com", "values.tier": "preview",
				ParamPullRequest: "org/app#12@0123456789abcdef",
			}},
		},
		{
			name:   "continueOnRepoNotFoundError: a missing repository generates nothing",
			lister: prList{err: fmt.Errorf("GET /repos/org/app/pulls: 404: %w", ErrRepositoryNotFound)},
			spec:   navarchv1.PullRequestGenerator{Github: gh(), ContinueOnRepoNotFoundError: true},
			want:   []map[string]any{},
		},
		{
			name:    "without continueOnRepoNotFoundError a missing repository is an error",
			lister:  prList{err: fmt.Errorf("GET /repos/org/app/pulls: 404: %w", ErrRepositoryNotFound)},
			spec:    navarchv1.PullRequestGenerator{Github: gh()},
			wantErr: "list pull requests of org/app: GET /repos/org/app/pulls: 404: repository not found",
		},
		{
			name:    "continueOnRepoNotFoundError does not hide other errors",
			lister:  prList{err: errors.New("500 Internal Server Error")},
			spec:    navarchv1.PullRequestGenerator{Github: gh(), ContinueOnRepoNotFoundError: true},
			wantErr: "500 Internal Server Error",
		},
		{
			name:    "github missing",
			lister:  prs,
			wantErr: "spec.generators[0].pullRequest.github: must be set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			got, err := generate(t, tt.goTemplate, Inputs{PullRequests: tt.lister}, navarchv1.ApplicationSetGenerator{PullRequest: &spec})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}

	_, err := generate(t, false, Inputs{}, navarchv1.ApplicationSetGenerator{PullRequest: &navarchv1.PullRequestGenerator{Github: gh()}})
	if !errors.Is(err, ErrNoPullRequestLister) {
		t.Errorf("error %v is not ErrNoPullRequestLister", err)
	}
}

func TestPullRequestRefRoundTrips(t *testing.T) {
	ref := PullRequestRef("org", "app", 12, "0123abc")
	owner, repo, number, sha, err := ParsePullRequestRef(ref)
	if err != nil || owner != "org" || repo != "app" || number != 12 || sha != "0123abc" {
		t.Errorf("ParsePullRequestRef(%q) = %q, %q, %d, %q, %v", ref, owner, repo, number, sha, err)
	}
	for _, bad := range []string{"", "org/app", "org/app#12", "org#12@abc", "org/app#x@abc", "org/app#0@abc", "/app#1@abc", "org/app#1@"} {
		if _, _, _, _, err := ParsePullRequestRef(bad); err == nil {
			t.Errorf("ParsePullRequestRef(%q) succeeded", bad)
		}
	}
}

func TestSlugify(t *testing.T) {
	tests := []struct{ in, want string }{
		{"main", "main"},
		{"feature/JIRA-123_fix", "feature-jira-123-fix"},
		{"  Fix: ünïcödé & café @ home!  ", "fix-unicode-and-cafe-at-home"},
		{"--a//b__c--", "a-b-c"},
		{"日本語", ""},
		{strings.Repeat("word-", 20), "word-word-word-word-word-word-word-word-word-word"},
		{strings.Repeat("x", 60), strings.Repeat("x", 50)},
		{"dependabot/npm_and_yarn/frontend/express-4.19.2", "dependabot-npm-and-yarn-frontend-express-4-19-2"},
	}
	for _, tt := range tests {
		got := slugify(tt.in, slugMaxLength)
		if got != tt.want {
			t.Errorf("slugify(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > slugMaxLength || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") {
			t.Errorf("slugify(%q) = %q is not a DNS-safe slug of at most %d characters", tt.in, got, slugMaxLength)
		}
	}
}

func TestPullRequestRequeueAfter(t *testing.T) {
	g := PullRequests{Spec: &navarchv1.PullRequestGenerator{}}
	if got := g.RequeueAfter(); got != 30*time.Minute {
		t.Errorf("default RequeueAfter = %v, want 30m", got)
	}
	g.Spec.RequeueAfterSeconds = ptr[int64](120)
	if got := g.RequeueAfter(); got != 2*time.Minute {
		t.Errorf("RequeueAfter = %v, want 2m", got)
	}
}
