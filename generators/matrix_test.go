package generators

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func envRepo() *memGit {
	return &memGit{trees: map[string]*memTree{
		repo + "@main": {files: map[string]string{
			"envs/prod/api/k.yaml":    "",
			"envs/prod/web/k.yaml":    "",
			"envs/staging/api/k.yaml": "",
		}},
		repo + "@release-eu": {files: map[string]string{"apps/eu-only/k.yaml": ""}},
		repo + "@release-us": {files: map[string]string{"apps/us-only/k.yaml": ""}},
	}}
}

func TestMatrix(t *testing.T) {
	prodEU := cluster("prod-eu", "https://eu", map[string]string{"env": "prod"})
	prodUS := cluster("prod-us", "https://us", map[string]string{"env": "prod"})
	clusters := clusterList{clusters: []navarchv1.Cluster{prodEU, prodUS}}

	tests := []struct {
		name       string
		goTemplate bool
		matrix     navarchv1.MatrixGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name: "clusters x git directories",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{Clusters: &navarchv1.ClusterGenerator{}},
				{Git: gitDirs(repo, include("envs/prod/*"))},
			}},
			want: []map[string]any{
				{"name": "prod-eu", "nameNormalized": "prod-eu", "server": "https://eu", "project": "", "metadata.labels.env": "prod",
					"path": "envs/prod/api", "path.basename": "api", "path.basenameNormalized": "api", "path[0]": "envs", "path[1]": "prod", "path[2]": "api"},
				{"name": "prod-eu", "nameNormalized": "prod-eu", "server": "https://eu", "project": "", "metadata.labels.env": "prod",
					"path": "envs/prod/web", "path.basename": "web", "path.basenameNormalized": "web", "path[0]": "envs", "path[1]": "prod", "path[2]": "web"},
				{"name": "prod-us", "nameNormalized": "prod-us", "server": "https://us", "project": "", "metadata.labels.env": "prod",
					"path": "envs/prod/api", "path.basename": "api", "path.basenameNormalized": "api", "path[0]": "envs", "path[1]": "prod", "path[2]": "api"},
				{"name": "prod-us", "nameNormalized": "prod-us", "server": "https://us", "project": "", "metadata.labels.env": "prod",
					"path": "envs/prod/web", "path.basename": "web", "path.basenameNormalized": "web", "path[0]": "envs", "path[1]": "prod", "path[2]": "web"},
			},
		},
		{
			name: "the second child's git path uses the first child's parameter",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"env": "prod"}, map[string]any{"env": "staging"})},
				{Git: &navarchv1.GitGenerator{RepoURL: repo, Revision: "main", PathParamPrefix: "app",
					Directories: []navarchv1.GitPathItem{include("envs/{{env}}/*")}}},
			}},
			want: []map[string]any{
				{"env": "prod", "app.path": "envs/prod/api", "app.path.basename": "api", "app.path.basenameNormalized": "api",
					"app.path[0]": "envs", "app.path[1]": "prod", "app.path[2]": "api"},
				{"env": "prod", "app.path": "envs/prod/web", "app.path.basename": "web", "app.path.basenameNormalized": "web",
					"app.path[0]": "envs", "app.path[1]": "prod", "app.path[2]": "web"},
				{"env": "staging", "app.path": "envs/staging/api", "app.path.basename": "api", "app.path.basenameNormalized": "api",
					"app.path[0]": "envs", "app.path[1]": "staging", "app.path[2]": "api"},
			},
		},
		{
			name:       "goTemplate: the revision comes from the first child",
			goTemplate: true,
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"region": "eu"}, map[string]any{"region": "us"})},
				{Git: &navarchv1.GitGenerator{RepoURL: repo, Revision: "release-{{.region}}",
					Directories: []navarchv1.GitPathItem{include("apps/*")}}},
			}},
			want: []map[string]any{
				{"region": "eu", "path": map[string]any{"path": "apps/eu-only", "basename": "eu-only", "basenameNormalized": "eu-only", "segments": []string{"apps", "eu-only"}}},
				{"region": "us", "path": map[string]any{"path": "apps/us-only", "basename": "us-only", "basenameNormalized": "us-only", "segments": []string{"apps", "us-only"}}},
			},
		},
		{
			name: "elementsYaml rendered with the first child's parameters",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"app": "api"}, map[string]any{"app": "web"})},
				{List: &navarchv1.ListGenerator{ElementsYaml: "- component: {{app}}-frontend\n- component: {{app}}-backend\n"}},
			}},
			want: []map[string]any{
				{"app": "api", "component": "api-frontend"},
				{"app": "api", "component": "api-backend"},
				{"app": "web", "component": "web-frontend"},
				{"app": "web", "component": "web-backend"},
			},
		},
		{
			name: "three levels: list x (list x (list x list))",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"env": "dev"}, map[string]any{"env": "prod"})},
				nestedMatrix(t,
					navarchv1.NestedGenerator{List: listGen(t, map[string]any{"region": "eu"}, map[string]any{"region": "us"})},
					nestedMatrix(t,
						navarchv1.NestedGenerator{List: listGen(t, map[string]any{"tier": "gold"})},
						// Rendered by the outer matrix with env, then by the inner ones.
						navarchv1.NestedGenerator{List: &navarchv1.ListGenerator{ElementsYaml: "- name: '{{env}}-{{region}}-{{tier}}'"}},
					),
				),
			}},
			want: []map[string]any{
				{"env": "dev", "region": "eu", "tier": "gold", "name": "dev-eu-gold"},
				{"env": "dev", "region": "us", "tier": "gold", "name": "dev-us-gold"},
				{"env": "prod", "region": "eu", "tier": "gold", "name": "prod-eu-gold"},
				{"env": "prod", "region": "us", "tier": "gold", "name": "prod-us-gold"},
			},
		},
		{
			name: "three children and a child selector",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"a": "1"}, map[string]any{"a": "2"})},
				{List: listGen(t, map[string]any{"b": "x"}, map[string]any{"b": "y"}),
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"b": "y"}}},
				{List: listGen(t, map[string]any{"c": "{{a}}{{b}}"})},
			}},
			want: []map[string]any{
				{"a": "1", "b": "y", "c": "1y"},
				{"a": "2", "b": "y", "c": "2y"},
			},
		},
		{
			name: "a single child is passed through",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"a": "1"})},
			}},
			want: []map[string]any{{"a": "1"}},
		},
		{
			name: "an empty first child gives nothing and does not run the others",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: &navarchv1.ListGenerator{}},
				{Git: gitDirs("https://unreachable.example.com/x.git", include("*"))},
			}},
			want: nil,
		},
		{
			name: "equal values of a shared key combine",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"env": "prod", "a": "1"})},
				{List: listGen(t, map[string]any{"env": "prod", "b": "2"})},
			}},
			want: []map[string]any{{"env": "prod", "a": "1", "b": "2"}},
		},
		{
			name: "fasttemplate: conflicting values of a shared key are an error",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{Git: gitDirs(repo, include("envs/prod"))},
				{Git: gitDirs(repo, include("envs/staging"))},
			}},
			wantErr: `spec.generators[0].matrix.generators[1]: parameter "path" is "envs/prod" in an earlier generator and "envs/staging" here`,
		},
		{
			name:       "goTemplate: nested maps merge and the earlier child wins",
			goTemplate: true,
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"env": "prod", "values": map[string]any{"a": "first", "b": "first"}})},
				{List: listGen(t, map[string]any{"env": "staging", "values": map[string]any{"b": "second", "c": "second"}})},
			}},
			want: []map[string]any{{"env": "prod", "values": map[string]any{"a": "first", "b": "first", "c": "second"}}},
		},
		{
			name: "a nested matrix without generators names its field",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"a": "1"})},
				nestedMatrix(t, navarchv1.NestedGenerator{List: listGen(t, map[string]any{"b": "1"})}, nestedMatrix(t)),
			}},
			wantErr: "spec.generators[0].matrix.generators[1].matrix.generators[1].matrix.generators: must have at least one generator",
		},
		{
			name: "a typo in a nested matrix is an error, not ignored",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"a": "1"})},
				{Matrix: &apiextensionsv1.JSON{Raw: []byte(`{"generator": []}`)}},
			}},
			wantErr: `spec.generators[0].matrix.generators[1].matrix: json: unknown field "generator"`,
		},
		{
			name: "a child with two kinds",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t), Clusters: &navarchv1.ClusterGenerator{}},
			}},
			wantErr: "spec.generators[0].matrix.generators[0]: exactly one of list, clusters, git, pullRequest, scmProvider, plugin, matrix or merge must be set (found list, clusters)",
		},
		{
			name: "a rendered path with .. is rejected",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"dir": ".."})},
				{Git: gitDirs(repo, include("{{dir}}/*"))},
			}},
			wantErr: `spec.generators[0].matrix.generators[1].git.directories[0].path: "../*" must not contain ".." segments (after rendering`,
		},
		{
			name: "a failing child fails the matrix",
			matrix: navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"rev": "gone"})},
				{Git: &navarchv1.GitGenerator{RepoURL: repo, Revision: "{{rev}}", Directories: []navarchv1.GitPathItem{include("*")}}},
			}},
			wantErr: "spec.generators[0].matrix.generators[1].git.repoURL: read " + repo + " at gone: revision gone not found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.matrix
			got, err := generate(t, tt.goTemplate, Inputs{Git: envRepo(), Clusters: clusters}, navarchv1.ApplicationSetGenerator{Matrix: &m})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}

