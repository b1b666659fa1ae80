package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/chartserver"
	"github.com/navarch-io/navarch/internal/testenv"
)

// webChart is the files of chart "web": a ConfigMap whose data shows the values and the chart
// version, a Service, and a pre-install Job hook that the sync runs as PreSync.
func webChart() map[string]string {
	return map[string]string{
		"values.yaml": "greeting: hello\nport: 80\n",
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
  chart: {{ .Chart.Version | quote }}
  namespace: {{ .Release.Namespace | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
`,
		"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  ports:
  - port: {{ .Values.port }}
`,
		"templates/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-1"
    helm.sh/hook-delete-policy: before-hook-creation
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: registry.example.com/migrate:{{ .Chart.Version }}
`,
		"templates/NOTES.txt": "web {{ .Chart.Version }} is installed\n",
	}
}

// chartRepository starts a Helm repository holding the charts of the test.
func chartRepository(t *testing.T) *chartserver.Repository {
	t.Helper()
	r, err := chartserver.StartRepository(chartserver.RepositoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// addChart adds chart "web" at version to r.
func addChart(t *testing.T, r *chartserver.Repository, version string, files map[string]string) {
	t.Helper()
	if _, err := r.AddChartFiles("web", version, files); err != nil {
		t.Fatalf("add chart web %s: %v", version, err)
	}
}

// configMapData is the data of a ConfigMap on workload cluster east, nil if there is none.
func configMapData(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	var cm corev1.ConfigMap
	err := workloads["east"].Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

// waitForConfigMap waits until the ConfigMap's data, on workload cluster east, has the values
// of want.
func waitForConfigMap(t *testing.T, ns, name string, want map[string]string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("ConfigMap %s/%s on east has %v", ns, name, want), func() string {
		data := configMapData(t, ns, name)
		for k, v := range want {
			if data[k] != v {
				return fmt.Sprintf("data %v", data)
			}
		}
		return ""
	})
}

// Seed 2's Helm Application: a chart from a Helm repository with its values in Git (two
// sources) on a workload cluster. It syncs, with the chart's pre-install hook as PreSync; a
// values change in Git syncs; a new targetRevision syncs; history records both sources.
func TestHelmChartFromARepositoryWithValuesFromGit(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-web"
	charts := chartRepository(t)
	addChart(t, charts, "1.0.0", webChart())
	addChart(t, charts, "1.1.0", webChart())
	values := repo(t, map[string]string{"envs/east/web.yaml": "greeting: hello from git\n"})

	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: web}
spec:
  sources:
  - repoURL: %s
    chart: web
    targetRevision: 1.0.0
    helm:
      valueFiles: [$values/envs/east/web.yaml]
      parameters: [{name: port, value: "8080"}]
  - {repoURL: %s, targetRevision: main, ref: values}
  destination: {name: east, namespace: %s}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
`, charts.URL(), values, target))

	got := waitForApp(t, app, "Synced and Healthy at chart 1.0.0", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && len(a.Status.Sync.Revisions) == 2 && a.Status.Sync.Revisions[0] == "1.0.0"
	})
	first := got.Status.Sync.Revisions[1]
	if len(first) != 40 {
		t.Errorf("revision of the values source %q: want a commit SHA", first)
	}
	if want := "1.0.0," + first; got.Status.Sync.Revision != want {
		t.Errorf("status.sync.revision %q, want %q", got.Status.Sync.Revision, want)
	}
	waitForConfigMap(t, target, "web-config", map[string]string{
		"greeting": "hello from git", "chart": "1.0.0", "namespace": target,
	})
	// The chart sees the destination cluster's version, not Helm's built-in default (v1.20.0).
	if kube := configMapData(t, target, "web-config")["kube"]; !strings.HasPrefix(kube, "v1.37") {
		t.Errorf(".Capabilities.KubeVersion.Version = %q, want the cluster's v1.37", kube)
	}
	state := got.Status.OperationState
	if r := results(got); !slices.Contains(r, "PreSync/Job:Synced:Succeeded(hook)") {
		t.Errorf("task results %v: want the chart's pre-install Job as a PreSync hook", r)
	}
	if !slices.Equal(state.SyncResult.Revisions, got.Status.Sync.Revisions) {
		t.Errorf("syncResult.revisions %v, want %v", state.SyncResult.Revisions, got.Status.Sync.Revisions)
	}
	for _, r := range got.Status.Resources {
		if r.Kind == "Job" {
			t.Errorf("the hook is part of the compared resources: %+v", r)
		}
	}

	// A values change in Git.
	push(t, "greet differently", map[string]string{"envs/east/web.yaml": "greeting: hi again\n"})
	refresh(t, app)
	waitForConfigMap(t, target, "web-config", map[string]string{"greeting": "hi again", "chart": "1.0.0"})
	waitForApp(t, app, "Synced at the new values commit", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && len(a.Status.Sync.Revisions) == 2 && a.Status.Sync.Revisions[1] != first
	})

	// An upgrade of the chart.
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) { a.Spec.Sources[0].TargetRevision = "~1.1" })
	waitForConfigMap(t, target, "web-config", map[string]string{"greeting": "hi again", "chart": "1.1.0"})
	got = waitForApp(t, app, "Synced at chart 1.1.0", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revisions[0] == "1.1.0"
	})
	h := got.Status.History
	if len(h) < 3 {
		t.Fatalf("history %+v: want the three syncs", h)
	}
	last := h[len(h)-1]
	if len(last.Sources) != 2 || last.Sources[0].Chart != "web" || last.Revisions[0] != "1.1.0" {
		t.Errorf("last history entry %+v: want both sources at chart 1.1.0", last)
	}
	if h[0].Revisions[0] != "1.0.0" || h[0].Revisions[1] != first {
		t.Errorf("first history entry revisions %v, want [1.0.0 %s]", h[0].Revisions, first)
	}
}

