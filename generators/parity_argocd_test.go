package generators

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Behaviours of Argo CD's ApplicationSet controller that ported ApplicationSets rely on (issue
// 16), run with the real templates.Engine.

// parityClusters are two Clusters labelled like imported Argo CD cluster Secrets: without the
// argocd.argoproj.io/secret-type label, which `navarch import` drops.
func parityClusters() clusterList {
	return clusterList{clusters: []navarchv1.Cluster{
		cluster("prod-eu", "https://eu", map[string]string{"env": "prod"}),
		cluster("dev-1", "https://dev", map[string]string{"env": "dev"}),
	}}
}

func parityRepo() *memGit {
	return &memGit{trees: map[string]*memTree{repo + "@main": {files: map[string]string{
		"apps/api/k.yaml":           "",
		"apps/web/k.yaml":           "",
		"config/prod/app.yaml":      "env: prod\nowner: null\nlimits: {cpu: null}\nzones: [a, null]\n",
		"config/staging/app.yaml":   "env: staging\nowner: sre\n",
		"config/staging/skip.json":  "{}",
		"config/staging/other.yaml": "[]",
	}}}}
}

func TestParityMatrixValuesSeeEarlierAndOwnParameters(t *testing.T) {
	gitThenClusters := func(values map[string]string) *navarchv1.MatrixGenerator {
		return &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
			{Git: gitDirs(repo, include("apps/*"))},
			{Clusters: &navarchv1.ClusterGenerator{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
				Values:   values,
			}},
		}}
	}
	tests := []struct {
		name       string
		goTemplate bool
		matrix     *navarchv1.MatrixGenerator
		// want are the values of each parameter set, in order.
		want    []map[string]any
		wantErr string
	}{
		{
			name:       "goTemplate missingkey=error: a clusters child's values use the git child's path and its own name",
			goTemplate: true,
			matrix:     gitThenClusters(map[string]string{"app": "{{ .path.basename }}", "target": "{{ .name }}"}),
			want: []map[string]any{
				{"app": "api", "target": "prod-eu"},
				{"app": "web", "target": "prod-eu"},
			},
		},
		{
			name:   "fasttemplate: the same values",
			matrix: gitThenClusters(map[string]string{"app": "{{path.basename}}", "target": "{{name}}"}),
			want: []map[string]any{
				{"values.app": "api", "values.target": "prod-eu"},
				{"values.app": "web", "values.target": "prod-eu"},
			},
		},
		{
			name:       "goTemplate: a git child's values use the clusters child's name and its own path",
			goTemplate: true,
			matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{Clusters: &navarchv1.ClusterGenerator{}},
				{Git: &navarchv1.GitGenerator{RepoURL: repo, Revision: "main", Directories: []navarchv1.GitPathItem{include("apps/api")},
					Values: map[string]string{"release": "{{ .name }}-{{ .path.basename }}"}}},
			}},
			want: []map[string]any{{"release": "dev-1-api"}, {"release": "prod-eu-api"}},
		},
		{
			name:       "goTemplate: inside a nested matrix, values also see the outer matrix's parameters",
			goTemplate: true,
			matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"team": "payments"})},
				nestedMatrix(t,
					navarchv1.NestedGenerator{Git: gitDirs(repo, include("apps/web"))},
					navarchv1.NestedGenerator{Clusters: &navarchv1.ClusterGenerator{
						Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}},
						Values:   map[string]string{"ns": "{{ .team }}-{{ .path.basename }}-{{ .name }}"},
					}},
				),
			}},
			want: []map[string]any{{"ns": "payments-web-dev-1"}},
		},
		{
			name:       "goTemplate missingkey=error: a key neither child has is still an error naming the field",
			goTemplate: true,
			matrix:     gitThenClusters(map[string]string{"x": "{{ .nope }}"}),
			wantErr:    `spec.generators[0].matrix.generators[1].clusters.values[x]: cluster "prod-eu": `,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Inputs{Renderer: engine(t, tt.goTemplate, "missingkey=error"), Git: parityRepo(), Clusters: parityClusters()}
			got, err := generate(t, tt.goTemplate, in, navarchv1.ApplicationSetGenerator{Matrix: tt.matrix})
			if !checkErr(t, err, tt.wantErr) {
				return
			}
			var values []map[string]any
			for _, set := range got {
				if tt.goTemplate {
					v, _ := set["values"].(map[string]any)
					values = append(values, v)
					continue
				}
				v := map[string]any{}
				for k, item := range set {
					if strings.HasPrefix(k, "values.") {
						v[k] = item
					}
				}
				values = append(values, v)
			}
			checkParams(t, values, tt.want)
		})
	}
}

