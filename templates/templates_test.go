package templates

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

// render compiles tmpl and renders params, failing the test on a compile error.
func render(t *testing.T, tmpl navarchv1.ApplicationSetTemplate, opts Options, params map[string]any) (*navarchv1.Application, error) {
	t.Helper()
	c, err := Compile(tmpl, nil, opts)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return c.Render(params)
}

func TestRenderFastTemplate(t *testing.T) {
	params := map[string]any{
		"name":                "in-cluster",
		"path":                "apps/guestbook",
		"path.basename":       "guestbook",
		"path[0]":             "apps",
		"metadata.labels.env": "prod",
		"values.replicas":     "3",
		"number":              42,
		"nothing":             nil,
		"quote":               `say "hi"` + "\n",
	}
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"dotted keys", "{{path.basename}}-{{name}}", "guestbook-in-cluster"},
		{"spaces inside braces", "{{ path.basename }}/{{  name\t}}", "guestbook/in-cluster"},
		{"brackets", "{{path[0]}}", "apps"},
		{"nested-looking key", "{{metadata.labels.env}}", "prod"},
		{"unknown key left as written", "{{ unknown }}-{{name}}", "{{ unknown }}-in-cluster"},
		{"empty tag left", "a{{}}b{{ }}c", "a{{}}b{{ }}c"},
		{"nil value left", "{{nothing}}", "{{nothing}}"},
		{"non-string formatted", "pr-{{number}}", "pr-42"},
		{"no tag", "plain text", "plain text"},
		{"single braces", "{name}", "{name}"},
		{"go syntax is just an unknown key", "{{ .name }}", "{{ .name }}"},
		{"tag spanning lines is not processed", "{{ name\n}}", "{{ name\n}}"},
		{"templated line processes every tag", "{{name}}\n{{ path\n}}", "in-cluster\napps/guestbook"},
		{"special characters pass through", "{{quote}}", "say \"hi\"\n"},
		{"triple braces", "{{{name}}}", "{{{name}}}"},
		{"value is not re-substituted", "{{values.replicas}}{{", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RenderString(tt.in, params, Options{})
			if tt.name == "value is not re-substituted" {
				// "{{" without a closing "}}" on a templated line is an error, as in Argo CD.
				if err == nil || !strings.Contains(err.Error(), `closing "}}"`) {
					t.Fatalf("RenderString(%q) = %q, %v; want an unclosed-tag error", tt.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("RenderString(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("RenderString(%q) = %q, want %q", tt.in, got, tt.want)
			}
			// The compiled form renders the same.
			if isFastTemplated(tt.in) {
				f, err := compileFast(tt.in)
				if err != nil {
					t.Fatal(err)
				}
				if got, ok := f.render(params, MaxFieldSize); !ok || got != tt.want {
					t.Errorf("compiled render of %q = %q, %v; want %q", tt.in, got, ok, tt.want)
				}
			}
		})
	}
}

