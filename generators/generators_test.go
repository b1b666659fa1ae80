package generators

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// seedAppSet is the ApplicationSet of the GitOps guide in seeds/ (apiVersion aside).
const seedAppSet = `
generators:
  - git:
      repoURL: https://git.example.com/org/deploy.git
      revision: main
      directories: [{ path: "apps/*" }]
template:
  metadata: { name: '{{path.basename}}' }
  spec:
    project: default
    source: { repoURL: '...', targetRevision: main, path: '{{path}}' }
    destination: { server: 'https://kubernetes.default.svc', namespace: '{{path.basename}}' }
`

func TestGenerateSeedGuide(t *testing.T) {
	var spec navarchv1.ApplicationSetSpec
	if err := yaml.Unmarshal([]byte(seedAppSet), &spec); err != nil {
		t.Fatal(err)
	}
	results, err := Generate(context.Background(), &spec, Inputs{Git: deployRepo()})
	checkErr(t, err, "")
	if len(results) != 1 {
		t.Fatalf("got %d results, want 1", len(results))
	}
	var dirs []string
	for _, p := range results[0].Params {
		dirs = append(dirs, p["path"].(string))
	}
	want := []string{"apps/Billing_Svc", "apps/api", "apps/empty", "apps/web"}
	if !equalStrings(dirs, want) {
		t.Errorf("one set per directory under apps/: got %v, want %v", dirs, want)
	}
	if got := results[0].RequeueAfter; got != DefaultGitRequeueAfter {
		t.Errorf("RequeueAfter = %v, want the git default %v", got, DefaultGitRequeueAfter)
	}
}

func TestGenerateResults(t *testing.T) {
	override := &navarchv1.GeneratorTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Name: "{{cluster}}-override"}}
	spec := &navarchv1.ApplicationSetSpec{Generators: []navarchv1.ApplicationSetGenerator{
		{List: &navarchv1.ListGenerator{Elements: elements(t, map[string]any{"cluster": "a"}), Template: override}},
		{Clusters: &navarchv1.ClusterGenerator{}},
		{Git: &navarchv1.GitGenerator{RepoURL: repo, Revision: "main", Directories: []navarchv1.GitPathItem{include("apps/api")}, RequeueAfterSeconds: ptr[int64](600)}},
		{PullRequest: &navarchv1.PullRequestGenerator{Github: &navarchv1.PullRequestGeneratorGithub{Owner: "o", Repo: "r"}}},
		{Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
			// A child's template override is ignored, as in Argo CD.
			{List: &navarchv1.ListGenerator{Elements: elements(t, map[string]any{"x": "1"}), Template: override}},
			{Git: gitDirs(repo, include("apps/web"))},
		}}},
	}}
	in := Inputs{
		Renderer:     stubRenderer{},
		Git:          deployRepo(),
		Clusters:     clusterList{clusters: []navarchv1.Cluster{cluster("c1", "https://c1", nil)}},
		PullRequests: prList{prs: []PullRequest{{Number: 1, Branch: "b", HeadSHA: "abc"}}},
	}
	results, err := Generate(context.Background(), spec, in)
	checkErr(t, err, "")
	want := []struct {
		sets     int
		template *navarchv1.GeneratorTemplate
		requeue  time.Duration
	}{
		{1, override, 0},
		{1, nil, 0},
		{1, nil, 10 * time.Minute},
		{1, nil, 30 * time.Minute},
		{1, nil, 3 * time.Minute},
	}
	if len(results) != len(want) {
		t.Fatalf("got %d results, want %d", len(results), len(want))
	}
	for i, w := range want {
		r := results[i]
		if r.Generator != i || len(r.Params) != w.sets || r.Template != w.template || r.RequeueAfter != w.requeue {
			t.Errorf("result %d = {Generator: %d, %d sets, Template: %v, RequeueAfter: %v}, want {%d, %d sets, %v, %v}",
				i, r.Generator, len(r.Params), r.Template, r.RequeueAfter, i, w.sets, w.template, w.requeue)
		}
	}
	if got := MinRequeueAfter(results); got != 3*time.Minute {
		t.Errorf("MinRequeueAfter = %v, want 3m", got)
	}
	if got := MinRequeueAfter(results[:2]); got != 0 {
		t.Errorf("MinRequeueAfter of list and clusters = %v, want 0 (no periodic requeue)", got)
	}
}

