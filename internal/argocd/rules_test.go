package argocd

import (
	"encoding/json"
	"reflect"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Helm charts and several sources carry over field for field; what Argo CD means by a field
// navarch spells differently is rewritten with a warning.
func TestHelmChartsAndSourcesConvert(t *testing.T) {
	tests := []struct {
		name, yaml string
		check      func(t *testing.T, spec navarchv1.ApplicationSpec)
		warnings   []string // fields warned about
	}{
		{
			name: "a chart with every Helm option, its values from a ref source",
			yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: redis, namespace: argocd}
spec:
  project: default
  sources:
  - repoURL: https://charts.bitnami.com/bitnami
    chart: redis
    targetRevision: 17.x
    name: chart
    helm:
      releaseName: cache
      namespace: data
      valueFiles: [$values/redis/values.yaml, $values/redis/prod.yaml]
      ignoreMissingValueFiles: true
      values: |
        replica: {replicaCount: 2}
      valuesObject: {auth: {enabled: false}}
      parameters: [{name: image.tag, value: "7.2", forceString: true}]
      fileParameters: [{name: config, path: $values/redis/redis.conf}]
      skipCrds: true
      skipTests: true
      skipSchemaValidation: true
      kubeVersion: 1.30.0
      apiVersions: [monitoring.coreos.com/v1]
      passCredentials: true
      version: v3
  - repoURL: https://github.com/org/config.git
    targetRevision: main
    ref: values
  destination: {server: https://kubernetes.default.svc, namespace: data}`,
			check: func(t *testing.T, spec navarchv1.ApplicationSpec) {
				if len(spec.Sources) != 2 || spec.Source.RepoURL != "" {
					t.Fatalf("sources %+v, source %+v; want two sources and no source", spec.Sources, spec.Source)
				}
				chart, ref := spec.Sources[0], spec.Sources[1]
				if chart.RepoURL != "https://charts.bitnami.com/bitnami" || chart.Chart != "redis" || chart.TargetRevision != "17.x" || chart.Name != "chart" {
					t.Errorf("chart source %+v", chart)
				}
				if ref.Ref != "values" || ref.RepoURL != "https://github.com/org/config.git" || ref.Path != "" {
					t.Errorf("ref source %+v", ref)
				}
				got := *chart.Helm
				if obj, _ := json.Marshal(got.ValuesObject); string(obj) != `{"auth":{"enabled":false}}` {
					t.Errorf("valuesObject %s", obj)
				}
				got.ValuesObject = nil
				want := navarchv1.ApplicationSourceHelm{
					ReleaseName: "cache", Namespace: "data",
					ValueFiles:              []string{"$values/redis/values.yaml", "$values/redis/prod.yaml"},
					IgnoreMissingValueFiles: true,
					Values:                  "replica: {replicaCount: 2}\n",
					Parameters:              []navarchv1.HelmParameter{{Name: "image.tag", Value: "7.2", ForceString: true}},
					FileParameters:          []navarchv1.HelmFileParameter{{Name: "config", Path: "$values/redis/redis.conf"}},
					SkipCrds:                true, SkipTests: true, SkipSchemaValidation: true,
					KubeVersion: "1.30.0", APIVersions: []string{"monitoring.coreos.com/v1"},
					PassCredentials: true, Version: "v3",
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("helm\n got %+v\nwant %+v", got, want)
				}
				if spec.Project != "default" {
					t.Errorf("project %q, want default kept", spec.Project)
				}
			},
		},
		{
			name: "an ApplicationSet template with sources, and a generator overriding them",
			yaml: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: ingress, namespace: argocd}
spec:
  goTemplate: true
  generators:
  - list:
      elements: [{cluster: prod}]
      template:
        metadata: {}
        spec:
          sources:
          - {repoURL: https://kubernetes.github.io/ingress-nginx, chart: ingress-nginx, targetRevision: 4.10.0, helm: {valueFiles: [$cfg/prod.yaml]}}
          - {repoURL: https://github.com/org/config.git, ref: cfg}
  template:
    metadata: {name: 'ingress-{{.cluster}}'}
    spec:
      project: default
      sources:
      - {repoURL: https://kubernetes.github.io/ingress-nginx, chart: ingress-nginx, targetRevision: 4.10.0, helm: {valueFiles: ['$cfg/{{.cluster}}.yaml']}}
      - {repoURL: https://github.com/org/config.git, ref: cfg}
      destination: {name: '{{.cluster}}', namespace: ingress}`,
			check: func(t *testing.T, spec navarchv1.ApplicationSpec) {
				if len(spec.Sources) != 2 || spec.Sources[0].Chart != "ingress-nginx" || spec.Sources[0].Helm.ValueFiles[0] != "$cfg/{{.cluster}}.yaml" || spec.Sources[1].Ref != "cfg" {
					t.Errorf("template sources %+v", spec.Sources)
				}
			},
		},
		{
			name: "source next to sources, which Argo CD ignores",
			yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: a}
spec:
  source: {repoURL: https://github.com/org/old.git, path: app}
  sources: [{repoURL: https://github.com/org/new.git, path: app}]
  destination: {name: prod}`,
			check: func(t *testing.T, spec navarchv1.ApplicationSpec) {
				if spec.Source.RepoURL != "" || len(spec.Sources) != 1 || spec.Sources[0].RepoURL != "https://github.com/org/new.git" {
					t.Errorf("source %+v, sources %+v; want sources only", spec.Source, spec.Sources)
				}
			},
			warnings: []string{"spec.source"},
		},
		{
			name: "a chart from an OCI registry named without a scheme, Helm version 3",
			yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: nginx}
spec:
  source: {repoURL: registry-1.docker.io/bitnamicharts, chart: nginx, targetRevision: 15.9.0, helm: {version: "3"}}
  destination: {name: prod}`,
			check: func(t *testing.T, spec navarchv1.ApplicationSpec) {
				if spec.Source.RepoURL != "oci://registry-1.docker.io/bitnamicharts" || spec.Source.Helm.Version != "v3" {
					t.Errorf("source %+v helm %+v", spec.Source, spec.Source.Helm)
				}
			},
			warnings: []string{"spec.source.repoURL", "spec.source.helm.version"},
		},
		{
			name: "templated chart repoURLs, and Git over SSH",
			yaml: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  generators: [{list: {elements: [{registry: registry.example.com, chartRepo: 'https://charts.example.com'}]}}]
  template:
    metadata: {name: x}
    spec:
      sources:
      - {repoURL: '{{registry}}/charts', chart: app, targetRevision: 1.0.0}
      - {repoURL: 'git@github.com:org/config.git', path: app}
      - {repoURL: '{{chartRepo}}', chart: app, targetRevision: 1.0.0}
      destination: {name: x}`,
			check: func(t *testing.T, spec navarchv1.ApplicationSpec) {
				if spec.Sources[0].RepoURL != "{{registry}}/charts" || spec.Sources[1].RepoURL != "git@github.com:org/config.git" || spec.Sources[2].RepoURL != "{{chartRepo}}" {
					t.Errorf("repoURLs rewritten: %+v", spec.Sources)
				}
			},
			warnings: []string{"spec.template.spec.sources[0].repoURL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decode(t, tt.yaml)
			var (
				spec     navarchv1.ApplicationSpec
				warnings []Warning
			)
			if obj["kind"] == "Application" {
				app, w, err := Application(obj)
				if err != nil {
					t.Fatalf("does not convert: %v", err)
				}
				spec, warnings = app.Spec, w
			} else {
				set, w, err := ApplicationSet(obj)
				if err != nil {
					t.Fatalf("does not convert: %v", err)
				}
				spec, warnings = set.Spec.Template.Spec, w
			}
			tt.check(t, spec)
			assertWarnings(t, warnings, tt.warnings)
		})
	}
}
