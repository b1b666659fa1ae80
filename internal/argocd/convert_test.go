package argocd

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// seedAppSet is the ApplicationSet of the seed guide, as users have it.
const seedAppSet = `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: { name: all-apps, namespace: argocd, uid: 1234, resourceVersion: "99" }
spec:
  generators:
    - git:
        repoURL: https://github.com/org/deploy.git
        revision: main
        directories: [{ path: "apps/*" }]
  template:
    metadata: { name: '{{path.basename}}', finalizers: [resources-finalizer.argocd.argoproj.io] }
    spec:
      project: default
      source: { repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: '{{path}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{path.basename}}' }
      syncPolicy: { automated: { prune: true, selfHeal: true } }
status:
  conditions: [{type: ErrorOccurred, status: "False"}]
`

func decode(t *testing.T, y string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(y), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestApplicationSetFromArgoCD(t *testing.T) {
	set, warnings, err := ApplicationSet(decode(t, seedAppSet))
	if err != nil {
		t.Fatalf("the seed guide's ApplicationSet does not convert: %v", err)
	}
	if set.APIVersion != "navarch.io/v1alpha1" || set.Name != "all-apps" || set.Namespace != "argocd" {
		t.Errorf("converted %s %s/%s", set.APIVersion, set.Namespace, set.Name)
	}
	if set.UID != "" || set.ResourceVersion != "" {
		t.Errorf("server-written metadata carried over: uid %q resourceVersion %q", set.UID, set.ResourceVersion)
	}
	g := set.Spec.Generators[0].Git
	if g == nil || g.RepoURL != "https://github.com/org/deploy.git" || g.Directories[0].Path != "apps/*" {
		t.Fatalf("git generator not carried over: %+v", set.Spec.Generators[0])
	}
	tmpl := set.Spec.Template
	if tmpl.Spec.Source.Path != "{{path}}" || !tmpl.Spec.SyncPolicy.Automated.SelfHeal {
		t.Errorf("template spec not carried over: %+v", tmpl.Spec)
	}
	if len(tmpl.Metadata.Finalizers) != 1 || tmpl.Metadata.Finalizers[0] != navarchv1.FinalizerResources {
		t.Errorf("template finalizers = %v, want [%s]", tmpl.Metadata.Finalizers, navarchv1.FinalizerResources)
	}
	if tmpl.Spec.Project != "default" {
		t.Errorf("template project %q, want default kept", tmpl.Spec.Project)
	}
	assertWarnings(t, warnings, []string{"spec.template.metadata.finalizers"})
}

// spec.project, the plugin generator and spec.preservedFields mean in navarch what they mean
// in Argo CD, so they are kept as they are, templated values included.
func TestProjectsPluginsAndPreservedFieldsAreKept(t *testing.T) {
	set, warnings, err := ApplicationSet(decode(t, `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: teams, namespace: argocd}
spec:
  goTemplate: true
  preservedFields: {annotations: [example.com/owner], labels: [tier]}
  generators:
  - plugin:
      configMapRef: {name: teams-plugin}
      input: {parameters: {org: acme, limit: 10, tags: [a, b]}}
      requeueAfterSeconds: 300
      values: {env: prod}
      template:
        metadata: {}
        spec: {project: 'team-{{.team}}-override'}
  - matrix:
      generators:
      - plugin: {configMapRef: {name: other}}
      - list: {elements: [{team: b}]}
  template:
    metadata: {name: '{{.team}}'}
    spec:
      project: 'team-{{.team}}'
      source: {repoURL: https://github.com/org/deploy.git, targetRevision: main, path: '{{.team}}'}
      destination: {name: prod, namespace: '{{.team}}'}`))
	if err != nil {
		t.Fatalf("does not convert: %v", err)
	}
	assertWarnings(t, warnings, nil)
	if got := set.Spec.Template.Spec.Project; got != "team-{{.team}}" {
		t.Errorf("template project %q, want the templated value kept", got)
	}
	p := set.Spec.Generators[0].Plugin
	if p == nil || p.ConfigMapRef.Name != "teams-plugin" || p.RequeueAfterSeconds == nil || *p.RequeueAfterSeconds != 300 ||
		p.Values["env"] != "prod" || string(p.Input.Parameters["limit"].Raw) != "10" {
		t.Fatalf("plugin generator not carried over: %+v", p)
	}
	if p.Template == nil || !strings.Contains(string(p.Template.Spec.Raw), `"project":"team-{{.team}}-override"`) {
		t.Errorf("plugin template override not carried over: %+v", p.Template)
	}
	if nested := set.Spec.Generators[1].Matrix; nested == nil || nested.Generators[0].Plugin == nil || nested.Generators[0].Plugin.ConfigMapRef.Name != "other" {
		t.Errorf("nested plugin generator not carried over: %+v", nested)
	}
	pf := set.Spec.PreservedFields
	if pf == nil || len(pf.Annotations) != 1 || pf.Annotations[0] != "example.com/owner" || len(pf.Labels) != 1 || pf.Labels[0] != "tier" {
		t.Errorf("preservedFields not carried over: %+v", pf)
	}
}

func TestConversionRefusesWhatWouldChangeBehaviour(t *testing.T) {
	tests := []struct {
		name, yaml string
		fields     []string
	}{
		{
			name: "a config management plugin, Helm 2, an OCI artifact that is not a chart",
			yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: a}
spec:
  project: payments
  sources:
  - {repoURL: 'https://charts.example.com', chart: redis, targetRevision: 17.0.0, helm: {version: v2}}
  - {repoURL: 'https://github.com/org/config.git', path: redis, plugin: {name: sops}}
  - {repoURL: 'oci://registry.example.com/manifests', targetRevision: 1.0.0, path: .}
  destination: {name: prod}`,
			fields: []string{"spec.sources[0].helm.version", "spec.sources[1].plugin", "spec.sources[2].repoURL"},
		},
		{
			name: "unsupported generators and providers, nested in a matrix",
			yaml: `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  generators:
  - scmProvider: {gitlab: {group: org}}
  - matrix:
      generators:
      - pullRequest: {gitlab: {project: "1"}}
      - matrix:
          generators:
          - clusters: {flatList: true}
          - list: {elements: [{a: b}], unknownKnob: true}
  template:
    metadata: {name: x}
    spec:
      source: {repoURL: 'https://x', directory: {jsonnet: {}}}
      destination: {name: x}
      syncPolicy: {managedNamespaceMetadata: {labels: {a: b}}}`,
			fields: []string{
				"spec.generators[0].scmProvider.gitlab",
				"spec.generators[1].matrix.generators[0].pullRequest.gitlab",
				"spec.generators[1].matrix.generators[1].matrix.generators[0].clusters.flatList",
				"spec.generators[1].matrix.generators[1].matrix.generators[1].list.unknownKnob",
				"spec.template.spec.source.directory.jsonnet",
				"spec.template.spec.syncPolicy.managedNamespaceMetadata",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := decode(t, tt.yaml)
			var err error
			if obj["kind"] == "Application" {
				_, _, err = Application(obj)
			} else {
				_, _, err = ApplicationSet(obj)
			}
			var errs ConvertErrors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want ConvertErrors naming %v", err, tt.fields)
			}
			named := map[string]bool{}
			for _, fe := range errs {
				named[fe.Field] = true
			}
			for _, f := range tt.fields {
				if !named[f] {
					t.Errorf("no error names %s; errors:\n%v", f, err)
				}
			}
			if len(errs) != len(tt.fields) {
				t.Errorf("got %d errors, want %d:\n%v", len(errs), len(tt.fields), err)
			}
		})
	}
}

func TestNativeObjectsAreCheckedForUnknownFields(t *testing.T) {
	_, _, err := ApplicationSet(decode(t, `
apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: {name: s}
spec:
  project: default
  generators: [{list: {elements: [{a: b}]}}]
  template:
    metadata: {name: x}
    spec: {source: {repoURL: 'https://x', pathh: typo}, destination: {name: x}}`))
	if err == nil {
		t.Fatal("a navarch ApplicationSet with unknown fields was accepted")
	}
	for _, want := range []string{"spec.project: unknown field", "spec.template.spec.source.pathh: unknown field"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestWrongKindOrVersion(t *testing.T) {
	if _, _, err := ApplicationSet(decode(t, "apiVersion: apps/v1\nkind: ApplicationSet\n")); err == nil || !strings.Contains(err.Error(), "apiVersion") {
		t.Errorf("wrong apiVersion: %v", err)
	}
	if _, _, err := ApplicationSet(decode(t, "apiVersion: navarch.io/v1alpha1\nkind: Application\n")); err == nil || !strings.Contains(err.Error(), "kind") {
		t.Errorf("wrong kind: %v", err)
	}
}

// The pull-request and SCM provider generators' own fields are fields, not providers.
func TestGitHubGeneratorsConvert(t *testing.T) {
	set, _, err := ApplicationSet(decode(t, `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: previews, namespace: argocd}
spec:
  generators:
  - pullRequest:
      github: {owner: org, repo: app, tokenRef: {secretName: gh, key: token}, appSecretName: app-creds, labels: [preview]}
      filters: [{branchMatch: "^feat"}]
      values: {host: 'pr-{{number}}.example.com'}
      continueOnRepoNotFoundError: true
      requeueAfterSeconds: 60
  - scmProvider:
      cloneProtocol: https
      github: {organization: org, allBranches: true, api: https://ghe.example.com/api/v3/}
      filters: [{repositoryMatch: "^svc-", pathsExist: [deploy], labelMatch: deploy}]
      values: {team: platform}
  template:
    metadata: {name: 'x-{{number}}'}
    spec:
      project: default
      source: {repoURL: https://github.com/org/app.git, targetRevision: '{{head_sha}}', path: deploy}
      destination: {server: https://kubernetes.default.svc, namespace: 'pr-{{number}}'}
`))
	if err != nil {
		t.Fatalf("does not convert: %v", err)
	}
	pr := set.Spec.Generators[0].PullRequest
	if pr == nil || !pr.ContinueOnRepoNotFoundError || pr.Values["host"] != "pr-{{number}}.example.com" || pr.Github.AppSecretName != "app-creds" {
		t.Errorf("pullRequest generator not carried over: %+v", pr)
	}
	scm := set.Spec.Generators[1].SCMProvider
	if scm == nil || scm.CloneProtocol != "https" || !scm.Github.AllBranches || scm.Filters[0].PathsExist[0] != "deploy" || scm.Values["team"] != "platform" {
		t.Errorf("scmProvider generator not carried over: %+v", scm)
	}
}