func TestGenerateFailsAsAWhole(t *testing.T) {
	tests := []struct {
		name    string
		gens    []navarchv1.ApplicationSetGenerator
		in      Inputs
		wantErr string
	}{
		{
			name: "an unreachable Git server fails every generator's result",
			gens: []navarchv1.ApplicationSetGenerator{
				{List: listGen(t, map[string]any{"a": "1"})},
				{Git: gitDirs(repo, include("apps/*"))},
			},
			in:      Inputs{Git: &memGit{err: errors.New("connection refused")}},
			wantErr: "spec.generators[1].git.repoURL: read " + repo + " at main: connection refused",
		},
		{
			name: "invalid specs fail before anything is read",
			gens: []navarchv1.ApplicationSetGenerator{
				{Git: gitDirs(repo, include("apps/*"))},
				{Git: gitDirs(repo, include("../x"))},
			},
			in:      Inputs{Git: &memGit{err: errors.New("must not be called")}},
			wantErr: `spec.generators[1].git.directories[0].path: "../x" must not contain ".."`,
		},
		{
			name:    "a generator without a kind",
			gens:    []navarchv1.ApplicationSetGenerator{{}},
			wantErr: "spec.generators[0]: exactly one of list, clusters, git, pullRequest, scmProvider, plugin, matrix or merge must be set (found none)",
		},
		{
			name:    "no generators",
			wantErr: "spec.generators: must have at least one generator",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results, err := Generate(context.Background(), &navarchv1.ApplicationSetSpec{Generators: tt.gens}, tt.in)
			checkErr(t, err, tt.wantErr)
			if results != nil {
				t.Errorf("got results %v alongside an error", results)
			}
		})
	}
}

func TestGenerateLimit(t *testing.T) {
	many := func(n int, key string) *navarchv1.ListGenerator {
		els := make([]apiextensionsv1.JSON, n)
		for i := range els {
			els[i] = apiextensionsv1.JSON{Raw: fmt.Appendf(nil, `{%q: "%d"}`, key, i)}
		}
		return &navarchv1.ListGenerator{Elements: els}
	}
	gens := []navarchv1.ApplicationSetGenerator{{List: many(6000, "a")}, {List: many(6000, "b")}}

	_, err := generate(t, false, Inputs{}, gens...)
	checkErr(t, err, "spec.generators: 12000 parameter sets exceed the limit of 10000")
	var limitErr *LimitError
	if !errors.As(err, &limitErr) || limitErr.Count != 12000 || limitErr.AtLeast {
		t.Errorf("error %#v is not a *LimitError counting 12000", err)
	}

	_, err = generate(t, false, Inputs{MaxParamSets: 100}, gens[0])
	checkErr(t, err, "spec.generators: 6000 parameter sets exceed the limit of 100")

	got, err := generate(t, false, Inputs{MaxParamSets: 12000}, gens...)
	checkErr(t, err, "")
	if len(got) != 12000 {
		t.Errorf("got %d sets with a limit of 12000, want 12000", len(got))
	}
}

func TestNewNestedDepth(t *testing.T) {
	// Nesting is unlimited: ten matrices deep still validates and generates.
	inner := navarchv1.NestedGenerator{List: listGen(t, map[string]any{"leaf": "yes"})}
	for range 10 {
		inner = nestedMatrix(t, navarchv1.NestedGenerator{List: listGen(t, map[string]any{"x": "1"})}, inner)
	}
	got, err := generate(t, false, Inputs{}, navarchv1.ApplicationSetGenerator{Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{inner}}})
	checkErr(t, err, "")
	checkParams(t, got, []map[string]any{{"x": "1", "leaf": "yes"}})
}
