package render

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.0
        envFrom:
        - configMapRef: {name: web-config}
`

const service = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
`

// kustomizeRepo is a repository of kustomizations shared by the tests.
func kustomizeRepo() fstest.MapFS {
	return fstest.MapFS{
		"base/kustomization.yaml": file(`resources:
- deploy.yaml
- svc.yaml
configMapGenerator:
- name: web-config
  literals: [mode=base]
`),
		"base/deploy.yaml": file(deployment),
		"base/svc.yaml":    file(service),

		"overlays/prod/kustomization.yaml": file(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../base
- namespace.yaml
namespace: prod
images:
- name: nginx
  newName: registry.example.com/nginx
  newTag: "1.25"
replicas:
- name: web
  count: 3
patches:
- path: resources.yaml
`),
		"overlays/prod/namespace.yaml": file("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n"),
		"overlays/prod/resources.yaml": file(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        resources:
          limits: {memory: 128Mi}
`),

		"overlays/legacy/Kustomization": file(`bases: [../../base]
patchesStrategicMerge:
- patch.yaml
`),
		"overlays/legacy/patch.yaml": file("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: NodePort\n"),

		"overlays/yml/kustomization.yml": file("resources: [../../base]\nnameSuffix: -yml\n"),

		"overlays/openapi/kustomization.yaml": file("openapi:\n  version: v1.21.2\nresources: [../../base]\n"),

		"generator/kustomization.yaml": file(`configMapGenerator:
- name: settings
  files: [app.properties, renamed.conf=other.txt]
  envs: [vars.env]
secretGenerator:
- name: creds
  literals: [password=secret]
generatorOptions:
  labels: {generated: "true"}
`),
		"generator/app.properties": file("color=blue\n"),
		"generator/other.txt":      file("hello\n"),
		"generator/vars.env":       file("A=1\nB=2\n"),

		"broken/kustomization.yaml":    file("resources:\n- ../missing\n"),
		"invalid/kustomization.yaml":   file("resources: [a.yaml]\nunknownField: 1\n"),
		"badyaml/kustomization.yaml":   file("resources: [a.yaml]\n"),
		"badyaml/a.yaml":               file("a: [\n"),
		"conflict/kustomization.yaml":  file("resources: [a.yaml, b.yaml]\n"),
		"conflict/a.yaml":              file(cm("same")),
		"conflict/b.yaml":              file(cm("same")),
		"ambiguous/kustomization.yaml": file("resources: []\n"),
		"ambiguous/kustomization.yml":  file("resources: []\n"),
		"withdir/kustomization.yaml":   file("resources: [deploy.yaml]\n"),
		"withdir/deploy.yaml":          file(deployment),
		"withdir/other.yaml":           file(cm("ignored")),

		// URLs in ordinary values are fine.
		"transformed/kustomization.yaml": file(`resources: [cm.yaml]
transformers:
- labels.yaml
- |
  apiVersion: builtin
  kind: PatchTransformer
  metadata: {name: link}
  patch: |
    - op: add
      path: /metadata/annotations/source
      value: https://git.example.com/apps.git
  target: {kind: ConfigMap}
`),
		"transformed/cm.yaml": file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: docs\n  annotations: {docs: 'https://docs.example.com'}\n"),
		"transformed/labels.yaml": file(`apiVersion: builtin
kind: LabelTransformer
metadata: {name: labels}
labels: {homepage: example.com}
fieldSpecs:
- {path: metadata/labels, create: true}
`),

		"kustomization.yaml": file("resources: [root.yaml]\n"),
		"root.yaml":          file(cm("root")),
	}
}

// field returns the value at the dotted path of obj, with [i] for list items, as a string.
func field(t *testing.T, obj *unstructured.Unstructured, fields ...string) any {
	t.Helper()
	var v any = obj.Object
	for _, f := range fields {
		switch cur := v.(type) {
		case map[string]any:
			v = cur[f]
		case []any:
			i := int(f[0] - '0')
			if i >= len(cur) {
				return nil
			}
			v = cur[i]
		default:
			return nil
		}
	}
	return v
}

