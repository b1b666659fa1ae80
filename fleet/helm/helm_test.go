package helm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	dto "github.com/prometheus/client_model/go"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
)

// addFiles adds files, by path relative to dir, to the snapshot fsys.
func addFiles(fsys fstest.MapFS, dir string, files map[string]string) fstest.MapFS {
	for name, data := range files {
		fsys[joinPath(dir, name)] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

// packageChart packages the chart made of files (paths relative to the chart directory) as
// `helm package` does.
func packageChart(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buffered []*archive.BufferedFile
	for name, data := range files {
		buffered = append(buffered, &archive.BufferedFile{Name: name, Data: []byte(data)})
	}
	ch, err := chartloader.LoadFiles(buffered)
	if err != nil {
		t.Fatalf("load chart to package: %v", err)
	}
	p, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatalf("package chart: %v", err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fetchCall is one call of fakeFetcher.FetchChart.
type fetchCall struct {
	repoURL, name, version string
	passCredentials        bool
}

// fakeFetcher serves packaged charts by "repoURL name version", the version exactly as asked.
type fakeFetcher struct {
	charts map[string][]byte

	mu    sync.Mutex
	calls []fetchCall
}

func (f *fakeFetcher) FetchChart(_ context.Context, repoURL, name, version string, passCredentials bool) ([]byte, string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fetchCall{repoURL, name, version, passCredentials})
	f.mu.Unlock()
	data, ok := f.charts[repoURL+" "+name+" "+version]
	if !ok {
		return nil, "", fmt.Errorf("%s: chart %s version %q not found", repoURL, name, version)
	}
	sum := sha256.Sum256(data)
	return data, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// kindNames lists objects as "Kind/name".
func kindNames(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetKind() + "/" + o.GetName()
	}
	return out
}

// find returns the object of that kind and name.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s/%s among %v", kind, name, kindNames(objs))
	return nil
}

// webChart is an application chart with a vendored, a fetched, a file:// and a disabled
// dependency, CRDs, hooks, a test, NOTES.txt, a values schema, lookup and capabilities.
var webChart = map[string]string{
	"Chart.yaml": `apiVersion: v2
name: web
version: 1.2.0
kubeVersion: ">=1.30.0-0"
dependencies:
  - name: db
    version: 0.1.0
  - name: cache
    version: ~1.0.0
    repository: https://charts.example.com
  - name: shared
    version: ">=0.1.0"
    repository: file://../shared
  - name: metrics
    version: 2.0.0
    repository: oci://registry.example.com/charts
    condition: metrics.enabled
`,
	"Chart.lock": `dependencies:
  - name: cache
    repository: https://charts.example.com
    version: 1.0.3
  - name: metrics
    repository: oci://registry.example.com/charts
    version: 2.0.0
digest: sha256:0000
generated: "2026-01-02T03:04:05Z"
`,
	"values.yaml": `replicaCount: 1
image: nginx:1.27
metrics:
  enabled: false
db:
  password: changeme
`,
	"values.schema.json": `{
  "$schema": "https://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {"replicaCount": {"type": "integer", "minimum": 1}}
}`,
	".helmignore": "*.bak\n",
	"notes.bak":   "not a chart file",
	"templates/_helpers.tpl": `{{- define "web.fullname" -}}{{ .Release.Name }}-web{{- end -}}
`,
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "web.fullname" . }}
  annotations:
    kube-version: {{ .Capabilities.KubeVersion.Version | quote }}
    has-monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" | quote }}
    has-apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: web
          image: {{ .Values.image }}
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ include "web.fullname" . }}
spec:
  ports:
    - port: 80