func TestParityClustersEmitProject(t *testing.T) {
	for _, tt := range []struct {
		name       string
		goTemplate bool
		value      string
	}{
		{name: "fasttemplate", value: "[{{project}}]"},
		{name: "goTemplate missingkey=error", goTemplate: true, value: "[{{ .project }}]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := Inputs{Renderer: engine(t, tt.goTemplate, "missingkey=error"), Clusters: parityClusters()}
			got, err := generate(t, tt.goTemplate, in, navarchv1.ApplicationSetGenerator{Clusters: &navarchv1.ClusterGenerator{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}},
				Values:   map[string]string{"p": tt.value},
			}})
			checkErr(t, err, "")
			if len(got) != 1 {
				t.Fatalf("got %d parameter sets, want 1", len(got))
			}
			if p, ok := got[0]["project"]; !ok || p != "" {
				t.Errorf("project = %#v (present %v), want the empty string", p, ok)
			}
			if v, _ := lookupParam(got[0], "values.p", tt.goTemplate); v != "[]" {
				t.Errorf("values.p = %#v, want %q", v, "[]")
			}
		})
	}
}

func TestParitySecretTypeSelectorMatchesEveryCluster(t *testing.T) {
	secretType := func(op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "argocd.argoproj.io/secret-type", Operator: op, Values: values},
		}}
	}
	everyCluster := metav1.LabelSelector{MatchLabels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}}
	clusters := func(sel metav1.LabelSelector) *navarchv1.ClusterGenerator {
		return &navarchv1.ClusterGenerator{Selector: sel}
	}
	tests := []struct {
		name string
		gen  navarchv1.ApplicationSetGenerator
		want []string
	}{
		{name: "matchLabels", gen: navarchv1.ApplicationSetGenerator{Clusters: clusters(everyCluster)}, want: []string{"dev-1", "prod-eu"}},
		{
			name: "with another label",
			gen: navarchv1.ApplicationSetGenerator{Clusters: clusters(metav1.LabelSelector{MatchLabels: map[string]string{
				"argocd.argoproj.io/secret-type": "cluster", "env": "prod",
			}})},
			want: []string{"prod-eu"},
		},
		{name: "In", gen: navarchv1.ApplicationSetGenerator{Clusters: clusters(secretType(metav1.LabelSelectorOpIn, "cluster"))}, want: []string{"dev-1", "prod-eu"}},
		{name: "Exists", gen: navarchv1.ApplicationSetGenerator{Clusters: clusters(secretType(metav1.LabelSelectorOpExists))}, want: []string{"dev-1", "prod-eu"}},
		{name: "another secret type", gen: navarchv1.ApplicationSetGenerator{Clusters: clusters(secretType(metav1.LabelSelectorOpIn, "repository"))}},
		{name: "NotIn", gen: navarchv1.ApplicationSetGenerator{Clusters: clusters(secretType(metav1.LabelSelectorOpNotIn, "cluster"))}},
		{
			name: "inside a matrix",
			gen: navarchv1.ApplicationSetGenerator{Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"app": "api"})},
				{Clusters: clusters(everyCluster)},
			}}},
			want: []string{"dev-1", "prod-eu"},
		},
		{
			name: "inside a merge inside a matrix",
			gen: navarchv1.ApplicationSetGenerator{Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"app": "api"})},
				{Merge: rawJSON(t, navarchv1.MergeGenerator{MergeKeys: []string{"name"}, Generators: []navarchv1.NestedGenerator{
					{Clusters: clusters(everyCluster)},
					{List: listGen(t, map[string]any{"name": "dev-1", "size": "small"})},
				}})},
			}}},
			want: []string{"dev-1", "prod-eu"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := generate(t, false, Inputs{Clusters: parityClusters()}, tt.gen)
			checkErr(t, err, "")
			var names []string
			for _, set := range got {
				names = append(names, set["name"].(string))
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("selected clusters %v, want %v", names, tt.want)
			}
		})
	}
}