func find(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func TestRenderKustomize(t *testing.T) {
	type check struct {
		kind   string
		fields []string
		want   any
	}
	tests := []struct {
		name   string
		src    navarchv1.ApplicationSource
		want   []string
		checks []check
	}{
		{
			name: "base",
			src:  navarchv1.ApplicationSource{Path: "base"},
			// kustomize build order: ConfigMaps and Services before Deployments.
			want: []string{"ConfigMap/web-config-95b7hhtd74", "Service/web", "Deployment/web"},
			checks: []check{
				{"Deployment", []string{"spec", "template", "spec", "containers", "0", "envFrom", "0", "configMapRef", "name"}, "web-config-95b7hhtd74"},
				{"ConfigMap", []string{"data", "mode"}, "base"},
			},
		},
		{
			name: "overlay in a sibling directory with images, replicas, namespace and a patch",
			src:  navarchv1.ApplicationSource{Path: "overlays/prod"},
			want: []string{"Namespace/prod", "ConfigMap/prod/web-config-95b7hhtd74", "Service/prod/web", "Deployment/prod/web"},
			checks: []check{
				{"Deployment", []string{"spec", "replicas"}, int64(3)},
				{"Deployment", []string{"spec", "template", "spec", "containers", "0", "image"}, "registry.example.com/nginx:1.25"},
				{"Deployment", []string{"spec", "template", "spec", "containers", "0", "resources", "limits", "memory"}, "128Mi"},
			},
		},
		{
			name:   "Kustomization file name, bases and patchesStrategicMerge",
			src:    navarchv1.ApplicationSource{Path: "overlays/legacy"},
			want:   []string{"ConfigMap/web-config-95b7hhtd74", "Service/web", "Deployment/web"},
			checks: []check{{"Service", []string{"spec", "type"}, "NodePort"}},
		},
		{
			name: "kustomization.yml",
			src:  navarchv1.ApplicationSource{Path: "overlays/yml"},
			want: []string{"ConfigMap/web-config-yml-95b7hhtd74", "Service/web-yml", "Deployment/web-yml"},
		},
		{
			name: "openapi renders alone",
			src:  navarchv1.ApplicationSource{Path: "overlays/openapi"},
			want: []string{"ConfigMap/web-config-95b7hhtd74", "Service/web", "Deployment/web"},
		},
		{
			name: "generators with hash suffixes",
			src:  navarchv1.ApplicationSource{Path: "generator"},
			want: []string{"ConfigMap/settings-hc695t8h42", "Secret/creds-m4d885dchh"},
			checks: []check{
				{"ConfigMap", []string{"data", "app.properties"}, "color=blue\n"},
				{"ConfigMap", []string{"data", "renamed.conf"}, "hello\n"},
				{"ConfigMap", []string{"data", "B"}, "2"},
				{"ConfigMap", []string{"metadata", "labels", "generated"}, "true"},
				{"Secret", []string{"data", "password"}, "c2VjcmV0"},
			},
		},
		{
			name: "only the kustomization's resources",
			src:  navarchv1.ApplicationSource{Path: "withdir", Directory: &navarchv1.ApplicationSourceDirectory{Recurse: true}},
			want: []string{"Deployment/web"},
		},
		{
			name: "transformers",
			src:  navarchv1.ApplicationSource{Path: "transformed"},
			want: []string{"ConfigMap/docs"},
			checks: []check{
				{"ConfigMap", []string{"metadata", "labels", "homepage"}, "example.com"},
				{"ConfigMap", []string{"metadata", "annotations", "docs"}, "https://docs.example.com"},
				{"ConfigMap", []string{"metadata", "annotations", "source"}, "https://git.example.com/apps.git"},
			},
		},
		{
			name: "kustomization at the root",
			src:  navarchv1.ApplicationSource{},
			want: []string{"ConfigMap/root"},
		},
		{
			name: "options",
			src: navarchv1.ApplicationSource{Path: "base", Kustomize: &navarchv1.ApplicationSourceKustomize{
				NamePrefix:        "team-",
				NameSuffix:        "-v2",
				Namespace:         "staging",
				Images:            []string{"nginx=nginx:1.25"},
				CommonLabels:      map[string]string{"team": "blue"},
				CommonAnnotations: map[string]string{"owner": "blue@example.com"},
				Replicas:          []navarchv1.KustomizeReplica{{Name: "web", Count: 2}},
			}},
			want: []string{
				"ConfigMap/staging/team-web-config-v2-95b7hhtd74",
				"Service/staging/team-web-v2",
				"Deployment/staging/team-web-v2",
			},
			checks: []check{
				{"Deployment", []string{"spec", "template", "spec", "containers", "0", "image"}, "nginx:1.25"},
				{"Deployment", []string{"spec", "replicas"}, int64(2)},
				{"Deployment", []string{"metadata", "labels", "team"}, "blue"},
				{"Deployment", []string{"spec", "selector", "matchLabels", "team"}, "blue"},
				{"Deployment", []string{"spec", "template", "metadata", "labels", "team"}, "blue"},
				{"Deployment", []string{"metadata", "annotations", "owner"}, "blue@example.com"},
				{"Deployment", []string{"spec", "template", "spec", "containers", "0", "envFrom", "0", "configMapRef", "name"}, "team-web-config-v2-95b7hhtd74"},
				{"Service", []string{"spec", "selector", "team"}, "blue"},
			},
		},
		{
			name: "options on an overlay",
			src: navarchv1.ApplicationSource{Path: "overlays/prod", Kustomize: &navarchv1.ApplicationSourceKustomize{
				Images:   []string{"registry.example.com/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
				Replicas: []navarchv1.KustomizeReplica{{Name: "web", Count: 5}},
			}},
			want: []string{"Namespace/prod", "ConfigMap/prod/web-config-95b7hhtd74", "Service/prod/web", "Deployment/prod/web"},
			checks: []check{
				{"Deployment", []string{"spec", "replicas"}, int64(5)},
				{"Deployment", []string{"spec", "template", "spec", "containers", "0", "image"},
					"registry.example.com/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
			},
		},
		{
			name: "options on the root",
			src:  navarchv1.ApplicationSource{Path: ".", Kustomize: &navarchv1.ApplicationSourceKustomize{NamePrefix: "x-"}},
			want: []string{"ConfigMap/x-root"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := kustomizeRepo()
			before := maps.Clone(repo)
			objs, err := renderPlain(repo, tt.src)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got := ids(objs); !slices.Equal(got, tt.want) {
				t.Errorf("objects:\n got %q\nwant %q", got, tt.want)
			}
			for _, c := range tt.checks {
				obj := find(objs, c.kind)
				if obj == nil {
					t.Errorf("no %s", c.kind)
					continue
				}
				if got := field(t, obj, c.fields...); got != c.want {
					t.Errorf("%s %s = %#v, want %#v", c.kind, strings.Join(c.fields, "."), got, c.want)
				}
			}
			if !maps.Equal(repo, before) {
				t.Errorf("the repository changed")
			}
		})
	}
}

func TestRenderKustomizeErrors(t *testing.T) {
	kustomization := func(s string) fstest.MapFS {
		repo := kustomizeRepo()
		repo["apps/web/kustomization.yaml"] = file(s)
		return repo
	}
	tests := []struct {
		name string
		repo fstest.MapFS
		path string
		opts *navarchv1.ApplicationSourceKustomize
		want string // the whole message, or a prefix ending in "…"
		is   error
		file string // the *Error's File
	}{
		{
			name: "remote base",
			repo: kustomization("resources:\n- ../../base\n- https://github.com/org/repo//deploy?ref=v1.0.0\n"),
			want: `apps/web/kustomization.yaml: resources[1] "https://github.com/org/repo//deploy?ref=v1.0.0": ` +
				`remote kustomize references are not supported; use a path inside the repository`,
			is:   ErrRemoteNotSupported,
			file: "apps/web/kustomization.yaml",
		},
		{
			name: "remote base without scheme",
			repo: kustomization("bases:\n- github.com/org/repo//base?ref=main\n"),
			want: `apps/web/kustomization.yaml: bases[0] "github.com/org/repo//base?ref=main": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "remote base in a base",
			repo: func() fstest.MapFS {
				repo := kustomization("resources: [../../base]\n")
				repo["base/kustomization.yaml"] = file("resources:\n- git@github.com:org/repo.git/base\n")
				return repo
			}(),
			want: `base/kustomization.yaml: resources[0] "git@github.com:org/repo.git/base": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
			file: "base/kustomization.yaml",
		},
		{
			name: "remote component",
			repo: kustomization("components:\n- ssh://git@example.com/org/repo.git//comp\n"),
			want: `apps/web/kustomization.yaml: components[0] "ssh://git@example.com/org/repo.git//comp": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "remote base that is also YAML",
			repo: kustomization("resources:\n- 'github.com/org/repo//x: y'\n"),
			want: `apps/web/kustomization.yaml: resources[0] "github.com/org/repo//x: y": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "remote transformer",
			repo: kustomization("resources: [../../base]\ntransformers:\n- https://example.com/transformer.yaml\n"),
			want: `apps/web/kustomization.yaml: transformers[0] "https://example.com/transformer.yaml": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "remote patch file",
			repo: kustomization("resources: [../../base]\npatches:\n- path: https://example.com/patch.yaml\n"),
			want: `apps/web/kustomization.yaml: patches[0].path "https://example.com/patch.yaml": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "remote generator file",
			repo: kustomization("configMapGenerator:\n- name: x\n  files: [key=http://example.com/x]\n"),
			want: `apps/web/kustomization.yaml: configMapGenerator[0].files "http://example.com/x": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "remote file in a transformer configuration",
			repo: func() fstest.MapFS {
				repo := kustomization("resources: [../../base]\ntransformers: [patcher.yaml]\n")
				repo["apps/web/patcher.yaml"] = file(cm("x") + "---\napiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npath: https://example.com/patch.yaml\n")
				return repo
			}(),
			want: `apps/web/patcher.yaml: document 2: PatchTransformer "https://example.com/patch.yaml": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
			file: "apps/web/patcher.yaml",
		},
		{
			name: "remote file in an inline transformer",
			repo: kustomization("resources: [../../base]\ntransformers:\n- |\n  apiVersion: builtin\n  kind: PatchStrategicMergeTransformer\n  metadata: {name: p}\n  paths: [https://example.com/p.yaml]\n"),
			want: `apps/web/kustomization.yaml: transformers[0]: PatchStrategicMergeTransformer "https://example.com/p.yaml": remote kustomize references …`,
			is:   ErrRemoteNotSupported,
		},
		{
			name: "helm charts",
			repo: kustomization("helmCharts:\n- name: minecraft\n  repo: https://itzg.github.io/minecraft-server-charts\n  version: 3.1.3\n"),
			want: "apps/web/kustomization.yaml: helmCharts: helm chart inflation in kustomizations is not supported",
			is:   ErrHelmChartsNotSupported,
			file: "apps/web/kustomization.yaml",
		},
		{
			name: "helm chart generator",
			repo: kustomization("generators:\n- |\n  apiVersion: builtin\n  kind: HelmChartInflationGenerator\n  metadata: {name: x}\n  chartName: x\n"),
			want: "apps/web/kustomization.yaml: generators[0]: HelmChartInflationGenerator: helm chart inflation in kustomizations is not supported",
			is:   ErrHelmChartsNotSupported,
		},
		{
			name: "missing base names the kustomization directory",
			repo: kustomizeRepo(),
			path: "broken",
			want: "broken: kustomize: accumulating resources: …",
			file: "broken",
		},
		{
			name: "unknown field",
			repo: kustomizeRepo(),
			path: "invalid",
			want: `invalid: kustomize: invalid Kustomization: json: unknown field "unknownField"`,
		},
		{
			name: "malformed resource",
			repo: kustomizeRepo(),
			path: "badyaml",
			want: "badyaml: kustomize: accumulating resources: accumulating resources from 'a.yaml': MalformedYAMLError: yaml: line 1: did not find expected node content in File: a.yaml",
		},
		{
			name: "duplicate objects",
			repo: kustomizeRepo(),
			path: "conflict",
			want: "conflict: kustomize: accumulating resources: …",
		},
		{
			name: "two kustomization files",
			repo: kustomizeRepo(),
			path: "ambiguous",
			want: "ambiguous: kustomize: Found multiple kustomization files under: ambiguous\n",
		},
		{
			name: "invalid image option",
			repo: kustomizeRepo(),
			path: "base",
			opts: &navarchv1.ApplicationSourceKustomize{Images: []string{"nginx"}},
			want: `spec.source.kustomize.images[0]: image "nginx": sets no new name, tag or digest`,
		},
		{
			name: "negative replicas option",
			repo: kustomizeRepo(),
			path: "base",
			opts: &navarchv1.ApplicationSourceKustomize{Replicas: []navarchv1.KustomizeReplica{{Name: "web", Count: -1}}},
			want: "spec.source.kustomize.replicas[0].count: must not be negative",
		},
		{
			name: "options on a broken kustomization",
			repo: kustomizeRepo(),
			path: "broken",
			opts: &navarchv1.ApplicationSourceKustomize{NamePrefix: "x-"},
			want: "broken: kustomize: accumulating resources: …",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Without git on the PATH, a clone would fail with a different message.
			t.Setenv("PATH", "")
			p := tt.path
			if p == "" {
				p = "apps/web"
			}
			objs, err := renderPlain(tt.repo, navarchv1.ApplicationSource{Path: p, Kustomize: tt.opts})
			if err == nil {
				t.Fatalf("Render returned %q, want error %q", ids(objs), tt.want)
			}
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("error:\n got %q\nwant %q", err, tt.want)
				}
			} else if err.Error() != tt.want {
				t.Errorf("error:\n got %q\nwant %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			if tt.file != "" {
				var rerr *Error
				if !errors.As(err, &rerr) || rerr.File != tt.file {
					t.Errorf("error %#v is not an *Error for %s", err, tt.file)
				}
			}
		})
	}
}

func TestParseImage(t *testing.T) {
	tests := []struct {
		in   string
		want types.Image
		err  string
	}{
		{in: "nginx=nginx:1.25", want: types.Image{Name: "nginx", NewName: "nginx", NewTag: "1.25"}},
		{in: "nginx:1.25", want: types.Image{Name: "nginx", NewTag: "1.25"}},
		{in: "nginx=registry.example.com/web", want: types.Image{Name: "nginx", NewName: "registry.example.com/web"}},
		{in: "nginx@sha256:abc", want: types.Image{Name: "nginx", Digest: "sha256:abc"}},
		{in: "nginx=mirror/nginx@sha256:abc", want: types.Image{Name: "nginx", NewName: "mirror/nginx", Digest: "sha256:abc"}},
		{in: "localhost:5000/app:v1", want: types.Image{Name: "localhost:5000/app", NewTag: "v1"}},
		{in: "app=localhost:5000/app", want: types.Image{Name: "app", NewName: "localhost:5000/app"}},
		{in: "app=localhost:5000/app:v2", want: types.Image{Name: "app", NewName: "localhost:5000/app", NewTag: "v2"}},
		{in: "nginx", err: `image "nginx": sets no new name, tag or digest`},
		{in: "nginx:", err: `image "nginx:": sets no new name, tag or digest`},
		{in: "=nginx:1", err: `image "=nginx:1": missing image name`},
		{in: ":1", err: `image ":1": missing image name`},
		{in: "nginx@", err: `image "nginx@": empty digest`},
		{in: "", err: `image "": missing image name`},
	}
	for _, tt := range tests {
		got, err := parseImage(tt.in)
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err {
				t.Errorf("parseImage(%q) error = %v, want %q", tt.in, err, tt.err)
			}
		case err != nil:
			t.Errorf("parseImage(%q): %v", tt.in, err)
		case got != tt.want:
			t.Errorf("parseImage(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestIsRemote(t *testing.T) {
	tests := []struct {
		ref        string
		remote     bool
		downloaded bool
	}{
		{"https://github.com/org/repo//base?ref=v1", true, true},
		{"HTTP://example.com/x.yaml", true, true},
		{"github.com/org/repo//base", true, false},
		{"GitHub.com:org/repo", true, false},
		{"git@github.com:org/repo.git", true, false},
		{"git::https://example.com/org/repo", true, false},
		{"ssh://git@example.com/repo", true, false},
		{"file:///etc/repo", true, false},
		{"../../base", false, false},
		{"deploy.yaml", false, false},
		{"github.com-mirror/base", false, false},
		{"sub/dir", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := isRemote(tt.ref); got != tt.remote {
			t.Errorf("isRemote(%q) = %v, want %v", tt.ref, got, tt.remote)
		}
		if got := isHTTPURL(tt.ref); got != tt.downloaded {
			t.Errorf("isHTTPURL(%q) = %v, want %v", tt.ref, got, tt.downloaded)
		}
	}
}

// Render may be called concurrently, also for kustomizations that set openapi.
func TestRenderConcurrently(t *testing.T) {
	repo := kustomizeRepo()
	paths := []string{"base", "overlays/openapi", "overlays/prod", "generator", "overlays/openapi", "base"}
	want := make(map[string][]string)
	for _, p := range paths {
		objs, err := renderPlain(repo, navarchv1.ApplicationSource{Path: p})
		if err != nil {
			t.Fatal(err)
		}
		want[p] = ids(objs)
	}
	errs := make(chan error, len(paths)*4)
	for range 4 {
		for _, p := range paths {
			go func() {
				objs, err := renderPlain(repo, navarchv1.ApplicationSource{Path: p})
				if err == nil && !slices.Equal(ids(objs), want[p]) {
					err = errors.New(p + ": got " + strings.Join(ids(objs), ","))
				}
				errs <- err
			}()
		}
	}
	for range len(paths) * 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