func TestRenderApplicationFastTemplate(t *testing.T) {
	tmpl := navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{
			Name:        "{{path.basename}}-{{name}}",
			Namespace:   "ignored-{{name}}",
			Labels:      map[string]string{"env": "{{metadata.labels.env}}", "{{ labelKey }}": "{{path.basename}}", "static": "yes"},
			Annotations: map[string]string{"navarch.io/source": "{{path}}", "keep": "{{ unknown }}"},
			Finalizers:  []string{"navarch.io/{{name}}"},
		},
		Spec: navarchv1.ApplicationSpec{
			Source: navarchv1.ApplicationSource{
				RepoURL:        "https://git.example.com/apps.git",
				Path:           "{{path}}",
				TargetRevision: "{{values.revision}}",
				Kustomize: &navarchv1.ApplicationSourceKustomize{
					NamePrefix:   "{{name}}-",
					Images:       []string{"app={{values.image}}", "static:1"},
					CommonLabels: map[string]string{"{{ labelKey }}": "{{name}}", "fixed": "v"},
					Replicas:     []navarchv1.KustomizeReplica{{Name: "{{path.basename}}", Count: 2}},
				},
			},
			Destination: navarchv1.ApplicationDestination{Name: "{{name}}", Namespace: "{{path.basename}}"},
			SyncPolicy: &navarchv1.SyncPolicy{
				Automated:   &navarchv1.SyncPolicyAutomated{Prune: true},
				SyncOptions: []navarchv1.SyncOption{"CreateNamespace=true"},
				Retry:       &navarchv1.RetryStrategy{Limit: 3, Backoff: &navarchv1.Backoff{Duration: "{{values.backoff}}", Factor: ptr(int64(2))}},
			},
			RevisionHistoryLimit: ptr(int64(5)),
		},
	}
	params := map[string]any{
		"name": "eu-1", "path": "apps/web", "path.basename": "web", "metadata.labels.env": "prod",
		"labelKey": "team", "values.revision": "v1.2.3", "values.image": "web:2", "values.backoff": "10s",
	}
	app, err := render(t, tmpl, Options{}, params)
	if err != nil {
		t.Fatal(err)
	}
	want := &navarchv1.Application{}
	want.APIVersion, want.Kind = "navarch.io/v1alpha1", "Application"
	want.Name, want.Namespace = "web-eu-1", "ignored-eu-1"
	want.Labels = map[string]string{"env": "prod", "team": "web", "static": "yes"}
	want.Annotations = map[string]string{"navarch.io/source": "apps/web", "keep": "{{ unknown }}"}
	want.Finalizers = []string{"navarch.io/eu-1"}
	want.Spec = *tmpl.Spec.DeepCopy()
	want.Spec.Source.Path, want.Spec.Source.TargetRevision = "apps/web", "v1.2.3"
	want.Spec.Source.Kustomize.NamePrefix = "eu-1-"
	want.Spec.Source.Kustomize.Images = []string{"app=web:2", "static:1"}
	want.Spec.Source.Kustomize.CommonLabels = map[string]string{"team": "eu-1", "fixed": "v"}
	want.Spec.Source.Kustomize.Replicas[0].Name = "web"
	want.Spec.Destination = navarchv1.ApplicationDestination{Name: "eu-1", Namespace: "web"}
	want.Spec.SyncPolicy.Retry.Backoff.Duration = "10s"
	if !reflect.DeepEqual(app, want) {
		t.Errorf("Render =\n%+v\nwant\n%+v", app, want)
	}
	// The template is not modified.
	if tmpl.Spec.Source.Path != "{{path}}" || tmpl.Spec.Source.Kustomize.CommonLabels["{{ labelKey }}"] != "{{name}}" {
		t.Errorf("Render modified the template: %+v", tmpl.Spec.Source)
	}
}