func TestParityGitFileNullsInFasttemplate(t *testing.T) {
	files := gitFiles(include("config/*/app.yaml"))
	got, err := generate(t, false, Inputs{Renderer: engine(t, false), Git: parityRepo()}, navarchv1.ApplicationSetGenerator{Git: files})
	checkErr(t, err, "")
	if len(got) != 2 {
		t.Fatalf("got %d parameter sets, want 2", len(got))
	}
	prod := got[0]
	for key, want := range map[string]string{"env": "prod", "owner": "<nil>", "limits.cpu": "<nil>", "zones.0": "a", "zones.1": "<nil>"} {
		if prod[key] != want {
			t.Errorf("%s = %#v, want %q (Argo CD formats a null with %%v)", key, prod[key], want)
		}
	}

	// goTemplate keeps the decoded value.
	got, err = generate(t, true, Inputs{Renderer: engine(t, true), Git: parityRepo()}, navarchv1.ApplicationSetGenerator{Git: files})
	checkErr(t, err, "")
	if v, ok := got[0]["owner"]; !ok || v != nil {
		t.Errorf("goTemplate owner = %#v (present %v), want nil", v, ok)
	}
}

func TestParityElementsYamlIsAppendedAsDecoded(t *testing.T) {
	list := &navarchv1.ListGenerator{
		Elements:     elements(t, map[string]any{"cluster": "a", "values": map[string]any{"tier": "silver"}}),
		ElementsYaml: "- cluster: b\n  replicas: 3\n  values: {tier: gold}\n",
	}
	for _, goTemplate := range []bool{false, true} {
		got, err := generate(t, goTemplate, Inputs{}, navarchv1.ApplicationSetGenerator{List: list})
		checkErr(t, err, "")
		first := map[string]any{"cluster": "a", "values.tier": "silver"}
		if goTemplate {
			first = map[string]any{"cluster": "a", "values": map[string]any{"tier": "silver"}}
		}
		checkParams(t, got, []map[string]any{
			first,
			{"cluster": "b", "replicas": float64(3), "values": map[string]any{"tier": "gold"}},
		})
	}
}

// The globs docs/generators.md documents for git generators.
func TestParityDocumentedGlobs(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		// `*` never crosses a "/", in directory and file globs alike.
		{"apps/*", "apps/api/base", false},
		{"config/*/config.json", "config/prod/eu/config.json", false},
		// `**` matches any number of segments: zero or more inside a glob...
		{"platform/**/overlays/prod", "platform/overlays/prod", true},
		{"platform/**/overlays/prod", "platform/ingress/x/overlays/prod", true},
		{"config/**/config.json", "config/config.json", true},
		// ...and at least one at its end: what is below apps/, not apps/ itself.
		{"apps/**", "apps", false},
		{"apps/**", "apps/api/base", true},
	} {
		if got, err := matchPath(tt.pattern, tt.name); err != nil || got != tt.want {
			t.Errorf("matchPath(%q, %q) = %v, %v; want %v", tt.pattern, tt.name, got, err, tt.want)
		}
	}
}
