package render

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// recordingHelm renders every chart as a ConfigMap named after the release and the chart,
// holding what the request asked for, and a test hook; it keeps the requests.
type recordingHelm struct {
	mu   sync.Mutex
	reqs []HelmRequest
	err  error
}

func (h *recordingHelm) RenderChart(_ context.Context, req HelmRequest) ([]*unstructured.Unstructured, error) {
	h.mu.Lock()
	h.reqs = append(h.reqs, req)
	h.mu.Unlock()
	if h.err != nil {
		return nil, h.err
	}
	values := "{}"
	if req.Options != nil && req.Options.ValuesObject != nil {
		values = string(req.Options.ValuesObject.Raw)
	}
	chart := req.Chart.Name
	if chart == "" {
		chart = req.Chart.Dir[strings.LastIndex(req.Chart.Dir, "/")+1:]
	}
	name := req.ReleaseName + "-" + chart
	return []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"name": name, "labels": map[string]any{"chart": chart}},
			"data": map[string]any{
				"source":    req.Chart.Source,
				"namespace": req.Namespace,
				"values":    values,
			},
		}},
		{Object: map[string]any{
			"apiVersion": "v1",
			"kind":       "Pod",
			"metadata": map[string]any{
				"name":        name + "-test",
				"annotations": map[string]any{"helm.sh/hook": "test"},
			},
		}},
	}, nil
}

// requests returns the requests, by chart source.
func (h *recordingHelm) requests() map[string]HelmRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]HelmRequest{}
	for _, r := range h.reqs {
		out[r.Chart.Source] = r
	}
	return out
}

func renderHelm(t *testing.T, repo fs.FS, src navarchv1.ApplicationSource, opts Options) (*recordingHelm, []*unstructured.Unstructured) {
	t.Helper()
	t.Setenv("PATH", "") // kustomize could not run helm itself
	h := &recordingHelm{}
	opts.Helm = h
	objs, err := Render(context.Background(), repo, src, opts)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return h, objs
}

// get returns obj's string at the dotted path.
func get(obj *unstructured.Unstructured, dotted string) string {
	s, _, _ := unstructured.NestedString(obj.Object, strings.Split(dotted, ".")...)
	return s
}