func TestRenderApplicationGoTemplate(t *testing.T) {
	tmpl := navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{
			Name: "{{ .path.basename }}-{{ .name | normalize }}",
			Labels: map[string]string{
				"env":                      "{{ .metadata.labels.env }}",
				"{{ .labelKey }}":          "{{ index .path.segments 0 }}",
				"branch":                   `{{ slugify 10 .branch }}`,
				"missing":                  "{{ .nope }}",
				"navarch.io/{{ .region }}": "{{ .region | upper }}",
			},
		},
		Spec: navarchv1.ApplicationSpec{
			Source: navarchv1.ApplicationSource{
				RepoURL: "https://git.example.com/apps.git",
				Path:    "{{ .path.path }}",
				Helm: &navarchv1.ApplicationSourceHelm{
					Values:       "{{ toYaml .values }}",
					ValuesObject: &runtime.RawExtension{Raw: []byte(`{"replicas":"{{ .values.replicas }}","n":1,"{{ .region }}":{"on":true}}`)},
					Parameters:   []navarchv1.HelmParameter{{Name: "image.tag", Value: `{{ default "latest" .tag }}`}},
				},
			},
			Destination: navarchv1.ApplicationDestination{Server: "{{ .server }}", Namespace: "{{ .path.basename }}"},
		},
	}
	params := map[string]any{
		"name":     "EU_West.1",
		"server":   "https://eu.example.com",
		"labelKey": "tier",
		"region":   "eu",
		"branch":   "feature/Add-Login_Page",
		"metadata": map[string]any{"labels": map[string]any{"env": "prod"}},
		"path":     map[string]any{"path": "apps/web", "basename": "web", "segments": []any{"apps", "web"}},
		"values":   map[string]any{"replicas": "3"},
	}
	app, err := render(t, tmpl, Options{GoTemplate: true}, params)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := app.Name, "web-eu-west.1"; got != want {
		t.Errorf("name = %q, want %q", got, want)
	}
	wantLabels := map[string]string{
		"env": "prod", "tier": "apps", "branch": "feature", "missing": "<no value>", "navarch.io/eu": "EU",
	}
	if !reflect.DeepEqual(app.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", app.Labels, wantLabels)
	}
	src := app.Spec.Source
	if src.Path != "apps/web" || src.Helm.Values != "replicas: \"3\"" || src.Helm.Parameters[0].Value != "latest" {
		t.Errorf("source = %+v, helm = %+v", src, src.Helm)
	}
	if got, want := string(src.Helm.ValuesObject.Raw), `{"eu":{"on":true},"n":1,"replicas":"3"}`; got != want {
		t.Errorf("valuesObject = %s, want %s", got, want)
	}
	if app.Spec.Destination.Server != "https://eu.example.com" || app.Spec.Destination.Namespace != "web" {
		t.Errorf("destination = %+v", app.Spec.Destination)
	}
}

func TestRenderErrorsNameTheField(t *testing.T) {
	tmpl := navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{Name: "{{ .name }}", Labels: map[string]string{"team": "{{ .team }}"}},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: "https://git.example.com/a.git", Path: "{{ .path }}"},
			Destination: navarchv1.ApplicationDestination{Name: "in-cluster"},
		},
	}
	patch := "metadata:\n  annotations:\n    a: '{{ .annotation }}'\n"
	opts := Options{GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}}
	c, err := Compile(tmpl, &patch, opts)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"x": 1}, `spec.template.metadata.name: map has no entry for key "name"`},
		{map[string]any{"name": "a"}, `spec.template.metadata.labels[team]: map has no entry for key "team"`},
		{map[string]any{"name": "a", "team": "t"}, `spec.template.spec.source.path: map has no entry for key "path"`},
		{map[string]any{"name": "a", "team": "t", "path": "p"}, `spec.templatePatch: map has no entry for key "annotation"`},
	}
	for _, tt := range tests {
		_, err := c.Render(tt.params)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Render(%v) error = %v, want %s", tt.params, err, tt.want)
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("error %v is not a *FieldError", err)
		}
	}
	_, err = c.Render(map[string]any{"name": "a", "team": "t"})
	got := WithParamSet(err, 3, 0).Error()
	if want := `spec.template.spec.source.path: map has no entry for key "path" (parameter set 3 of generator 0)`; got != want {
		t.Errorf("WithParamSet = %q, want %q", got, want)
	}
	var fe *FieldError
	if !errors.As(WithParamSet(err, 3, 0), &fe) || fe.Field != "spec.template.spec.source.path" {
		t.Errorf("WithParamSet does not wrap the *FieldError: %#v", fe)
	}
	if WithParamSet(nil, 1, 2) != nil {
		t.Error("WithParamSet(nil) != nil")
	}
}

