package v1alpha1_test

import (
	"context"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/navarch-io/navarch/internal/testenv"
)

// The CRD schemas are the first line of defence: a user who writes a broken ApplicationSet
// must hear about it from `kubectl apply`, with the field named, not from a controller log.
// These tests submit objects to a real kube-apiserver with the generated CRDs installed.

const appHeader = `
apiVersion: navarch.io/v1alpha1
kind: Application
metadata: {name: a, namespace: default}
`

const appSetHeader = `
apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: {name: s, namespace: default}
`

const appSetTemplate = `
  template:
    metadata: {name: '{{name}}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: apps}
      destination: {name: '{{name}}', namespace: default}
`

func TestSchemaRejectsInvalidObjects(t *testing.T) {
	c := env.Client

	tests := []struct {
		name string
		yaml string
		// field is the path the apiserver must name, want a phrase of the message.
		field, want string
	}{
		{
			name: "two generator kinds in one entry",
			yaml: appSetHeader + `spec:
  generators:
  - list: {elements: [{name: a}]}
    clusters: {}` + appSetTemplate,
			field: "spec.generators[0]", want: "exactly one of list, clusters, git, pullRequest, scmProvider, plugin, matrix or merge",
		},
		{
			name: "no generator kind in an entry",
			yaml: appSetHeader + `spec:
  generators:
  - selector: {matchLabels: {a: b}}` + appSetTemplate,
			field: "spec.generators[0]", want: "exactly one of",
		},
		{
			name: "no generators at all",
			yaml: appSetHeader + `spec:
  generators: []` + appSetTemplate,
			field: "spec.generators", want: "at least 1",
		},
		{
			name: "matrix with no children",
			yaml: appSetHeader + `spec:
  generators:
  - matrix: {generators: []}` + appSetTemplate,
			field: "spec.generators[0].matrix.generators", want: "at least 1",
		},
		{
			name: "nested generator with two kinds",
			yaml: appSetHeader + `spec:
  generators:
  - matrix:
      generators:
      - clusters: {}
      - list: {elements: [{a: b}]}
        git: {repoURL: 'https://git.example/r.git', directories: [{path: '*'}]}` + appSetTemplate,
			field: "spec.generators[0].matrix.generators[1]", want: "exactly one of",
		},
		{
			name: "merge without mergeKeys",
			yaml: appSetHeader + `spec:
  generators:
  - merge:
      generators: [{clusters: {}}, {list: {elements: [{a: b}]}}]` + appSetTemplate,
			field: "spec.generators[0].merge.mergeKeys", want: "Required value",
		},
		{
			name: "git generator with both directories and files",
			yaml: appSetHeader + `spec:
  generators:
  - git:
      repoURL: 'https://git.example/r.git'
      directories: [{path: 'apps/*'}]
      files: [{path: 'config.json'}]` + appSetTemplate,
			field: "spec.generators[0].git", want: "exactly one of directories or files",
		},
		{
			name: "pull request generator without a provider",
			yaml: appSetHeader + `spec:
  generators:
  - pullRequest: {requeueAfterSeconds: 60}` + appSetTemplate,
			field: "spec.generators[0].pullRequest", want: "github must be set",
		},
		{
			name: "unknown applicationsSync policy",
			yaml: appSetHeader + `spec:
  syncPolicy: {applicationsSync: create-or-whatever}
  generators: [{clusters: {}}]` + appSetTemplate,
			field: "spec.syncPolicy.applicationsSync", want: "Unsupported value",
		},
		{
			name: "deletion budget that is neither a count nor a percentage",
			yaml: appSetHeader + `spec:
  syncPolicy: {maxDeletions: lots}
  generators: [{clusters: {}}]` + appSetTemplate,
			field: "spec.syncPolicy.maxDeletions", want: "percentage",
		},
		{
			name: "deletion budget that is a word",
			yaml: appSetHeader + `spec:
  syncPolicy: {maxDeletions: "abc"}
  generators: [{clusters: {}}]` + appSetTemplate,
			field: "spec.syncPolicy.maxDeletions", want: "percentage",
		},
		{
			name: "negative deletion budget as a string",
			yaml: appSetHeader + `spec:
  syncPolicy: {maxDeletions: "-1"}
  generators: [{clusters: {}}]` + appSetTemplate,
			field: "spec.syncPolicy.maxDeletions", want: "percentage",
		},
		{
			name: "negative deletion budget",
			yaml: appSetHeader + `spec:
  syncPolicy: {maxDeletions: -1}
  generators: [{clusters: {}}]` + appSetTemplate,
			field: "spec.syncPolicy.maxDeletions", want: "percentage",
		},
		{
			// Stored, it would make every ApplicationSet list undecodable for the controller
			// (the field is an int32).
			name: "deletion budget too large for the controller to read",
			yaml: appSetHeader + `spec:
  syncPolicy: {maxDeletions: 3000000000}
  generators: [{clusters: {}}]` + appSetTemplate,
			field: "spec.syncPolicy.maxDeletions", want: "percentage",
		},
		{
			name: "unknown goTemplateOptions",
			yaml: appSetHeader + `spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=explode"]
  generators: [{clusters: {}}]` + appSetTemplate,
			field: "spec.goTemplateOptions[0]", want: "Unsupported value",
		},
		{
			name: "RollingSync strategy without steps",
			yaml: appSetHeader + `spec:
  strategy: {type: RollingSync}
  generators: [{clusters: {}}]` + appSetTemplate,
			field: "spec.strategy", want: "rollingSync must be set",
		},
		{
			name: "negative backoff factor",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git'}
  destination: {name: prod}
  syncPolicy: {retry: {limit: 3, backoff: {duration: 5s, factor: -2}}}`,
			field: "spec.syncPolicy.retry.backoff.factor", want: "greater than or equal to 1",
		},
		{
			name: "backoff duration that is not a duration",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git'}
  destination: {name: prod}
  syncPolicy: {retry: {backoff: {duration: five seconds}}}`,
			field: "spec.syncPolicy.retry.backoff.duration", want: "should match",
		},
		{
			name: "destination with neither name nor server",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git'}
  destination: {namespace: web}`,
			field: "spec.destination", want: "exactly one of name or server",
		},
		{
			name: "destination with both name and server",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git'}
  destination: {name: prod, server: 'https://10.0.0.1:6443'}`,
			field: "spec.destination", want: "exactly one of name or server",
		},
		{
			name: "unknown sync option",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git'}
  destination: {name: prod}
  syncPolicy: {syncOptions: [CreateNamespace=true, MakeItSo=true]}`,
			field: "spec.syncPolicy.syncOptions[1]", want: "should match",
		},
		{
			name: "missing repoURL",
			yaml: appHeader + `spec:
  source: {path: apps}
  destination: {name: prod}`,
			field: "spec.source.repoURL", want: "Required value",
		},
		{
			name: "kustomize and helm together",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git', kustomize: {namePrefix: a-}, helm: {releaseName: a}}
  destination: {name: prod}`,
			field: "spec.source", want: "at most one of kustomize and helm",
		},
		{
			name: "negative revisionHistoryLimit",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git'}
  destination: {name: prod}
  revisionHistoryLimit: -1`,
			field: "spec.revisionHistoryLimit", want: "greater than or equal to 0",
		},
		{
			name: "ignoreDifferences entry that ignores nothing",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git'}
  destination: {name: prod}
  ignoreDifferences: [{group: apps, kind: Deployment}]`,
			field: "spec.ignoreDifferences[0]", want: "one of jsonPointers, jqPathExpressions or managedFieldsManagers",
		},
		{
			name: "application with both source and sources",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://git.example/r.git', path: apps}
  sources: [{repoURL: 'https://git.example/r.git', path: apps}]
  destination: {name: in-cluster, namespace: default}`,
			field: "spec", want: "exactly one of source and sources must be set",
		},
		{
			name: "application with neither source nor sources",
			yaml: appHeader + `spec:
  destination: {name: in-cluster, namespace: default}`,
			field: "spec", want: "exactly one of source and sources must be set",
		},
		{
			name: "chart source with a path",
			yaml: appHeader + `spec:
  source: {repoURL: 'https://charts.example', chart: web, path: charts/web}
  destination: {name: in-cluster, namespace: default}`,
			field: "spec.source", want: "path and chart are exclusive",
		},
		{
			name: "one of several sources carries a password",
			yaml: appHeader + `spec:
  sources:
  - {repoURL: 'https://charts.example', chart: web}
  - {repoURL: 'https://alice:secret@git.example/values.git', ref: values}
  destination: {name: in-cluster, namespace: default}`,
			field: "spec.sources[1].repoURL", want: "must not carry user info",
		},
		{
			name: "cluster with no way to reach it",
			yaml: `
apiVersion: navarch.io/v1alpha1
kind: Cluster
metadata: {name: prod}
spec: {server: 'https://10.0.0.1:6443'}`,
			field: "spec", want: "exactly one of kubeconfigSecretRef or inCluster",
		},
		{
			name: "cluster server that is not a URL",
			yaml: `
apiVersion: navarch.io/v1alpha1
kind: Cluster
metadata: {name: prod}
spec: {server: '10.0.0.1:6443', inCluster: true}`,
			field: "spec.server", want: "should match",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decode(t, tt.yaml)
			err := c.Create(context.Background(), obj)
			if err == nil {
				_ = c.Delete(context.Background(), obj)
				t.Fatalf("the apiserver accepted an invalid %s; want a rejection naming %s", obj.GetKind(), tt.field)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v (reason %s); want an Invalid error", err, apierrors.ReasonForError(err))
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.field+":") {
				t.Errorf("error does not name the field %q:\n%s", tt.field, msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error does not say %q:\n%s", tt.want, msg)
			}
		})
	}
}

// TestSchemaAcceptsValidObjects guards against a schema so strict that real YAML, as users
// write it for Argo CD, no longer ports.
func TestSchemaAcceptsValidObjects(t *testing.T) {
	c := env.Client

	valid := map[string]string{
		"matrix of git directories and clusters, nested three deep": appSetHeader + `spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  syncPolicy: {applicationsSync: create-update, preserveResourcesOnDeletion: true, maxDeletions: 10%}
  generators:
  - matrix:
      generators:
      - git:
          repoURL: 'https://git.example/r.git'
          revision: main
          directories: [{path: 'apps/*'}, {path: apps/legacy, exclude: true}]
      - matrix:
          generators:
          - clusters: {selector: {matchLabels: {env: prod}}}
          - merge:
              mergeKeys: [name]
              generators:
              - list: {elements: [{name: a, replicas: 2}]}
              - list: {elements: [{name: a, replicas: 3}]}
    selector: {matchExpressions: [{key: name, operator: NotIn, values: [skip]}]}
  templatePatch: |
    spec:
      syncPolicy:
        automated: {prune: true}
  template:
    metadata:
      name: '{{.path.basename}}-{{.name}}'
      labels: {team: platform}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: '{{.path.path}}', targetRevision: main}
      destination: {name: '{{.name}}', namespace: '{{.path.basename}}'}
      syncPolicy:
        automated: {prune: true, selfHeal: true}
        syncOptions: [CreateNamespace=true, PrunePropagationPolicy=background]
        retry: {limit: 5, backoff: {duration: 5s, factor: 2, maxDuration: 3m}}`,
		"application with every sync option family": appHeader + `spec:
  source:
    repoURL: 'https://git.example/r.git'
    path: overlays/prod
    targetRevision: v1.3.0
    kustomize: {images: ['nginx=nginx:1.27'], commonLabels: {team: web}}
  destination: {server: 'https://127.0.0.1:6443', namespace: web}
  ignoreDifferences:
  - {group: apps, kind: Deployment, jsonPointers: [/spec/replicas]}
  - {kind: ConfigMap, jqPathExpressions: ['.data.generated']}
  syncPolicy:
    automated: {prune: true, selfHeal: true, allowEmpty: false}
    syncOptions: [ServerSideApply=true, ApplyOutOfSyncOnly=true, PruneLast=true, Validate=false, FailOnSharedResource=true]
    retry: {limit: -1, backoff: {duration: '30', factor: 1}}`,
		"helm chart with values from another source": appHeader + `spec:
  sources:
  - repoURL: 'oci://registry.example/charts'
    chart: web
    targetRevision: '^1.2'
    helm:
      releaseName: web
      valueFiles: ['$values/envs/prod/web.yaml']
      parameters: [{name: image.tag, value: '1.27', forceString: true}]
      fileParameters: [{name: config, path: '$values/envs/prod/config.txt'}]
      valuesObject: {replicaCount: 3}
      skipTests: true
      apiVersions: [monitoring.coreos.com/v1]
  - {repoURL: 'git@git.example:platform/values.git', targetRevision: main, ref: values}
  destination: {name: in-cluster, namespace: web}`,
		"cluster from a kubeconfig secret": `
apiVersion: navarch.io/v1alpha1
kind: Cluster
metadata: {name: prod-eu, labels: {env: prod, region: eu}}
spec:
  server: 'https://127.0.0.1:6443'
  kubeconfigSecretRef: {namespace: navarch-system, name: prod-eu-kubeconfig}`,
	}
	for name, y := range valid {
		t.Run(name, func(t *testing.T) {
			obj := decode(t, y)
			if err := c.Create(context.Background(), obj); err != nil {
				t.Fatalf("the apiserver rejected a valid %s: %v", obj.GetKind(), err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
		})
	}
}

// TestMaxDeletionsIsACountOrAPercentage checks that a count means the same quoted or not, as it
// does in the controller: "0" was once refused while 0 was accepted.
func TestMaxDeletionsIsACountOrAPercentage(t *testing.T) {
	c := env.Client
	for _, v := range []string{`0`, `"0"`, `3`, `"3"`, `"25%"`, `"0%"`, `"100%"`} {
		t.Run(v, func(t *testing.T) {
			obj := decode(t, appSetHeader+`spec:
  syncPolicy: {maxDeletions: `+v+`}
  generators: [{clusters: {}}]`+appSetTemplate)
			if err := c.Create(context.Background(), obj); err != nil {
				t.Fatalf("the apiserver rejected maxDeletions: %s: %v", v, err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
		})
	}
}

func decode(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &obj.Object); err != nil {
		t.Fatalf("test YAML does not parse: %v", err)
	}
	return obj
}

// env is the apiserver, with the generated CRDs installed, that all tests in this package
// share.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Name: "api-validation"}, &env))
}