func findObject(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func TestRenderHelmChartFromRepository(t *testing.T) {
	repo := fstest.MapFS{
		"apps/web/kustomization.yaml": file(`namespace: prod
labels:
- pairs: {team: blue}
helmCharts:
- name: web
  repo: https://charts.example.com
  version: 1.2.3
  releaseName: front
  namespace: apps
  includeCRDs: true
  skipTests: true
  skipHooks: true
  kubeVersion: v1.30.0
  apiVersions: [monitoring.coreos.com/v1]
  valuesInline:
    replicas: 2
    image: {tag: "1.25"}
patches:
- target: {kind: ConfigMap}
  patch: |
    - op: add
      path: /data/patched
      value: "yes"
`),
	}
	h, objs := renderHelm(t, repo, navarchv1.ApplicationSource{Path: "apps/web"}, Options{
		Namespace:    "dest",
		Capabilities: Capabilities{KubeVersion: "v1.37.2"},
	})

	// The request.
	req, ok := h.requests()["https://charts.example.com web 1.2.3"]
	if !ok || len(h.reqs) != 1 {
		t.Fatalf("requests = %+v", h.reqs)
	}
	if c := req.Chart; c.RepoURL != "https://charts.example.com" || c.Name != "web" || c.Version != "1.2.3" || c.FS != nil {
		t.Errorf("chart = %+v", c)
	}
	if req.ReleaseName != "front" || req.Namespace != "apps" || !req.IncludeCRDs || req.Capabilities.KubeVersion != "v1.37.2" {
		t.Errorf("release %q, namespace %q, includeCRDs %v, capabilities %+v", req.ReleaseName, req.Namespace, req.IncludeCRDs, req.Capabilities)
	}
	o := req.Options
	if o.ReleaseName != "front" || o.Namespace != "apps" || o.SkipCrds || !o.SkipTests || o.KubeVersion != "v1.30.0" ||
		!slices.Equal(o.APIVersions, []string{"monitoring.coreos.com/v1"}) {
		t.Errorf("options = %+v", o)
	}
	if got := string(o.ValuesObject.Raw); got != `{"image":{"tag":"1.25"},"replicas":2}` {
		t.Errorf("values = %s", got)
	}

	// The objects, transformed by the kustomization; the hook is left out (skipHooks).
	if got, want := ids(objs), []string{"ConfigMap/prod/front-web"}; !slices.Equal(got, want) {
		t.Fatalf("objects = %q, want %q", got, want)
	}
	cm := objs[0]
	for field, want := range map[string]string{
		"metadata.labels.team":  "blue",
		"metadata.labels.chart": "web",
		"data.patched":          "yes",
		"data.namespace":        "apps",
	} {
		if got := get(cm, field); got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}
}

func TestRenderHelmChartInRepository(t *testing.T) {
	repo := fstest.MapFS{
		"apps/web/kustomization.yaml": file(`helmCharts:
- name: web
  valuesFile: values-prod.yaml
  additionalValuesFiles: [extra.yaml]
  valuesInline: {replicas: 3}
- name: db
  repo: https://charts.example.com
  version: 2.0.0
`),
		"apps/web/values-prod.yaml":                   file("replicas: 2\nimage: {tag: prod}\n"),
		"apps/web/extra.yaml":                         file("image: {pullPolicy: Always}\n"),
		"apps/web/charts/web/Chart.yaml":              file("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
		"apps/web/charts/web/values.yaml":             file("replicas: 1\nimage: {tag: latest}\n"),
		"apps/web/charts/db-2.0.0/db/Chart.yaml":      file("apiVersion: v2\nname: db\nversion: 2.0.0\n"),
		"apps/web/charts/db-2.0.0/db/templates/x.yml": file(""),
	}
	h, objs := renderHelm(t, repo, navarchv1.ApplicationSource{Path: "apps/web"}, Options{Namespace: "dest"})

	web, ok := h.requests()["apps/web/charts/web"]
	if !ok {
		t.Fatalf("no request for apps/web/charts/web in %v", h.requests())
	}
	if web.Chart.FS == nil || web.Chart.Dir != "apps/web/charts/web" || web.Chart.RepoURL != "" {
		t.Errorf("chart = %+v", web.Chart)
	}
	if _, err := fs.Stat(web.Chart.FS, web.Chart.Dir+"/Chart.yaml"); err != nil {
		t.Errorf("chart directory: %v", err)
	}
	// Without releaseName and namespace: the chart's name, and the destination namespace.
	if web.ReleaseName != "web" || web.Namespace != "dest" || web.IncludeCRDs || !web.Options.SkipCrds {
		t.Errorf("release %q, namespace %q, includeCRDs %v", web.ReleaseName, web.Namespace, web.IncludeCRDs)
	}
	if got := string(web.Options.ValuesObject.Raw); got != `{"image":{"pullPolicy":"Always","tag":"prod"},"replicas":3}` {
		t.Errorf("values = %s", got)
	}

	// A chart kustomize pulled before, kept in chartHome/name-version/name, is used as is.
	db, ok := h.requests()["apps/web/charts/db-2.0.0/db"]
	if !ok || db.Chart.Dir != "apps/web/charts/db-2.0.0/db" || db.Chart.RepoURL != "" {
		t.Errorf("db chart = %+v", db.Chart)
	}

	want := []string{"ConfigMap/db-db", "ConfigMap/web-web", "Pod/db-db-test", "Pod/web-web-test"}
	if got := ids(objs); !slices.Equal(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}
}

func TestRenderHelmChartValues(t *testing.T) {
	tests := []struct {
		name  string
		chart string // the helmCharts entry, after "- name: web\n"
		want  string // the values, as JSON; "" for none
	}{
		{"chart defaults", "", `{"image":{"tag":"latest"},"replicas":1}`},
		{"values file", "  valuesFile: prod.yaml\n", `{"image":{"tag":"prod"},"list":[1,2]}`},
		{
			"inline overrides the chart's values",
			"  valuesInline: {image: {tag: inline}, extra: true}\n",
			`{"extra":true,"image":{"tag":"inline"},"replicas":1}`,
		},
		{
			"inline overrides the values file",
			"  valuesFile: prod.yaml\n  valuesMerge: override\n  valuesInline: {image: {tag: inline}, list: [3]}\n",
			`{"image":{"tag":"inline"},"list":[3]}`,
		},
		{
			"the values file wins with merge",
			"  valuesFile: prod.yaml\n  valuesMerge: merge\n  valuesInline: {image: {tag: inline, pullPolicy: Always}, list: [3]}\n",
			`{"image":{"pullPolicy":"Always","tag":"prod"},"list":[1,2]}`,
		},
		{
			"inline replaces the values file",
			"  valuesFile: prod.yaml\n  valuesMerge: replace\n  valuesInline: {image: {pullPolicy: Always}}\n",
			`{"image":{"pullPolicy":"Always"}}`,
		},
		{
			"additional files, in order",
			"  valuesFile: prod.yaml\n  additionalValuesFiles: [a.yaml, b.yaml]\n",
			`{"image":{"registry":"mirror","tag":"b"},"list":[9]}`,
		},
		{"an empty values file", "  valuesFile: empty.yaml\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := fstest.MapFS{
				"app/kustomization.yaml":       file("helmCharts:\n- name: web\n" + tt.chart),
				"app/prod.yaml":                file("image: {tag: prod}\nlist: [1, 2]\n"),
				"app/a.yaml":                   file("image: {tag: a, registry: mirror}\nlist: [9]\n"),
				"app/b.yaml":                   file("image: {tag: b}\n"),
				"app/empty.yaml":               file("# nothing\n"),
				"app/charts/web/Chart.yaml":    file("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
				"app/charts/web/values.yaml":   file("replicas: 1\nimage: {tag: latest}\n"),
				"app/charts/other/Chart.yaml":  file("apiVersion: v2\nname: other\nversion: 0.1.0\n"),
				"app/charts/other/values.yaml": file("other: true\n"),
			}
			h, _ := renderHelm(t, repo, navarchv1.ApplicationSource{Path: "app"}, Options{})
			if len(h.reqs) != 1 {
				t.Fatalf("requests = %+v", h.reqs)
			}
			var got string
			if v := h.reqs[0].Options.ValuesObject; v != nil {
				got = string(v.Raw)
			}
			if got != tt.want {
				t.Errorf("values:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A Helm chart's release namespace is the chart's namespace, else the kustomization's, else
// the one its overlays pass down (as kustomize does), else the destination namespace.
func TestRenderHelmChartNamespaces(t *testing.T) {
	repo := fstest.MapFS{
		"kustomization.yaml":            file("resources: [envs/a, envs/b, envs/plain, envs/own]\n"),
		"envs/a/kustomization.yaml":     file("namespace: ns-a\nnameSuffix: -a\nresources: [../../middle]\n"),
		"envs/b/kustomization.yaml":     file("namespace: ns-b\nnameSuffix: -b\nresources: [../../middle]\n"),
		"envs/plain/kustomization.yaml": file("nameSuffix: -plain\nresources: [../../base]\n"),
		"envs/own/kustomization.yaml":   file("nameSuffix: -own\nnamespace: ns-own\nresources: [../../fixed]\n"),
		"middle/kustomization.yaml":     file("resources: [../base]\n"),
		"base/kustomization.yaml":       file("helmCharts:\n- name: web\n"),
		"base/charts/web/Chart.yaml":    file("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
		"fixed/kustomization.yaml":      file("helmCharts:\n- name: web\n  namespace: pinned\n"),
		"fixed/charts/web/Chart.yaml":   file("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
	}
	_, objs := renderHelm(t, repo, navarchv1.ApplicationSource{}, Options{Namespace: "dest"})
	for name, want := range map[string]string{
		"web-web-a":     "ns-a",
		"web-web-b":     "ns-b",
		"web-web-plain": "dest",
		"web-web-own":   "pinned",
	} {
		obj := findObject(objs, "ConfigMap", name)
		if obj == nil {
			t.Errorf("no ConfigMap %s in %q", name, ids(objs))
			continue
		}
		if got := get(obj, "data.namespace"); got != want {
			t.Errorf("ConfigMap %s: release namespace %q, want %q", name, got, want)
		}
	}

	// spec.source.kustomize.namespace is passed down as well.
	_, objs = renderHelm(t, repo, navarchv1.ApplicationSource{
		Path:      "base",
		Kustomize: &navarchv1.ApplicationSourceKustomize{Namespace: "from-spec"},
	}, Options{Namespace: "dest"})
	if obj := findObject(objs, "ConfigMap", "web-web"); obj == nil || get(obj, "data.namespace") != "from-spec" || obj.GetNamespace() != "from-spec" {
		t.Errorf("objects %q, want ConfigMap web-web in namespace from-spec for release namespace from-spec", ids(objs))
	}
}

// The same chart with the same request is rendered once per Render.
func TestRenderHelmChartOnce(t *testing.T) {
	repo := fstest.MapFS{
		"kustomization.yaml":      file("resources: [a, b]\n"),
		"a/kustomization.yaml":    file("nameSuffix: -a\nresources: [../base]\n"),
		"b/kustomization.yaml":    file("nameSuffix: -b\nresources: [../base]\n"),
		"base/kustomization.yaml": file("helmCharts:\n- {name: web, repo: 'oci://registry.example.com/charts', version: 1.0.0}\n"),
	}
	h, objs := renderHelm(t, repo, navarchv1.ApplicationSource{}, Options{})
	if len(h.reqs) != 1 || h.reqs[0].Chart.RepoURL != "oci://registry.example.com/charts" {
		t.Errorf("requests = %+v", h.reqs)
	}
	want := []string{"ConfigMap/web-web-a", "ConfigMap/web-web-b", "Pod/web-web-test-a", "Pod/web-web-test-b"}
	if got := ids(objs); !slices.Equal(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}
}

func TestRenderHelmChartInRemoteBase(t *testing.T) {
	const repoURL = "https://git.example.com/org/platform.git"
	remotes := newRemoteRepos(map[gitKey]fs.FS{{repoURL, "v1"}: fstest.MapFS{
		"monitoring/kustomization.yaml":  file("helmGlobals: {chartHome: ../vendor}\nhelmCharts:\n- {name: agent, valuesFile: values.yaml}\n"),
		"monitoring/values.yaml":         file("interval: 30s\n"),
		"vendor/agent/Chart.yaml":        file("apiVersion: v2\nname: agent\nversion: 3.0.0\n"),
		"escape/kustomization.yaml":      file("helmCharts:\n- {name: agent, valuesFile: ../../../repo/secrets/token}\n"),
		"escape-home/kustomization.yaml": file("helmGlobals: {chartHome: ../../../repo}\nhelmCharts:\n- {name: secrets}\n"),
	}})

	h := &recordingHelm{}
	objs, err := Render(context.Background(), overlayRepo(repoURL+"//monitoring?ref=v1"), navarchv1.ApplicationSource{Path: "envs/prod"},
		Options{Remote: remotes.fetch, Helm: h})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	req, ok := h.requests()[repoURL+"//vendor/agent?ref=v1"]
	if !ok {
		t.Fatalf("requests = %v", h.requests())
	}
	if _, err := fs.Stat(req.Chart.FS, req.Chart.Dir+"/Chart.yaml"); err != nil || req.Chart.Dir != "vendor/agent" {
		t.Errorf("chart %+v: %v", req.Chart, err)
	}
	if req.Namespace != "prod" || string(req.Options.ValuesObject.Raw) != `{"interval":"30s"}` {
		t.Errorf("namespace %q, values %s", req.Namespace, req.Options.ValuesObject.Raw)
	}
	if got, want := ids(objs), []string{"ConfigMap/prod/agent-agent", "Pod/prod/agent-agent-test"}; !slices.Equal(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}

	for dir, want := range map[string]string{
		"escape":      repoURL + `//escape/kustomization.yaml?ref=v1: helmCharts[0].valuesFile "../../../repo/secrets/token": paths of a remote base must stay inside its repository`,
		"escape-home": repoURL + `//escape-home/kustomization.yaml?ref=v1: helmGlobals.chartHome "../../../repo": paths of a remote base must stay inside its repository`,
	} {
		_, err := Render(context.Background(), overlayRepo(repoURL+"//"+dir+"?ref=v1"), navarchv1.ApplicationSource{Path: "envs/prod"},
			Options{Remote: remotes.fetch, Helm: h})
		if err == nil || err.Error() != want || !errors.Is(err, errEscapes) {
			t.Errorf("%s: error\n got %v\nwant %s", dir, err, want)
		}
	}
}

func TestRenderHelmChartErrors(t *testing.T) {
	kustomization := func(s string) fstest.MapFS {
		return fstest.MapFS{
			"apps/web/kustomization.yaml":    file(s),
			"apps/web/charts/web/Chart.yaml": file("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
			"apps/web/generator.yaml":        file("apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata: {name: x}\nchartName: web\n"),
		}
	}
	tests := []struct {
		name   string
		repo   fstest.MapFS
		failed error // what the renderer returns
		want   string
		is     error
	}{
		{
			name:   "the renderer fails",
			repo:   kustomization("helmCharts:\n- {name: web, repo: 'https://charts.example.com', version: 9.9.9}\n"),
			failed: errors.New("chart web 9.9.9 not found in https://charts.example.com"),
			want:   `apps/web/kustomization.yaml: helmCharts[0] "web": chart web 9.9.9 not found in https://charts.example.com`,
		},
		{
			name: "no chart and no repo",
			repo: kustomization("helmCharts:\n- {name: db}\n"),
			want: `apps/web/kustomization.yaml: helmCharts[0] "db": no chart at apps/web/charts/db, and no repo to pull it from`,
		},
		{
			name: "missing values file",
			repo: kustomization("helmCharts:\n- {name: web, valuesFile: nothere.yaml}\n"),
			want: `apps/web/kustomization.yaml: helmCharts[0] "web": valuesFile "nothere.yaml": file does not exist`,
			is:   fs.ErrNotExist,
		},
		{
			name: "values that are not an object",
			repo: func() fstest.MapFS {
				repo := kustomization("helmCharts:\n- {name: web, additionalValuesFiles: [list.yaml]}\n")
				repo["apps/web/list.yaml"] = file("- a\n")
				return repo
			}(),
			want: `apps/web/kustomization.yaml: helmCharts[0] "web": additionalValuesFiles[0] "list.yaml": values are an array, not an object`,
		},
		{
			name: "bad valuesMerge",
			repo: kustomization("helmCharts:\n- {name: web, valuesMerge: deep, valuesInline: {a: 1}}\n"),
			want: `apps/web/kustomization.yaml: helmCharts[0] "web": valuesMerge "deep": must be override, merge or replace`,
		},
		{
			name: "no name",
			repo: kustomization("helmCharts:\n- {repo: 'https://charts.example.com'}\n"),
			want: `apps/web/kustomization.yaml: helmCharts[0] "": name: must not be empty`,
		},
		{
			name: "values file to download",
			repo: kustomization("helmCharts:\n- {name: web, valuesFile: 'https://example.com/values.yaml'}\n"),
			want: `apps/web/kustomization.yaml: helmCharts[0].valuesFile "https://example.com/values.yaml": remote kustomize references are not supported; use a path inside the repository`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "HelmChartInflationGenerator configuration",
			repo: kustomization("generators: [generator.yaml]\n"),
			want: `apps/web/generator.yaml: document 1: HelmChartInflationGenerator: HelmChartInflationGenerator configurations are not supported; use helmCharts in the kustomization`,
			is:   ErrHelmChartsNotSupported,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PATH", "")
			objs, err := Render(context.Background(), tt.repo, navarchv1.ApplicationSource{Path: "apps/web"}, Options{Helm: &recordingHelm{err: tt.failed}})
			if err == nil {
				t.Fatalf("Render returned %q, want error %q", ids(objs), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %q\nwant %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			var rerr *Error
			if !errors.As(err, &rerr) {
				t.Errorf("error %#v is not an *Error", err)
			}
		})
	}
}

// The deprecated helmChartInflationGenerator field is read as kustomize reads it: as
// helmCharts.
func TestRenderHelmChartInflationGeneratorField(t *testing.T) {
	repo := fstest.MapFS{
		"app/kustomization.yaml": file(`helmChartInflationGenerator:
- chartName: web
  chartRepoUrl: https://charts.example.com
  chartVersion: 1.0.0
  releaseName: legacy
  valuesLocal: {a: 1}
`),
	}
	h, objs := renderHelm(t, repo, navarchv1.ApplicationSource{Path: "app"}, Options{})
	req := h.requests()["https://charts.example.com web 1.0.0"]
	if req.ReleaseName != "legacy" || req.Options.ValuesObject == nil || string(req.Options.ValuesObject.Raw) != `{"a":1}` {
		t.Errorf("requests = %+v", h.reqs)
	}
	if got, want := ids(objs), []string{"ConfigMap/legacy-web", "Pod/legacy-web-test"}; !slices.Equal(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}
}

// Without Options.Helm, helmCharts are refused as before.
func TestRenderHelmChartsWithoutRenderer(t *testing.T) {
	repo := fstest.MapFS{"app/kustomization.yaml": file("helmCharts:\n- {name: web, repo: 'https://charts.example.com'}\n")}
	_, err := Render(context.Background(), repo, navarchv1.ApplicationSource{Path: "app"}, Options{})
	want := "app/kustomization.yaml: helmCharts: helm chart inflation in kustomizations is not supported"
	if err == nil || err.Error() != want || !errors.Is(err, ErrHelmChartsNotSupported) {
		t.Errorf("error = %v, want %s", err, want)
	}
}

// chartStream leaves hooks out only with skipHooks.
func TestChartStream(t *testing.T) {
	objs, _ := (&recordingHelm{}).RenderChart(context.Background(), HelmRequest{ReleaseName: "r", Chart: HelmChart{Name: "c"}})
	for _, skip := range []bool{false, true} {
		data, err := chartStream(objs, skip)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseYAML("stream", data)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"ConfigMap/r-c", "Pod/r-c-test"}
		if skip {
			want = want[:1]
		}
		if !slices.Equal(ids(got), want) {
			t.Errorf("skipHooks %v: %q, want %q", skip, ids(got), want)
		}
	}
	if data, err := chartStream(nil, false); data != nil || err != nil {
		t.Errorf("chartStream(nil) = %q, %v", data, err)
	}
}