func TestMissingKeyOptions(t *testing.T) {
	params := map[string]any{"a": "x", "m": map[string]any{}}
	tests := []struct {
		options []string
		in      string
		want    string
		wantErr string
	}{
		{nil, "{{ .b }}", "<no value>", ""},
		{nil, "{{ .m.b }}", "<no value>", ""},
		{[]string{"missingkey=default"}, "{{ .b }}", "<no value>", ""},
		{[]string{"missingkey=zero"}, "{{ .b }}", "<no value>", ""},
		{[]string{"missingkey=error"}, "{{ .a }}", "x", ""},
		{[]string{"missingkey=error"}, "{{ .b }}", "", `map has no entry for key "b"`},
		{[]string{"missingkey=error"}, "{{ .m.b }}", "", `map has no entry for key "b"`},
	}
	for _, tt := range tests {
		got, err := RenderString(tt.in, params, Options{GoTemplate: true, GoTemplateOptions: tt.options})
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%v %q: error %v, want %q", tt.options, tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%v %q = %q, %v; want %q", tt.options, tt.in, got, err, tt.want)
		}
	}
	if _, err := NewEngine(Options{GoTemplate: true, GoTemplateOptions: []string{"missingkey=panic"}}); err == nil ||
		!strings.Contains(err.Error(), "spec.goTemplateOptions[0]") {
		t.Errorf("NewEngine with a bad option: %v", err)
	}
	if _, err := Compile(navarchv1.ApplicationSetTemplate{}, nil, Options{GoTemplateOptions: []string{"nope"}}); err == nil {
		t.Error("Compile accepted a bad option")
	}
}

func TestRestrictedFunctions(t *testing.T) {
	t.Setenv("NAVARCH_TEMPLATES_SECRET", "s3cr3t")
	for _, fn := range []string{"env", "expandenv", "getHostByName"} {
		src := "{{ " + fn + ` "NAVARCH_TEMPLATES_SECRET" }}`
		_, err := RenderString(src, map[string]any{"a": 1}, Options{GoTemplate: true})
		if err == nil || !strings.Contains(err.Error(), `function "`+fn+`" not defined`) {
			t.Errorf("%s: error %v, want function not defined", fn, err)
		}
		tmpl := navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Name: src}}
		_, err = Compile(tmpl, nil, Options{GoTemplate: true})
		if err == nil || err.Error() != `spec.template.metadata.name: function "`+fn+`" not defined` {
			t.Errorf("%s: Compile error %v", fn, err)
		}
	}
	// Multi-line sources say which line.
	_, err := RenderString("a\n{{ env \"X\" }}", nil, Options{GoTemplate: true})
	if err == nil || err.Error() != `line 2: function "env" not defined` {
		t.Errorf("multi-line parse error = %v", err)
	}
	// Other sprig functions are there.
	got, err := RenderString(`{{ "a,b" | splitList "," | join "-" }} {{ sha256sum "x" | trunc 8 }} {{ list 1 2 | len }}`, nil, Options{GoTemplate: true})
	if err != nil || got != "a-b 2d711642 2" {
		t.Errorf("sprig functions: %q, %v", got, err)
	}
}