`,
	"templates/lookup.yaml": `{{- $existing := lookup "v1" "Secret" .Release.Namespace "web-credentials" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-lookup
  namespace: {{ .Release.Namespace }}
data:
  existing: {{ if $existing }}found{{ else }}absent{{ end }}
`,
	"templates/hooks/migrate.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-5"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: {{ .Values.image }}
`,
	"templates/hooks/legacy.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: legacy-crd-install
  annotations:
    helm.sh/hook: crd-install
`,
	"templates/tests/test-connection.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ include "web.fullname" . }}-test
  annotations:
    helm.sh/hook: test
spec:
  restartPolicy: Never
  containers:
    - name: wget
      image: busybox
`,
	"templates/NOTES.txt": "Visit http://{{ .Release.Name }}.example.com\n",
	"crds/crontab.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  names: {kind: CronTab, plural: crontabs}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
`,
	"charts/db/Chart.yaml":  "apiVersion: v2\nname: db\nversion: 0.1.0\n",
	"charts/db/values.yaml": "password: \"\"\n",
	"charts/db/templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-db
stringData:
  password: {{ .Values.password | quote }}
`,
	"charts/db/crds/backup.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: backups.db.example.com
`,
}

// sharedChart is the file:// dependency of webChart, at apps/shared.
var sharedChart = map[string]string{
	"Chart.yaml":  "apiVersion: v2\nname: shared\nversion: 0.2.0\n",
	"values.yaml": "greeting: hello\n",
	"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: shared-config
data:
  greeting: {{ .Values.greeting | quote }}
`,
}

// repositoryCharts serves the fetched dependencies of webChart.
func repositoryCharts(t testing.TB) *fakeFetcher {
	return &fakeFetcher{charts: map[string][]byte{
		"https://charts.example.com cache 1.0.3": packageChart(t, map[string]string{
			"Chart.yaml": "apiVersion: v2\nname: cache\nversion: 1.0.3\n",
			"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-cache
`,
		}),
		"oci://registry.example.com/charts metrics 2.0.0": packageChart(t, map[string]string{
			"Chart.yaml": "apiVersion: v2\nname: metrics\nversion: 2.0.0\n",
			"templates/monitor.yaml": `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .Release.Name }}-metrics
`,
		}),
	}}
}

// webRequest renders webChart from apps/web of a snapshot.
func webRequest(opts *navarchv1.ApplicationSourceHelm) render.HelmRequest {
	fsys := addFiles(fstest.MapFS{}, "apps/web", webChart)
	addFiles(fsys, "apps/shared", sharedChart)
	return render.HelmRequest{
		Chart:       render.HelmChart{FS: fsys, Dir: "apps/web", Source: "apps/web"},
		Options:     opts,
		ReleaseName: "rel",
		Namespace:   "shop",
		Capabilities: render.Capabilities{
			KubeVersion: "v1.37.2",
			APIVersions: []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"},
		},
		IncludeCRDs: true,
	}
}

func TestRenderChartRendersLikeHelmTemplate(t *testing.T) {
	charts := repositoryCharts(t)
	r := New(Options{Charts: charts})
	objs, err := r.RenderChart(t.Context(), webRequest(&navarchv1.ApplicationSourceHelm{PassCredentials: true}))
	if err != nil {
		t.Fatal(err)
	}

	// CRDs first (the chart's, then its subcharts'), then the manifests in Helm's install
	// order, then the hooks; NOTES.txt, the hook Helm does not know, and the disabled
	// dependency are left out.
	want := []string{
		"CustomResourceDefinition/crontabs.stable.example.com",
		"CustomResourceDefinition/backups.db.example.com",
		"Secret/rel-db",
		"ConfigMap/shared-config",
		"ConfigMap/rel-lookup",
		"Service/rel-cache",
		"Service/rel-web",
		"Deployment/rel-web",
		"Pod/rel-web-test",
		"Job/rel-migrate",
	}
	if got := kindNames(objs); !slices.Equal(got, want) {
		t.Errorf("objects:\n got %v\nwant %v", got, want)
	}

	deploy := find(t, objs, "Deployment", "rel-web")
	if got := deploy.GetAnnotations(); got["kube-version"] != "v1.37.2" || got["has-monitoring"] != "true" || got["has-apps"] != "true" {
		t.Errorf("capabilities seen by the template: %v; want kube-version v1.37.2 and both API versions", got)
	}
	if replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); replicas != 1 {
		t.Errorf("replicas = %d, want 1 (an int64)", replicas)
	}
	if deploy.GetNamespace() != "" {
		t.Errorf("namespace = %q: a namespace the chart does not set stays empty", deploy.GetNamespace())
	}
	lookup := find(t, objs, "ConfigMap", "rel-lookup")
	if v, _, _ := unstructured.NestedString(lookup.Object, "data", "existing"); v != "absent" || lookup.GetNamespace() != "shop" {
		t.Errorf("lookup ConfigMap: existing=%q namespace=%q; want absent (lookup finds nothing) in shop", v, lookup.GetNamespace())
	}
	secret := find(t, objs, "Secret", "rel-db")
	if v, _, _ := unstructured.NestedString(secret.Object, "stringData", "password"); v != "changeme" {
		t.Errorf("subchart value password = %q, want changeme from the parent's db: values", v)
	}
	job := find(t, objs, "Job", "rel-migrate")
	wantHook := map[string]string{
		"helm.sh/hook":               "pre-install,pre-upgrade",
		"helm.sh/hook-weight":        "-5",
		"helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
	}
	for k, v := range wantHook {
		if got := job.GetAnnotations()[k]; got != v {
			t.Errorf("hook annotation %s = %q, want %q", k, got, v)
		}
	}

	wantCalls := []fetchCall{
		{"https://charts.example.com", "cache", "1.0.3", true},
		{"oci://registry.example.com/charts", "metrics", "2.0.0", true},
	}
	if !slices.Equal(charts.calls, wantCalls) {
		t.Errorf("fetched %v, want %v (the Chart.lock versions, with passCredentials)", charts.calls, wantCalls)
	}
}

func TestRenderChartOptions(t *testing.T) {
	tests := []struct {
		name string
		opts *navarchv1.ApplicationSourceHelm
		crds bool
		want []string // kinds/names that must be there
		gone []string // and those that must not
	}{{
		name: "skipTests leaves out test hooks only",
		opts: &navarchv1.ApplicationSourceHelm{SkipTests: true},
		crds: true,
		want: []string{"Job/rel-migrate", "CustomResourceDefinition/crontabs.stable.example.com"},
		gone: []string{"Pod/rel-web-test"},
	}, {
		name: "skipCrds leaves out crds/",
		opts: &navarchv1.ApplicationSourceHelm{SkipCrds: true},
		crds: true,
		want: []string{"Pod/rel-web-test", "Deployment/rel-web"},
		gone: []string{"CustomResourceDefinition/crontabs.stable.example.com", "CustomResourceDefinition/backups.db.example.com"},
	}, {
		name: "without IncludeCRDs, crds/ is left out",
		crds: false,
		want: []string{"Deployment/rel-web"},
		gone: []string{"CustomResourceDefinition/crontabs.stable.example.com"},
	}, {
		name: "a condition enables a dependency",
		opts: &navarchv1.ApplicationSourceHelm{Parameters: []navarchv1.HelmParameter{{Name: "metrics.enabled", Value: "true"}}},
		crds: true,
		want: []string{"ServiceMonitor/rel-metrics"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := webRequest(tt.opts)
			req.IncludeCRDs = tt.crds
			objs, err := New(Options{Charts: repositoryCharts(t)}).RenderChart(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			got := kindNames(objs)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s missing from %v", w, got)
				}
			}
			for _, g := range tt.gone {
				if slices.Contains(got, g) {
					t.Errorf("%s should be left out: %v", g, got)
				}
			}
		})
	}
}

func TestRenderChartKubeVersionAndAPIVersionsOfOptionsWin(t *testing.T) {
	req := webRequest(&navarchv1.ApplicationSourceHelm{KubeVersion: "1.31.4", APIVersions: []string{"example.com/v1"}})
	objs, err := New(Options{Charts: repositoryCharts(t)}).RenderChart(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := find(t, objs, "Deployment", "rel-web").GetAnnotations()
	if got["kube-version"] != "v1.31.4" || got["has-monitoring"] != "false" || got["has-apps"] != "true" {
		t.Errorf("capabilities: %v; want v1.31.4, no monitoring API (options replace the cluster's), apps/v1 by default", got)
	}

	req = webRequest(&navarchv1.ApplicationSourceHelm{KubeVersion: "v1.29.0"})
	_, err = New(Options{Charts: repositoryCharts(t)}).RenderChart(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "chart apps/web: chart requires kubeVersion >=1.30.0-0, which is incompatible with Kubernetes v1.29.0") {
		t.Errorf("err = %v, want the chart's kubeVersion constraint to fail", err)
	}
}

func TestRenderChartFromRepository(t *testing.T) {
	web := map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: web\nversion: 1.2.0\ndependencies:\n  - name: db\n    version: 0.1.0\n",
		"values.yaml":      "env: default\nsize: small\n",
		"values-prod.yaml": "env: prod\n",
		"envs/large.yaml":  "size: large\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  env: {{ .Values.env }}
  size: {{ .Values.size }}
`,
		"charts/db/Chart.yaml":            "apiVersion: v2\nname: db\nversion: 0.1.0\n",
		"charts/db/templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n",
	}
	charts := &fakeFetcher{charts: map[string][]byte{"https://charts.example.com web 1.2.0": packageChart(t, web)}}
	r := New(Options{Charts: charts})
	req := render.HelmRequest{
		Chart:       render.HelmChart{RepoURL: "https://charts.example.com", Name: "web", Version: "1.2.0"},
		Options:     &navarchv1.ApplicationSourceHelm{ValueFiles: []string{"values-prod.yaml", "/envs/*.yaml"}},
		ReleaseName: "web",
		Namespace:   "prod",
	}
	objs, err := r.RenderChart(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kindNames(objs), []string{"Secret/db", "ConfigMap/web"}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
	data, _, _ := unstructured.NestedStringMap(find(t, objs, "ConfigMap", "web").Object, "data")
	if data["env"] != "prod" || data["size"] != "large" {
		t.Errorf("data = %v, want the value files inside the chart applied", data)
	}

	req.Options.ValueFiles = []string{"../outside.yaml"}
	_, err = r.RenderChart(t.Context(), req)
	if want := `chart https://charts.example.com web 1.2.0: value file "../outside.yaml": must stay inside the chart`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}

	req.Options = nil
	req.Chart.Version = "9.9.9"
	req.Chart.Source = "https://charts.example.com web 9.9.9"
	_, err = r.RenderChart(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), `chart https://charts.example.com web 9.9.9: https://charts.example.com: chart web version "9.9.9" not found`) {
		t.Errorf("err = %v, want the fetch error naming the chart", err)
	}

	_, err = New(Options{}).RenderChart(t.Context(), req)
	if !errors.Is(err, errNoFetcher) {
		t.Errorf("err = %v, want %v without a ChartFetcher", err, errNoFetcher)
	}
}

func TestRenderChartDependencyErrors(t *testing.T) {
	tests := []struct {
		name string
		deps string
		want string
	}{{
		name: "repository alias",
		deps: "  - name: redis\n    version: 1.0.0\n    repository: \"@bitnami\"\n",
		want: `dependency "redis": repository "@bitnami" names a repository; use its URL`,
	}, {
		name: "alias: repository",
		deps: "  - name: redis\n    version: 1.0.0\n    repository: alias:bitnami\n",
		want: `dependency "redis": repository "alias:bitnami" names a repository`,
	}, {
		name: "not a URL",
		deps: "  - name: redis\n    version: 1.0.0\n    repository: charts/redis\n",
		want: `dependency "redis": repository "charts/redis" is not a URL`,
	}, {
		name: "no repository",
		deps: "  - name: redis\n    version: 1.0.0\n",
		want: `dependency "redis": not in the chart's charts/ directory, and no repository`,
	}, {
		name: "file:// outside the snapshot",
		deps: "  - name: redis\n    repository: file://../../../redis\n",
		want: `dependency "redis": repository "file://../../../redis": must stay inside the repository`,
	}, {
		name: "file:// version mismatch",
		deps: "  - name: shared\n    version: ^1.0.0\n    repository: file://../shared\n",
		want: `dependency "shared": apps/shared has version 0.2.0, which does not satisfy "^1.0.0"`,
	}, {
		name: "file:// cycle",
		deps: "  - name: app\n    repository: file://.\n",
		want: `dependency "app": repository "file://.": dependency cycle through apps/app`,
	}, {
		name: "not fetched",
		deps: "  - name: redis\n    version: 1.0.0\n    repository: https://charts.example.com\n",
		want: `dependency "redis": https://charts.example.com: chart redis version "1.0.0" not found`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := addFiles(fstest.MapFS{}, "apps/app", map[string]string{
				"Chart.yaml":        "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n" + tt.deps,
				"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
			})
			addFiles(fsys, "apps/shared", sharedChart)
			req := render.HelmRequest{
				Chart:       render.HelmChart{FS: fsys, Dir: "apps/app", Source: "apps/app"},
				ReleaseName: "app",
			}
			objs, err := New(Options{Charts: &fakeFetcher{}}).RenderChart(t.Context(), req)
			if err == nil || !strings.HasPrefix(err.Error(), "chart apps/app: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one naming the chart and saying %s", err, tt.want)
			}
			if objs != nil {
				t.Errorf("objects %v returned with the error", kindNames(objs))
			}
		})
	}
}

