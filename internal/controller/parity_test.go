package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// ApplicationSets ported from Argo CD render through the controller as they do there (issue
// 16). Clusters are cluster-scoped and shared by every test of the package: each test's
// Clusters carry the label owner=<its namespace>, and its selectors require it.

// registerClusters creates in-cluster Clusters <ns>-<suffix> labelled owner=ns and env, as
// `navarch import` makes them from Argo CD cluster Secrets (without Argo CD's secret-type
// label), and deletes them when the test ends.
func registerClusters(t *testing.T, ns string, envBySuffix map[string]string) {
	t.Helper()
	for suffix, stage := range envBySuffix {
		c := &navarchv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + suffix, Labels: map[string]string{"owner": ns, "env": stage}},
			Spec:       navarchv1.ClusterSpec{InCluster: true},
		}
		if err := env.Client.Create(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
	}
}

// checkAnnotations fails unless each Application has the annotations wanted for it.
func checkAnnotations(t *testing.T, apps map[string]navarchv1.Application, want map[string]map[string]string) {
	t.Helper()
	for name, annotations := range want {
		for k, v := range annotations {
			if got := apps[name].Annotations[k]; got != v {
				t.Errorf("%s: annotation %s=%q, want %q", name, k, got, v)
			}
		}
	}
}

func TestParityMatrixValuesUseTheEarlierChildsAndTheirOwnParameters(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	repo := createRepo(t, ns, "apps/api", "apps/web")
	registerClusters(t, ns, map[string]string{"a": "prod", "b": "dev"})
	applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: s}
spec:
  goTemplate: true
  goTemplateOptions: [missingkey=error]
  generators:
    - matrix:
        generators:
          - git: {repoURL: %q, revision: main, directories: [{path: 'apps/*'}]}
          - clusters:
              selector: {matchLabels: {owner: %s, env: prod}}
              values: {app: '{{ .path.basename }}', target: '{{ .name }}'}
  template:
    metadata: {name: '{{ .values.app }}-{{ .values.target }}', annotations: {target: '{{ .values.target }}'}}
    spec:
      source: {repoURL: %q, targetRevision: main, path: '{{ .path.path }}'}
      destination: {name: '{{ .name }}', namespace: '{{ .values.app }}'}
`, repo, ns, repo))
	apps := waitForApps(t, ns, fmt.Sprintf("api-%[1]s-a,web-%[1]s-a", ns))
	checkAnnotations(t, apps, map[string]map[string]string{
		"api-" + ns + "-a": {"target": ns + "-a"},
		"web-" + ns + "-a": {"target": ns + "-a"},
	})
	if got := apps["web-"+ns+"-a"].Spec.Destination.Namespace; got != "web" {
		t.Errorf("web: destination namespace %q, want web (values.app from the git child)", got)
	}
}

func TestParityClustersEmitAnEmptyProject(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	registerClusters(t, ns, map[string]string{"a": "prod"})
	applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: s}
spec:
  goTemplate: true
  goTemplateOptions: [missingkey=error]
  generators: [{clusters: {selector: {matchLabels: {owner: %s}}}}]
  template:
    metadata: {name: 'mon-{{ .name }}', annotations: {project: 'p-{{ .project }}'}}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: monitoring}
      destination: {name: '{{ .name }}', namespace: monitoring}
`, ns))
	apps := waitForApps(t, ns, "mon-"+ns+"-a")
	checkAnnotations(t, apps, map[string]map[string]string{"mon-" + ns + "-a": {"project": "p-"}})
}

func TestParitySecretTypeSelectorMatchesEveryCluster(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	registerClusters(t, ns, map[string]string{"a": "prod", "b": "dev"})
	applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: s}
spec:
  generators:
    - clusters:
        selector: {matchLabels: {argocd.argoproj.io/secret-type: cluster, owner: %[1]s}}
    - matrix:
        generators:
          - list: {elements: [{app: web}]}
          - clusters:
              selector:
                matchLabels: {owner: %[1]s}
                matchExpressions: [{key: argocd.argoproj.io/secret-type, operator: In, values: [cluster]}]
        template: {metadata: {name: 'web-{{name}}'}}
  template:
    metadata: {name: 'mon-{{name}}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: monitoring}
      destination: {name: '{{name}}', namespace: monitoring}
`, ns))
	waitForApps(t, ns, fmt.Sprintf("mon-%[1]s-a,mon-%[1]s-b,web-%[1]s-a,web-%[1]s-b", ns))
}

func TestParityFasttemplateEdgeCasesRenderAsInArgoCD(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	repo := createRepo(t, ns, "platform/ingress", "platform/ingress/overlays")
	if _, err := env.Git.Update(ns, "Add a team file", func(work string) error {
		if err := os.MkdirAll(filepath.Join(work, "teams"), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(work, "teams", "search.yaml"), []byte("team: search\nowner: null\n"), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: s}
spec:
  generators:
    - git: {repoURL: %[1]q, revision: main, files: [{path: 'teams/*.yaml'}]}
    - list:
        elements: [{team: payments, owner: p, values: {size: small}}]
        elementsYaml: |
          - team: billing
            owner: b
            values: {size: large}
    - git:
        repoURL: %[1]q
        revision: main
        directories: [{path: 'platform/**'}]
        template: {metadata: {name: 'platform-{{path.basenameNormalized}}', annotations: {path: '{{path}}'}}}
  template:
    metadata: {name: 'team-{{team}}', annotations: {owner: '{{owner}}', size: '{{values.size}}'}}
    spec:
      source: {repoURL: %[1]q, targetRevision: main, path: 'teams/{{team}}'}
      destination: {name: in-cluster, namespace: '{{team}}'}
`, repo))
	apps := waitForApps(t, ns, "platform-ingress,platform-overlays,team-billing,team-payments,team-search")
	checkAnnotations(t, apps, map[string]map[string]string{
		// A null in a git file is "<nil>", as Argo CD formats it.
		"team-search":   {"owner": "<nil>"},
		"team-payments": {"owner": "p", "size": "small"},
		// An elementsYaml item is appended as decoded: its nested values.size is no parameter.
		"team-billing": {"owner": "b", "size": "{{values.size}}"},
		// platform/** lists every directory below platform.
		"platform-ingress":  {"path": "platform/ingress"},
		"platform-overlays": {"path": "platform/ingress/overlays"},
	})
}