func TestYAMLFunctions(t *testing.T) {
	params := map[string]any{
		"obj":  map[string]any{"b": []any{1, "two"}, "a": true},
		"doc":  "replicas: 3\nimage:\n  tag: v1\n",
		"list": "- a\n- b: 1\n",
		"bad":  "a: [",
	}
	tests := []struct {
		in, want, wantErr string
	}{
		{"{{ toYaml .obj }}", "a: true\nb:\n- 1\n- two", ""},
		{"{{ (fromYaml .doc).image.tag }}/{{ (fromYaml .doc).replicas }}", "v1/3", ""},
		{"{{ range fromYamlArray .list }}[{{ . }}]{{ end }}", "[a][map[b:1]]", ""},
		{"{{ fromYaml .doc | toYaml }}", "image:\n  tag: v1\nreplicas: 3", ""},
		{"{{ fromYaml .bad }}", "", "error calling fromYaml"},
		{"{{ fromYamlArray .doc }}", "", "error calling fromYamlArray"},
	}
	for _, tt := range tests {
		got, err := RenderString(tt.in, params, Options{GoTemplate: true})
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestTemplatePatch(t *testing.T) {
	base := navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{
			Name:       "{{ .name }}",
			Labels:     map[string]string{"a": "1", "b": "2"},
			Finalizers: []string{"navarch.io/resources"},
		},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: "https://git.example.com/a.git", Path: "apps/{{ .name }}"},
			Destination: navarchv1.ApplicationDestination{Name: "in-cluster", Namespace: "x"},
			SyncPolicy:  &navarchv1.SyncPolicy{SyncOptions: []navarchv1.SyncOption{"Validate=false"}},
		},
	}
	goOpts := Options{GoTemplate: true}
	tests := []struct {
		name    string
		opts    Options
		patch   string
		params  map[string]any
		check   func(t *testing.T, app *navarchv1.Application)
		wantErr string
	}{
		{
			name: "boolean from a parameter",
			opts: goOpts,
			patch: `spec:
  syncPolicy:
    automated:
      prune: {{ .prune }}
      selfHeal: {{ not .prune }}
`,
			params: map[string]any{"name": "web", "prune": true},
			check: func(t *testing.T, app *navarchv1.Application) {
				a := app.Spec.SyncPolicy.Automated
				if a == nil || !a.Prune || a.SelfHeal {
					t.Errorf("automated = %+v", a)
				}
				// Lists the patch does not mention stay.
				if !reflect.DeepEqual(app.Spec.SyncPolicy.SyncOptions, []navarchv1.SyncOption{"Validate=false"}) {
					t.Errorf("syncOptions = %v", app.Spec.SyncPolicy.SyncOptions)
				}
				if app.Spec.Source.Path != "apps/web" || app.Name != "web" {
					t.Errorf("the rendered template was lost: %s %s", app.Name, app.Spec.Source.Path)
				}
			},
		},
		{
			name: "list from a range loop replaces the list",
			opts: goOpts,
			patch: `spec:
  syncPolicy:
    syncOptions:
    {{- range .options }}
      - {{ . }}
    {{- end }}
  revisionHistoryLimit: {{ .history }}
`,
			params: map[string]any{"name": "web", "options": []string{"CreateNamespace=true", "ServerSideApply=true"}, "history": 3},
			check: func(t *testing.T, app *navarchv1.Application) {
				want := []navarchv1.SyncOption{"CreateNamespace=true", "ServerSideApply=true"}
				if !reflect.DeepEqual(app.Spec.SyncPolicy.SyncOptions, want) {
					t.Errorf("syncOptions = %v, want %v", app.Spec.SyncPolicy.SyncOptions, want)
				}
				if app.Spec.RevisionHistoryLimit == nil || *app.Spec.RevisionHistoryLimit != 3 {
					t.Errorf("revisionHistoryLimit = %v", app.Spec.RevisionHistoryLimit)
				}
			},
		},
		{
			name:   "fasttemplate patch",
			opts:   Options{},
			patch:  "spec:\n  syncPolicy:\n    automated:\n      prune: {{prune}}\nmetadata:\n  labels:\n    c: '{{name}}'\n",
			params: map[string]any{"name": "web", "prune": "true"},
			check: func(t *testing.T, app *navarchv1.Application) {
				if a := app.Spec.SyncPolicy.Automated; a == nil || !a.Prune {
					t.Errorf("automated = %+v", a)
				}
				if want := map[string]string{"a": "1", "b": "2", "c": "web"}; !reflect.DeepEqual(app.Labels, want) {
					t.Errorf("labels = %v, want %v (maps merge)", app.Labels, want)
				}
			},
		},
		{
			name:   "JSON patch",
			opts:   goOpts,
			patch:  `{"spec": {"destination": {"namespace": "{{ .name }}"}}}`,
			params: map[string]any{"name": "web"},
			check: func(t *testing.T, app *navarchv1.Application) {
				if d := app.Spec.Destination; d.Namespace != "web" || d.Name != "in-cluster" {
					t.Errorf("destination = %+v", d)
				}
			},
		},
		{
			name:   "empty patch changes nothing",
			opts:   goOpts,
			patch:  "{{ if .prune }}spec: {syncPolicy: {automated: {prune: true}}}{{ end }}",
			params: map[string]any{"name": "web", "prune": false},
			check: func(t *testing.T, app *navarchv1.Application) {
				if app.Spec.SyncPolicy.Automated != nil {
					t.Errorf("automated = %+v", app.Spec.SyncPolicy.Automated)
				}
			},
		},
		{
			name:   "finalizers merge as a set and null deletes",
			opts:   goOpts,
			patch:  "metadata:\n  finalizers: [navarch.io/other]\n  labels:\n    a: null\nspec:\n  syncPolicy: null\n",
			params: map[string]any{"name": "web"},
			check: func(t *testing.T, app *navarchv1.Application) {
				if want := []string{"navarch.io/other", "navarch.io/resources"}; !reflect.DeepEqual(app.Finalizers, want) {
					t.Errorf("finalizers = %v, want %v", app.Finalizers, want)
				}
				if want := map[string]string{"b": "2"}; !reflect.DeepEqual(app.Labels, want) {
					t.Errorf("labels = %v, want %v", app.Labels, want)
				}
				if app.Spec.SyncPolicy != nil {
					t.Errorf("syncPolicy = %+v, want deleted", app.Spec.SyncPolicy)
				}
				if app.APIVersion != "navarch.io/v1alpha1" || app.Kind != "Application" {
					t.Errorf("TypeMeta = %+v", app.TypeMeta)
				}
			},
		},
		{
			name:    "wrong type",
			opts:    goOpts,
			patch:   "spec:\n  syncPolicy:\n    automated:\n      prune: \"{{ .prune }}\"\n",
			params:  map[string]any{"name": "web", "prune": true},
			wantErr: "spec.templatePatch: the patched Application is invalid: json: cannot unmarshal string",
		},
		{
			name:    "not a mapping",
			opts:    goOpts,
			patch:   "- {{ .name }}\n",
			params:  map[string]any{"name": "web"},
			wantErr: "spec.templatePatch: the rendered patch must be a mapping, got a list",
		},
		{
			name:    "invalid YAML",
			opts:    goOpts,
			patch:   "spec: [{{ .name }}\n",
			params:  map[string]any{"name": "web"},
			wantErr: "spec.templatePatch: the rendered patch is not valid YAML",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			patch := tt.patch
			c, err := Compile(base, &patch, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			// Twice: the second render goes through the decoded-patch cache.
			for range 2 {
				app, err := c.Render(tt.params)
				if tt.wantErr != "" {
					if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
						t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				tt.check(t, app)
			}
		})
	}
	// A patch that does not parse is a Compile error.
	bad := "{{ .name "
	if _, err := Compile(base, &bad, goOpts); err == nil || !strings.HasPrefix(err.Error(), "spec.templatePatch: ") {
		t.Errorf("Compile with a bad patch: %v", err)
	}
}