// A chart directory in Git, with a vendored dependency and one fetched from a Helm repository;
// and a kustomization that inflates a chart of that repository with helmCharts.
func TestHelmChartFromGit(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-web"
	charts := chartRepository(t)
	if _, err := charts.AddChartFiles("lib", "1.2.0", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lib}\ndata: {from: {{ .Chart.Name }}-{{ .Chart.Version }}}\n",
	}); err != nil {
		t.Fatal(err)
	}
	addChart(t, charts, "1.0.0", webChart())
	files := map[string]string{}
	for k, v := range webChart() {
		files["charts/web/"+k] = v
	}
	files["charts/web/Chart.yaml"] = fmt.Sprintf(`apiVersion: v2
name: web
version: 2.0.0
dependencies:
- {name: extra, version: 0.1.0}
- {name: lib, version: ^1.0.0, repository: %s}
`, charts.URL())
	files["charts/web/charts/extra/Chart.yaml"] = "apiVersion: v2\nname: extra\nversion: 0.1.0\n"
	files["charts/web/charts/extra/templates/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {from: dependency}\n"
	files["charts/web/values-east.yaml"] = "greeting: east\n"
	files["inflate/kustomization.yaml"] = fmt.Sprintf(`helmCharts:
- name: web
  repo: %s
  version: 1.0.0
  releaseName: kweb
  valuesInline: {greeting: from kustomize}
commonLabels: {inflated: "yes"}
`, charts.URL())
	url := repo(t, files)
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: web-git}
spec:
  source:
    repoURL: %s
    targetRevision: main
    path: charts/web
    helm:
      releaseName: web
      valueFiles: [values-east.yaml]
      valuesObject: {port: 9090}
  destination: {name: east, namespace: %s}
  syncPolicy:
    automated: {}
    syncOptions: [CreateNamespace=true]
`, url, target))
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	waitForConfigMap(t, target, "web-config", map[string]string{"greeting": "east", "chart": "2.0.0"})
	waitForConfigMap(t, target, "extra", map[string]string{"from": "dependency"})
	waitForConfigMap(t, target, "lib", map[string]string{"from": "lib-1.2.0"})

	inflated := createApp(t, ns, fmt.Sprintf(`