func TestMatrixReadsEachRepositoryOnce(t *testing.T) {
	var many []navarchv1.Cluster
	for i := range 20 {
		many = append(many, cluster(fmt.Sprintf("c%02d", i), "https://c", map[string]string{"env": "prod"}))
	}
	git := envRepo()
	m := &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
		{Clusters: &navarchv1.ClusterGenerator{}},
		// Same rendered spec for every cluster: it runs once.
		{Git: &navarchv1.GitGenerator{RepoURL: repo, Revision: "{{metadata.labels.env}}-does-not-matter", Directories: []navarchv1.GitPathItem{include("envs/*")}}},
	}}
	git.trees[repo+"@prod-does-not-matter"] = git.trees[repo+"@main"]
	got, err := generate(t, false, Inputs{Git: git, Clusters: clusterList{clusters: many}},
		navarchv1.ApplicationSetGenerator{Matrix: m},
		navarchv1.ApplicationSetGenerator{Git: gitDirs(repo, include("envs/*"))},
		navarchv1.ApplicationSetGenerator{Git: gitDirs(repo, include("envs/*/*"))},
	)
	checkErr(t, err, "")
	if want := 20*2 + 2 + 3; len(got) != want {
		t.Errorf("got %d parameter sets, want %d", len(got), want)
	}
	if want := []string{repo + "@prod-does-not-matter", repo + "@main"}; !slices.Equal(git.reads, want) {
		t.Errorf("reads = %v, want %v", git.reads, want)
	}
}

func TestMatrixLimit(t *testing.T) {
	var a, b []map[string]any
	for i := range 200 {
		a = append(a, map[string]any{"a": fmt.Sprint(i)})
	}
	for i := range 100 {
		b = append(b, map[string]any{"b": fmt.Sprint(i)})
	}
	m := &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{{List: listGen(t, a...)}, {List: listGen(t, b...)}}}
	_, err := generate(t, false, Inputs{}, navarchv1.ApplicationSetGenerator{List: listGen(t, map[string]any{"x": "1"})}, navarchv1.ApplicationSetGenerator{Matrix: m})
	checkErr(t, err, "spec.generators[1].matrix: at least 10001 parameter sets exceed the limit of 10000")
	var limitErr *LimitError
	if !errors.As(err, &limitErr) || limitErr.Limit != DefaultMaxParamSets {
		t.Errorf("error %v is not a *LimitError with the default limit", err)
	}

	got, err := generate(t, false, Inputs{MaxParamSets: 20000}, navarchv1.ApplicationSetGenerator{Matrix: m})
	checkErr(t, err, "")
	if len(got) != 20000 {
		t.Errorf("got %d parameter sets with a limit of 20000, want 20000", len(got))
	}
}
