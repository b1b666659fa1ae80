package generators

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/templates"
)

// These tests run generators with the real templates.Engine, in both modes, where the other
// tests use stubRenderer.

func engine(t testing.TB, goTemplate bool, options ...string) Renderer {
	t.Helper()
	e, err := templates.NewEngine(templates.Options{GoTemplate: goTemplate, GoTemplateOptions: options})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestWithTemplatesEngine(t *testing.T) {
	clusters := clusterList{clusters: []navarchv1.Cluster{
		cluster("prod-eu", "https://eu", map[string]string{"env": "prod", "region": "eu"}),
		cluster("staging", "https://st", map[string]string{"env": "staging", "region": "us"}),
	}}
	git := &memGit{trees: map[string]*memTree{repo + "@main": {files: map[string]string{
		"envs/prod/api/k.yaml":     "",
		"envs/staging/web/k.yaml":  "",
		"config/prod/app.yaml":     "components: [{name: api, port: 8080}, {name: web, port: 80}]",
		"config/staging/app.yaml":  "components: [{name: web, port: 80}]",
		"config/staging/skip.yaml": "{}",
	}}}}

	tests := []struct {
		name       string
		goTemplate bool
		options    []string
		gen        navarchv1.ApplicationSetGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name: "fasttemplate: clusters x git directories under the cluster's env, values templated",
			gen: navarchv1.ApplicationSetGenerator{Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{Clusters: &navarchv1.ClusterGenerator{Values: map[string]string{"ns": "{{ metadata.labels.region }}-{{name}}"}}},
				{Git: &navarchv1.GitGenerator{RepoURL: repo, Revision: "main", PathParamPrefix: "app",
					Directories: []navarchv1.GitPathItem{include("envs/{{metadata.labels.env}}/*")}}},
			}}},
			want: []map[string]any{
				{
					"name": "prod-eu", "nameNormalized": "prod-eu", "server": "https://eu", "project": "",
					"metadata.labels.env": "prod", "metadata.labels.region": "eu", "values.ns": "eu-prod-eu",
					"app.path": "envs/prod/api", "app.path.basename": "api", "app.path.basenameNormalized": "api",
					"app.path[0]": "envs", "app.path[1]": "prod", "app.path[2]": "api",
				},
				{
					"name": "staging", "nameNormalized": "staging", "server": "https://st", "project": "",
					"metadata.labels.env": "staging", "metadata.labels.region": "us", "values.ns": "us-staging",
					"app.path": "envs/staging/web", "app.path.basename": "web", "app.path.basenameNormalized": "web",
					"app.path[0]": "envs", "app.path[1]": "staging", "app.path[2]": "web",
				},
			},
		},
		{
			name:       "goTemplate: git files x elementsYaml built from the file with toJson",
			goTemplate: true,
			gen: navarchv1.ApplicationSetGenerator{
				Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
					{Git: gitFiles(include("config/*/app.yaml"))},
					{List: &navarchv1.ListGenerator{ElementsYaml: "{{ .components | toJson }}"}},
				}},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"path.basename": "prod"}},
			},
			want: []map[string]any{
				{
					"components": []any{map[string]any{"name": "api", "port": 8080.0}, map[string]any{"name": "web", "port": 80.0}},
					"name":       "api", "port": 8080.0,
					"path": map[string]any{
						"path": "config/prod", "basename": "prod", "basenameNormalized": "prod",
						"filename": "app.yaml", "filenameNormalized": "app.yaml", "segments": []string{"config", "prod"},
					},
				},
				{
					"components": []any{map[string]any{"name": "api", "port": 8080.0}, map[string]any{"name": "web", "port": 80.0}},
					"name":       "web", "port": 80.0,
					"path": map[string]any{
						"path": "config/prod", "basename": "prod", "basenameNormalized": "prod",
						"filename": "app.yaml", "filenameNormalized": "app.yaml", "segments": []string{"config", "prod"},
					},
				},
			},
		},
		{
			name:       "goTemplate: cluster values with sprig",
			goTemplate: true,
			gen: navarchv1.ApplicationSetGenerator{
				Clusters: &navarchv1.ClusterGenerator{
					Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
					Values:   map[string]string{"region": "{{ .metadata.labels.region | upper }}", "name": "{{ .name | normalize }}"},
				},
			},
			want: []map[string]any{{
				"name": "prod-eu", "nameNormalized": "prod-eu", "server": "https://eu", "project": "",
				"metadata": map[string]any{"labels": map[string]any{"env": "prod", "region": "eu"}, "annotations": map[string]any{}},
				"values":   map[string]any{"region": "EU", "name": "prod-eu"},
			}},
		},
		{
			name:       "goTemplate: the second child's revision and path from the first",
			goTemplate: true,
			gen: navarchv1.ApplicationSetGenerator{Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"env": "staging"})},
				{Git: gitDirs(repo, include(`envs/{{ .env }}/*`))},
			}}},
			want: []map[string]any{{
				"env":  "staging",
				"path": map[string]any{"path": "envs/staging/web", "basename": "web", "basenameNormalized": "web", "segments": []string{"envs", "staging", "web"}},
			}},
		},
		{
			name:       "goTemplate missingkey=error while rendering a matrix child names the field",
			goTemplate: true,
			options:    []string{"missingkey=error"},
			gen: navarchv1.ApplicationSetGenerator{Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"env": "staging"})},
				{Git: gitDirs(repo, include(`envs/{{ .nope }}/*`))},
			}}},
			wantErr: "spec.generators[0].matrix.generators[1]: render with an earlier generator's parameters: ",
		},
		{
			name:       "goTemplate missingkey=error: a child's ignored template override is not rendered",
			goTemplate: true,
			options:    []string{"missingkey=error"},
			gen: navarchv1.ApplicationSetGenerator{Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{List: listGen(t, map[string]any{"env": "staging"})},
				{List: &navarchv1.ListGenerator{
					ElementsYaml: "- app: '{{ .env }}-api'",
					Template:     &navarchv1.GeneratorTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Name: "{{ .app }}"}},
				}},
			}}},
			want: []map[string]any{{"env": "staging", "app": "staging-api"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Inputs{Renderer: engine(t, tt.goTemplate, tt.options...), Git: git, Clusters: clusters}
			got, err := generate(t, tt.goTemplate, in, tt.gen)
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}