// TestPatchFastPathMatchesStrategicMerge checks that decoding a patch onto the Application
// gives the same result as the strategic merge for the patches the fast path takes.
func TestPatchFastPathMatchesStrategicMerge(t *testing.T) {
	tmpl := benchTemplate(true)
	tmpl.Spec.Source.Kustomize = &navarchv1.ApplicationSourceKustomize{CommonLabels: map[string]string{"x": "1"}, Images: []string{"a:1"}}
	patches := []string{
		"spec:\n  syncPolicy:\n    automated:\n      prune: false\n      allowEmpty: true\n",
		"spec:\n  source:\n    kustomize:\n      commonLabels:\n        y: '2'\n      images: [b:2]\n",
		"metadata:\n  labels:\n    extra: e\n  annotations:\n    n: '{{ .name }}'\nspec:\n  ignoreDifferences:\n  - kind: Deployment\n    jsonPointers: [/spec/replicas]\n",
		"spec:\n  syncPolicy:\n    syncOptions: []\n  revisionHistoryLimit: 7\n  destination:\n    server: https://x\n",
		"spec:\n  source:\n    helm:\n      releaseName: r\n      parameters:\n      - name: a\n        value: b\n",
		"spec:\n  unknownField: 1\n  project: default\n",
	}
	for _, p := range patches {
		c, err := Compile(tmpl, &p, Options{GoTemplate: true})
		if err != nil {
			t.Fatal(err)
		}
		params := benchParams(1, true)[0]
		fast, err := c.Render(params)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		d := c.patch.decode(strings.ReplaceAll(p, "{{ .name }}", "cluster-000"))
		if !d.fast {
			t.Fatalf("%q did not take the fast path", p)
		}
		app, err := c.render(params, new(scratch))
		if err != nil {
			t.Fatal(err)
		}
		slow, err := c.patch.strategicMerge(app, d.json)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("%q: fast path\n%+v\nstrategic merge\n%+v", p, fast, slow)
		}
	}
}

