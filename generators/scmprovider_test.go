package generators

import (
	"errors"
	"testing"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestSCMProviders(t *testing.T) {
	repo := func(name, branch, sha string, labels ...string) Repository {
		return Repository{Organization: "acme", Name: name, Branch: branch, SHA: sha, Labels: labels,
			SSHURL: "git@github.example:acme/" + name + ".git", HTTPSURL: "https://github.example/acme/" + name + ".git"}
	}
	org := scmRepos{
		repos: []Repository{
			repo("api", "main", "0123456789abcdef", "team-a", "go"),
			repo("api", "feature/New_Thing", "fedcba9876543210", "team-a", "go"),
			repo("web", "main", "abc"),
			repo("infra", "main", "1111222233334444", "platform"),
		},
		files: map[string][]string{
			"api@main":              {"deploy/kustomization.yaml", "go.mod"},
			"api@feature/New_Thing": {"deploy/kustomization.yaml", "go.mod", "legacy/old.yaml"},
			"web@main":              {"package.json"},
			"infra@main":            {"deploy/base/kustomization.yaml"},
		},
	}
	spec := func(filters ...navarchv1.SCMProviderGeneratorFilter) navarchv1.SCMProviderGenerator {
		return navarchv1.SCMProviderGenerator{Github: &navarchv1.SCMProviderGeneratorGithub{Organization: "acme"}, Filters: filters}
	}
	apiMain := map[string]any{
		"organization": "acme", "repository": "api", "url": "git@github.example:acme/api.git",
		"branch": "main", "branch_normalized": "main", "branchNormalized": "main",
		"sha": "0123456789abcdef", "short_sha": "01234567", "short_sha_7": "0123456", "labels": "team-a,go",
	}
	tests := []struct {
		name       string
		goTemplate bool
		scm        SCMProvider
		spec       navarchv1.SCMProviderGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name: "a repository matched by name, with a path that must exist",
			scm:  org,
			spec: spec(navarchv1.SCMProviderGeneratorFilter{RepositoryMatch: ptr("^api$"), BranchMatch: ptr("^main$"), PathsExist: []string{"deploy"}}),
			want: []map[string]any{apiMain},
		},
		{
			name: "filters: all conditions of one, any of them",
			scm:  org,
			spec: spec(
				navarchv1.SCMProviderGeneratorFilter{LabelMatch: ptr("^platform$")},
				navarchv1.SCMProviderGeneratorFilter{RepositoryMatch: ptr("^api$"), PathsExist: []string{"deploy/kustomization.yaml"}, PathsDoNotExist: []string{"legacy"}},
			),
			want: []map[string]any{apiMain, {
				"organization": "acme", "repository": "infra", "url": "git@github.example:acme/infra.git",
				"branch": "main", "branch_normalized": "main", "branchNormalized": "main",
				"sha": "1111222233334444", "short_sha": "11112222", "short_sha_7": "1111222", "labels": "platform",
			}},
		},
		{
			name:       "https clone URL, goTemplate labels, normalised branch, values",
			goTemplate: true,
			scm:        org,
			spec: func() navarchv1.SCMProviderGenerator {
				s := spec(navarchv1.SCMProviderGeneratorFilter{BranchMatch: ptr("^feature/")})
				s.CloneProtocol = "https"
				s.Values = map[string]string{"name": "{{ .repository }}-{{ .branch_normalized }}"}
				return s
			}(),
			want: []map[string]any{{
				"organization": "acme", "repository": "api", "url": "https://github.example/acme/api.git",
				"branch": "feature/New_Thing", "branch_normalized": "feature-new-thing", "branchNormalized": "feature-new-thing",
				"sha": "fedcba9876543210", "short_sha": "fedcba98", "short_sha_7": "fedcba9", "labels": []string{"team-a", "go"},
				"values": map[string]any{"name": "api-feature-new-thing"},
			}},
		},
		{
			name:    "a failing list is an error",
			scm:     scmRepos{err: errors.New("401 Bad credentials")},
			spec:    spec(),
			wantErr: "spec.generators[0].scmProvider: list the repositories of acme: 401 Bad credentials",
		},
		{
			name:    "no provider configured",
			spec:    spec(),
			wantErr: "spec.generators[0].scmProvider: no SCM provider configured",
		},
		{
			name:    "invalid regular expression",
			scm:     org,
			spec:    spec(navarchv1.SCMProviderGeneratorFilter{LabelMatch: ptr("(")}),
			wantErr: "spec.generators[0].scmProvider.filters[0].labelMatch: error parsing regexp",
		},
		{
			name:    "organization missing",
			scm:     org,
			spec:    navarchv1.SCMProviderGenerator{Github: &navarchv1.SCMProviderGeneratorGithub{}},
			wantErr: "spec.generators[0].scmProvider.github.organization: must be set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			got, err := generate(t, tt.goTemplate, Inputs{SCMProviders: tt.scm}, navarchv1.ApplicationSetGenerator{SCMProvider: &spec})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}

// Paths are only looked up for repositories that the filter's expressions keep: each lookup
// is an API request.
func TestSCMProvidersLookUpPathsOnlyForMatchingRepositories(t *testing.T) {
	lookups := 0
	scm := scmRepos{repos: []Repository{
		{Organization: "acme", Name: "api", Branch: "main"},
		{Organization: "acme", Name: "web", Branch: "main"},
		{Organization: "acme", Name: "docs", Branch: "main"},
	}, files: map[string][]string{"api@main": {"deploy/x.yaml"}}, lookups: &lookups}
	spec := navarchv1.SCMProviderGenerator{Github: &navarchv1.SCMProviderGeneratorGithub{Organization: "acme"},
		Filters: []navarchv1.SCMProviderGeneratorFilter{{RepositoryMatch: ptr("^api$"), PathsExist: []string{"deploy"}}}}
	got, err := generate(t, false, Inputs{SCMProviders: scm}, navarchv1.ApplicationSetGenerator{SCMProvider: &spec})
	if err != nil || len(got) != 1 {
		t.Fatalf("got %d parameter sets, error %v; want 1", len(got), err)
	}
	if lookups != 1 {
		t.Errorf("%d path lookups, want 1 (only for the repository the expression keeps)", lookups)
	}
}

func TestSCMProvidersRequeueAfter(t *testing.T) {
	g := SCMProviders{Spec: &navarchv1.SCMProviderGenerator{}}
	if got := g.RequeueAfter(); got != 30*time.Minute {
		t.Errorf("default RequeueAfter = %v, want 30m", got)
	}
	g.Spec.RequeueAfterSeconds = ptr[int64](60)
	if got := g.RequeueAfter(); got != time.Minute {
		t.Errorf("RequeueAfter = %v, want 1m", got)
	}
}