metadata: {name: inflate}
spec:
  source: {repoURL: %s, targetRevision: main, path: inflate}
  destination: {name: east, namespace: %s-k}
  syncPolicy:
    automated: {}
    syncOptions: [CreateNamespace=true]
`, url, target))
	waitForApp(t, inflated, "Synced and Healthy", syncedAndHealthy)
	waitForConfigMap(t, target+"-k", "kweb-config", map[string]string{"greeting": "from kustomize", "chart": "1.0.0"})
	var cm corev1.ConfigMap
	if err := workloads["east"].Client.Get(context.Background(), client.ObjectKey{Namespace: target + "-k", Name: "kweb-config"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Labels["inflated"] != "yes" {
		t.Errorf("labels %v: the kustomization's commonLabels did not apply to the chart's objects", cm.Labels)
	}
}

// Bad input is a condition that names the source, and nothing is applied or pruned.
func TestHelmErrorsApplyAndPruneNothing(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	charts := chartRepository(t)
	addChart(t, charts, "1.0.0", webChart())
	broken := webChart()
	broken["templates/configmap.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Values.missing.deeper }}\n"
	addChart(t, charts, "1.2.0", broken)
	values := repo(t, map[string]string{"envs/east/web.yaml": "greeting: hi\n"})

	// A synced Application whose chart then fails to render keeps its resources.
	target := ns + "-web"
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: web}
spec:
  source: {repoURL: %s, chart: web, targetRevision: 1.0.0}
  destination: {name: east, namespace: %s}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
`, charts.URL(), target))
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) { a.Spec.Source.TargetRevision = "1.2.0" })
	waitForComparisonError(t, app, "templates/configmap.yaml:6")
	testenv.Consistently(t, 3*time.Second, "the synced objects stay", func() string {
		if configMapData(t, target, "web-config") == nil {
			return "the ConfigMap of the last good rendering was pruned"
		}
		return ""
	})

	cases := []struct {
		name, sources, want string
	}{
		{
			name: "missing-values",
			sources: fmt.Sprintf(`
  sources:
  - {repoURL: %s, chart: web, targetRevision: 1.0.0, helm: {valueFiles: [$values/envs/east/nope.yaml]}}
  - {repoURL: %s, targetRevision: main, ref: values}`, charts.URL(), values),
			want: "envs/east/nope.yaml",
		},
		{
			name:    "unknown-version",
			sources: fmt.Sprintf("\n  source: {repoURL: %s, chart: web, targetRevision: 9.9.9}", charts.URL()),
			want:    `"9.9.9"`,
		},
		{
			name:    "unreachable-registry",
			sources: "\n  source: {repoURL: 'oci://127.0.0.1:1/charts', chart: web, targetRevision: 1.0.0}",
			want:    "127.0.0.1:1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := ns + "-" + tc.name
			app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: %s}
spec:%s
  destination: {name: east, namespace: %s}
  syncPolicy:
    automated: {prune: true}
    syncOptions: [CreateNamespace=true]
`, tc.name, tc.sources, target))
			waitForComparisonError(t, app, tc.want)
			var list corev1.ConfigMapList
			if err := workloads["east"].Client.List(context.Background(), &list, client.InNamespace(target)); err != nil {
				t.Fatal(err)
			}
			for _, cm := range list.Items {
				if cm.Name != "kube-root-ca.crt" {
					t.Errorf("ConfigMap %s was applied although the source does not render", cm.Name)
				}
			}
			if st := getApp(t, app).Status.OperationState; st != nil {
				t.Errorf("an operation ran: %+v", st)
			}
		})
	}
}

// waitForComparisonError waits for the ComparisonError condition to say want.
func waitForComparisonError(t *testing.T, app *navarchv1.Application, want string) {
	t.Helper()
	waitForApp(t, app, "ComparisonError naming "+want, func(a *navarchv1.Application) bool {
		c := meta.FindStatusCondition(a.Status.Conditions, navarchv1.ApplicationComparisonError)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, want)
	})
}