func TestEmptyParameterSetLeavesTemplateUnrendered(t *testing.T) {
	tmpl := navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{Name: "{{ .name }}", Labels: map[string]string{"k": "{{ .v }}"}},
		Spec:     navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{Path: "{{ .path }}"}},
	}
	for _, opts := range []Options{{}, {GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}}} {
		app, err := render(t, tmpl, opts, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if app.Name != "{{ .name }}" || app.Labels["k"] != "{{ .v }}" || app.Spec.Source.Path != "{{ .path }}" {
			t.Errorf("%+v: %+v", opts, app)
		}
		app.Labels["k"] = "changed"
		if tmpl.Metadata.Labels["k"] != "{{ .v }}" {
			t.Error("the rendered Application shares the template's labels")
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		tmpl navarchv1.ApplicationSetTemplate
		opts Options
		want string
	}{
		{
			name: "unclosed fasttemplate tag",
			tmpl: navarchv1.ApplicationSetTemplate{Spec: navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{Path: "{{a}}/{{b"}}},
			want: `spec.template.spec.source.path: cannot find the closing "}}" of the "{{" at offset 6`,
		},
		{
			name: "go template syntax",
			tmpl: navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Annotations: map[string]string{"a": "{{ if }}"}}},
			opts: Options{GoTemplate: true},
			want: `spec.template.metadata.annotations[a]: missing value for if`,
		},
		{
			name: "templated key",
			tmpl: navarchv1.ApplicationSetTemplate{Spec: navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{
				Kustomize: &navarchv1.ApplicationSourceKustomize{CommonLabels: map[string]string{"{{ .a": "b"}},
			}}},
			opts: Options{GoTemplate: true},
			want: `spec.template.spec.source.kustomize.commonLabels[{{ .a]: unclosed action`,
		},
		{
			name: "finalizer",
			tmpl: navarchv1.ApplicationSetTemplate{Metadata: navarchv1.ApplicationSetTemplateMeta{Finalizers: []string{"ok", "{{ nope }}"}}},
			opts: Options{GoTemplate: true},
			want: `spec.template.metadata.finalizers[1]: function "nope" not defined`,
		},
		{
			name: "inside a list",
			tmpl: navarchv1.ApplicationSetTemplate{Spec: navarchv1.ApplicationSpec{IgnoreDifferences: []navarchv1.ResourceIgnoreDifferences{
				{Kind: "Deployment", JSONPointers: []string{"/a", "{{ .x | nope }}"}},
			}}},
			opts: Options{GoTemplate: true},
			want: `spec.template.spec.ignoreDifferences[0].jsonPointers[1]: function "nope" not defined`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile(tt.tmpl, nil, tt.opts)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Compile error = %v, want %s", err, tt.want)
			}
		})
	}
}