func TestRenderChartSchema(t *testing.T) {
	chart := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"values.yaml": "replicaCount: 1\nport: 80\n",
		"values.schema.json": `{
  "type": "object",
  "required": ["replicaCount"],
  "properties": {
    "replicaCount": {"type": "integer", "minimum": 1},
    "port": {"$ref": "#/$defs/port"},
    "remote": {"$ref": "https://127.0.0.1:1/schema.json"},
    "local": {"$ref": "file:///etc/hostname"}
  },
  "$defs": {"port": {"type": "integer", "maximum": 65535}}
}`,
		"templates/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  replicas: {{ .Values.replicaCount | quote }}\n",
		"charts/db/Chart.yaml":         "apiVersion: v2\nname: db\nversion: 0.1.0\n",
		"charts/db/values.schema.json": `{"type": "object", "properties": {"size": {"enum": ["small", "large"]}}}`,
	}
	fsys := addFiles(fstest.MapFS{}, "app", chart)
	req := func(opts *navarchv1.ApplicationSourceHelm) render.HelmRequest {
		return render.HelmRequest{Chart: render.HelmChart{FS: fsys, Dir: "app", Source: "app"}, Options: opts, ReleaseName: "app"}
	}
	r := New(Options{})

	// References to other documents are not fetched: the schema's remote and file
	// references accept anything, and the local one holds.
	if _, err := r.RenderChart(t.Context(), req(&navarchv1.ApplicationSourceHelm{Values: "remote: 1\nlocal: x\n"})); err != nil {
		t.Fatalf("valid values: %v", err)
	}

	tests := []struct {
		name   string
		values string
		want   string
	}{
		{"wrong type", "replicaCount: many\n", "app: at '/replicaCount': got string, want integer"},
		{"minimum", "replicaCount: 0\n", "app: at '/replicaCount': minimum: got 0, want 1"},
		{"local reference", "port: 70000\n", "app: at '/port': maximum: got 70,000, want 65,535"},
		{"subchart", "db:\n  size: huge\n", `app/charts/db: at '/size': value must be one of 'small', 'large'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := r.RenderChart(t.Context(), req(&navarchv1.ApplicationSourceHelm{Values: tt.values}))
			if !errors.Is(err, ErrValuesSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %v saying %s", err, ErrValuesSchema, tt.want)
			}
			if objs != nil {
				t.Errorf("objects returned with the error")
			}
			objs, err = r.RenderChart(t.Context(), req(&navarchv1.ApplicationSourceHelm{Values: tt.values, SkipSchemaValidation: true}))
			if err != nil || len(objs) != 1 {
				t.Errorf("with skipSchemaValidation: %v, %v; want the ConfigMap", kindNames(objs), err)
			}
		})
	}
}

func TestRenderChartTemplateErrors(t *testing.T) {
	tests := []struct {
		name     string
		template string
		helpers  string
		want     string
		file     string
		line     int
	}{{
		name:     "nil pointer",
		template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels: {{ .Values.missing.label }}\n",
		want:     `chart apps/app: templates/broken.yaml:5: executing "templates/broken.yaml" at <.Values.missing.label>: nil pointer evaluating interface {}.label`,
		file:     "templates/broken.yaml",
		line:     5,
	}, {
		name:     "in an included template",
		template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"app.name\" . }}\n",
		helpers:  "{{- define \"app.name\" -}}\n{{ .Values.name.first }}\n{{- end -}}\n",
		want:     `chart apps/app: templates/broken.yaml:4: executing "templates/broken.yaml" at <include "app.name" .>: error calling include: templates/_helpers.tpl:2: executing "app.name" at <.Values.name.first>: nil pointer evaluating interface {}.first`,
		file:     "templates/broken.yaml",
		line:     4,
	}, {
		name:     "required",
		template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ required \"name is required\" .Values.name }}\n",
		want:     "chart apps/app: templates/broken.yaml:4: name is required",
		file:     "templates/broken.yaml",
		line:     4,
	}, {
		name:     "fail",
		template: "{{ fail \"unsupported setup\" }}\n",
		want:     "chart apps/app: templates/broken.yaml:1: unsupported setup",
		file:     "templates/broken.yaml",
		line:     1,
	}, {
		name:     "parse error",
		template: "apiVersion: v1\n\nkind: {{ .Values.kind \n",
		want:     "chart apps/app: templates/broken.yaml:4: unclosed action started at templates/broken.yaml:3",
		file:     "templates/broken.yaml",
		line:     4,
	}, {
		name:     "unknown function",
		template: "kind: {{ frobnicate .Values.kind }}\n",
		want:     `chart apps/app: templates/broken.yaml:1: function "frobnicate" not defined`,
		file:     "templates/broken.yaml",
		line:     1,
	}, {
		name:     "not YAML",
		template: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n---\nkind: [\n",
		want:     "chart apps/app: templates/broken.yaml: document 2: yaml: line 2: did not find expected node content",
	}, {
		name:     "missing kind",
		template: "apiVersion: v1\nmetadata:\n  name: app\n",
		want:     "chart apps/app: templates/broken.yaml: document 1: missing kind",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{
				"Chart.yaml":            "apiVersion: v2\nname: app\nversion: 1.0.0\n",
				"templates/ok.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n",
				"templates/broken.yaml": tt.template,
			}
			if tt.helpers != "" {
				files["templates/_helpers.tpl"] = tt.helpers
			}
			fsys := addFiles(fstest.MapFS{}, "apps/app", files)
			req := render.HelmRequest{Chart: render.HelmChart{FS: fsys, Dir: "apps/app", Source: "apps/app"}, ReleaseName: "app"}
			objs, err := New(Options{}).RenderChart(t.Context(), req)
			if err == nil || err.Error() != tt.want {
				t.Errorf("err:\n got %v\nwant %s", err, tt.want)
			}
			if objs != nil {
				t.Errorf("objects %v returned with the error", kindNames(objs))
			}
			if tt.file != "" {
				terr, ok := errors.AsType[*TemplateError](err)
				if !ok || terr.File != tt.file || terr.Line != tt.line {
					t.Errorf("TemplateError = %+v, want file %s line %d", terr, tt.file, tt.line)
				}
			}
		})
	}
}

func TestRenderChartReleaseName(t *testing.T) {
	fsys := addFiles(fstest.MapFS{}, ".", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: app\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n  namespace: {{ .Release.Namespace }}\ndata:\n  install: {{ .Release.IsInstall | quote }}\n  revision: {{ .Release.Revision | quote }}\n",
	})
	r := New(Options{})
	objs, err := r.RenderChart(t.Context(), render.HelmRequest{Chart: render.HelmChart{FS: fsys}, ReleaseName: "my-app", Namespace: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	cm := find(t, objs, "ConfigMap", "my-app")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if cm.GetNamespace() != "team-a" || data["install"] != "true" || data["revision"] != "1" {
		t.Errorf("release seen by the template: namespace %q, %v; want team-a, an install at revision 1", cm.GetNamespace(), data)
	}

	_, err = r.RenderChart(t.Context(), render.HelmRequest{Chart: render.HelmChart{FS: fsys}, ReleaseName: "Not_Valid"})
	if err == nil || !strings.HasPrefix(err.Error(), `chart .: release name "Not_Valid": `) {
		t.Errorf("err = %v, want the invalid release name refused", err)
	}
}

func TestRenderChartCachesRenders(t *testing.T) {
	metric := func(result string) float64 {
		var m dto.Metric
		if err := rendersTotal.WithLabelValues(result).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	cachedBefore, renderedBefore, failedBefore := metric(resultCached), metric(resultRendered), metric(resultFailed)

	r := New(Options{Charts: repositoryCharts(t)})
	req := webRequest(&navarchv1.ApplicationSourceHelm{Values: "replicaCount: 2\n"})
	first, err := r.RenderChart(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.RenderChart(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Stats(); got != (Stats{Rendered: 1, Cached: 1}) {
		t.Errorf("after the same render twice: %+v, want one rendered and one cached", got)
	}
	if len(first) != len(second) || first[0] != second[0] {
		t.Errorf("a cache hit returns the cached objects")
	}

	req.Options = &navarchv1.ApplicationSourceHelm{Values: "replicaCount: 3\n"}
	if _, err := r.RenderChart(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	req.Namespace = "other"
	if _, err := r.RenderChart(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	// A change to a file of the chart is another chart.
	req.Chart.FS.(fstest.MapFS)["apps/web/templates/extra.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n")}
	objs, err := r.RenderChart(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	find(t, objs, "ConfigMap", "extra")
	req.Options = &navarchv1.ApplicationSourceHelm{Values: "replicaCount: 0\n"}
	if _, err := r.RenderChart(t.Context(), req); err == nil {
		t.Fatal("replicaCount 0 passed the schema")
	}
	if got := r.Stats(); got != (Stats{Rendered: 4, Cached: 1, Failed: 1}) {
		t.Errorf("stats %+v, want 4 rendered (other values, namespace, chart), 1 cached, 1 failed", got)
	}
	if c, rd, f := metric(resultCached)-cachedBefore, metric(resultRendered)-renderedBefore, metric(resultFailed)-failedBefore; c != 1 || rd != 4 || f != 1 {
		t.Errorf("navarch_helm_renders_total grew by cached=%v rendered=%v failed=%v, want 1, 4, 1", c, rd, f)
	}

	off := New(Options{Charts: repositoryCharts(t), CachedRenders: -1})
	for range 2 {
		if _, err := off.RenderChart(t.Context(), req); err == nil {
			t.Fatal("replicaCount 0 passed the schema")
		}
	}
	req.Options = nil
	for range 2 {
		if _, err := off.RenderChart(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if got := off.Stats(); got != (Stats{Rendered: 2, Failed: 2}) {
		t.Errorf("without a cache: %+v, want every render rendered", got)
	}
}

func TestRenderChartConcurrently(t *testing.T) {
	r := New(Options{Charts: repositoryCharts(t), CachedRenders: 4})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			req := webRequest(&navarchv1.ApplicationSourceHelm{
				ValuesObject: &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"replicaCount": %d}`, i%5+1)},
			})
			objs, err := r.RenderChart(t.Context(), req)
			if err != nil {
				errs <- err
				return
			}
			for _, o := range objs {
				if o.GetKind() == "Deployment" {
					if n, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); n != int64(i%5+1) {
						errs <- fmt.Errorf("render %d: replicas %d", i, n)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := r.Stats(); s.Rendered+s.Cached != 16 || s.Failed != 0 {
		t.Errorf("stats %+v, want 16 renders", s)
	}
}

func TestRenderChartRefusesChartsHelmDoesNotInstall(t *testing.T) {
	for _, tt := range []struct{ chart, want string }{
		{"apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n", "chart lib: library charts are not installable"},
		{"apiVersion: v3\nname: lib\nversion: 1.0.0\n", `chart lib: chart apiVersion "v3" is not supported (v1 and v2 are)`},
	} {
		fsys := addFiles(fstest.MapFS{}, "lib", map[string]string{"Chart.yaml": tt.chart})
		_, err := New(Options{}).RenderChart(t.Context(), render.HelmRequest{Chart: render.HelmChart{FS: fsys, Dir: "lib"}, ReleaseName: "lib"})
		if err == nil || err.Error() != tt.want {
			t.Errorf("err = %v, want %s", err, tt.want)
		}
	}
}

func TestRenderChartUsesVendoredArchives(t *testing.T) {
	queue := packageChart(t, map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: queue\nversion: 0.3.0\n",
		"values.yaml":            "size: 1\n",
		"templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: queue-{{ .Values.size }}\n",
	})
	fsys := addFiles(fstest.MapFS{}, "app", map[string]string{
		"Chart.yaml":              "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: queue\n    version: 0.3.x\n    repository: https://charts.example.com\n",
		"values.yaml":             "queue:\n  size: 3\n",
		"charts/queue-0.3.0.tgz":  string(queue),
		"templates/configmap.yml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
	})
	// No ChartFetcher: the vendored archive must be used as it is.
	objs, err := New(Options{}).RenderChart(t.Context(), render.HelmRequest{Chart: render.HelmChart{FS: fsys, Dir: "app"}, ReleaseName: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kindNames(objs), []string{"ConfigMap/app", "Service/queue-3"}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
}

func TestRenderChartLoadsFileDependenciesOfFileDependencies(t *testing.T) {
	fsys := addFiles(fstest.MapFS{}, "umbrella", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: umbrella\nversion: 1.0.0\ndependencies:\n  - name: app\n    repository: file://../apps/app\n",
	})
	addFiles(fsys, "apps/app", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: app\nversion: 1.0.0\ndependencies:\n  - name: lib\n    repository: file://../../lib\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"lib.name\" . }}\n",
	})
	addFiles(fsys, "lib", map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
		"templates/_helpers.tpl": `{{- define "lib.name" -}}{{ .Release.Name }}-from-lib{{- end -}}`,
	})
	objs, err := New(Options{}).RenderChart(t.Context(), render.HelmRequest{Chart: render.HelmChart{FS: fsys, Dir: "umbrella"}, ReleaseName: "rel"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kindNames(objs), []string{"ConfigMap/rel-from-lib"}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}
}