// TestSpecJSONProgramMatchesSetters renders a spec through both spec renderers, the setters
// and the JSON program kept for shapes the setters do not handle.
func TestSpecJSONProgramMatchesSetters(t *testing.T) {
	spec := navarchv1.ApplicationSpec{
		Source: navarchv1.ApplicationSource{
			RepoURL: "https://git.example.com/{{ .org }}.git", Path: "{{ .path }}", TargetRevision: "main",
			Kustomize: &navarchv1.ApplicationSourceKustomize{
				CommonLabels:      map[string]string{"{{ .org }}": "{{ .path }}", "plain": "x", "esc\"aped": "tab\t{{ .org }}"},
				CommonAnnotations: map[string]string{"a": "b"},
				Images:            []string{"{{ .org }}/app:{{ .tag }}"},
				Replicas:          []navarchv1.KustomizeReplica{{Name: "{{ .path }}", Count: 3}},
			},
		},
		Destination: navarchv1.ApplicationDestination{Name: "{{ .org }}", Namespace: "ns-{{ .org }}"},
		SyncPolicy: &navarchv1.SyncPolicy{
			Automated:   &navarchv1.SyncPolicyAutomated{SelfHeal: true},
			SyncOptions: []navarchv1.SyncOption{"PrunePropagationPolicy={{ .policy }}"},
		},
		IgnoreDifferences: []navarchv1.ResourceIgnoreDifferences{{Kind: "{{ .kind }}", JQPathExpressions: []string{".spec"}}},
	}
	params := map[string]any{"org": "ACME \"quoted\" ü", "path": "apps/x", "tag": "v1", "policy": "orphan", "kind": "Deployment"}
	c := newCompiler(Options{GoTemplate: true}, nil)
	r, err := compileSpec(c, &spec, fieldSpec)
	if err != nil || r.set == nil || r.program != nil {
		t.Fatalf("compileSpec = %+v, %v; want setters", r, err)
	}
	prog, err := compileSpecJSON(c, &spec, fieldSpec)
	if err != nil {
		t.Fatal(err)
	}
	viaJSON := specRenderer{program: prog}
	var a, b navarchv1.ApplicationSpec
	if err := r.render(&a, &spec, params, new(scratch)); err != nil {
		t.Fatal(err)
	}
	if err := viaJSON.render(&b, &spec, params, new(scratch)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("setters:\n%+v\nJSON program:\n%+v", a, b)
	}
	if a.Source.Kustomize.CommonLabels[`ACME "quoted" ü`] != "apps/x" || a.Source.Kustomize.CommonLabels[`esc"aped`] != "tab\tACME \"quoted\" ü" {
		t.Errorf("commonLabels = %v", a.Source.Kustomize.CommonLabels)
	}
	// Errors name the field in both.
	params = map[string]any{"org": "o", "path": "p", "tag": "t", "policy": "p"}
	opts := Options{GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}}
	c = newCompiler(opts, nil)
	r, _ = compileSpec(c, &spec, fieldSpec)
	prog, _ = compileSpecJSON(c, &spec, fieldSpec)
	errA := r.render(&a, &spec, params, new(scratch))
	errB := (&specRenderer{program: prog}).render(&b, &spec, params, new(scratch))
	if errA == nil || errB == nil || errA.Error() != errB.Error() {
		t.Errorf("errors differ: %v / %v", errA, errB)
	}
}

func TestOptionsFor(t *testing.T) {
	spec := &navarchv1.ApplicationSetSpec{GoTemplate: true, GoTemplateOptions: []navarchv1.GoTemplateOption{"missingkey=error"}}
	if got, want := OptionsFor(spec), (Options{GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("OptionsFor = %+v, want %+v", got, want)
	}
	if got := OptionsFor(&navarchv1.ApplicationSetSpec{}); got.GoTemplate || got.GoTemplateOptions != nil {
		t.Errorf("OptionsFor(empty) = %+v", got)
	}
}
