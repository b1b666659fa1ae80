package generators

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// fakePlugins answers every call with the sets of its ConfigMap, after recording the call.
// A set may use the input parameter "branch" as "{{branch}}" in its "digest" value.
type fakePlugins struct {
	mu    sync.Mutex
	sets  map[string][]map[string]any
	err   error
	calls []PluginCall
}

func (f *fakePlugins) CallPlugin(_ context.Context, call PluginCall) ([]map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if f.err != nil {
		return nil, f.err
	}
	sets, ok := f.sets[call.ConfigMap]
	if !ok {
		return nil, errors.New("ConfigMap navarch-system/" + call.ConfigMap + ": not found")
	}
	if b, ok := call.Parameters["branch"].(string); ok {
		return []map[string]any{{"digest": "sha256:" + b}}, nil
	}
	return sets, nil
}

func pluginParams(t *testing.T, params map[string]any) map[string]apiextensionsv1.JSON {
	t.Helper()
	out := map[string]apiextensionsv1.JSON{}
	for k, v := range params {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = apiextensionsv1.JSON{Raw: raw}
	}
	return out
}

func TestPlugin(t *testing.T) {
	plugins := &fakePlugins{sets: map[string][]map[string]any{
		"envs": {
			{"env": "dev", "replicas": float64(1), "region": map[string]any{"name": "eu", "zones": []any{"a", "b"}}},
			{"env": "prod", "replicas": float64(3), "generator": "overwritten", "values": map[string]any{"x": "from the plugin"}},
		},
	}}
	input := pluginParams(t, map[string]any{"team": "web", "limit": 10, "tags": []string{"x", "y"}})
	spec := func(values map[string]string) *navarchv1.PluginGenerator {
		return &navarchv1.PluginGenerator{ConfigMapRef: navarchv1.PluginConfigMapRef{Name: "envs"},
			Input: navarchv1.PluginInput{Parameters: input}, Values: values}
	}
	tests := []struct {
		name       string
		goTemplate bool
		in         Inputs
		spec       *navarchv1.PluginGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name: "fasttemplate: flattened, with the input and the values",
			in:   Inputs{Plugins: plugins},
			spec: spec(map[string]string{"url": "https://{{env}}.example"}),
			want: []map[string]any{
				{"env": "dev", "replicas": "1", "region.name": "eu", "region.zones.0": "a", "region.zones.1": "b",
					"generator.input.parameters.team": "web", "generator.input.parameters.limit": "10",
					"generator.input.parameters.tags.0": "x", "generator.input.parameters.tags.1": "y",
					"values.url": "https://dev.example"},
				{"env": "prod", "replicas": "3",
					"generator.input.parameters.team": "web", "generator.input.parameters.limit": "10",
					"generator.input.parameters.tags.0": "x", "generator.input.parameters.tags.1": "y",
					"values.url": "https://prod.example"},
			},
		},
		{
			name:       "goTemplate: nested, the plugin's own generator key replaced",
			goTemplate: true,
			in:         Inputs{Plugins: plugins},
			spec:       spec(nil),
			want: []map[string]any{
				{"env": "dev", "replicas": float64(1), "region": map[string]any{"name": "eu", "zones": []any{"a", "b"}},
					"generator": map[string]any{"input": map[string]any{"parameters": map[string]any{"team": "web", "limit": float64(10), "tags": []any{"x", "y"}}}}},
				{"env": "prod", "replicas": float64(3), "values": map[string]any{"x": "from the plugin"},
					"generator": map[string]any{"input": map[string]any{"parameters": map[string]any{"team": "web", "limit": float64(10), "tags": []any{"x", "y"}}}}},
			},
		},
		{
			name:    "without a plugin caller, as in navarch generate",
			spec:    spec(nil),
			wantErr: "spec.generators[0].plugin: plugin generators run only in the controller",
		},
		{
			name:    "a failing plugin fails the generator",
			in:      Inputs{Plugins: &fakePlugins{err: errors.New("ConfigMap navarch-system/envs: POST http://p/api/v1/getparams.execute: 500 Internal Server Error")}},
			spec:    spec(nil),
			wantErr: "spec.generators[0].plugin: ConfigMap navarch-system/envs: POST http://p/api/v1/getparams.execute: 500",
		},
		{
			name:    "no ConfigMap name",
			in:      Inputs{Plugins: plugins},
			spec:    &navarchv1.PluginGenerator{},
			wantErr: "spec.generators[0].plugin.configMapRef.name: must be set",
		},
		{
			name: "an input parameter that is not JSON",
			in:   Inputs{Plugins: plugins},
			spec: &navarchv1.PluginGenerator{ConfigMapRef: navarchv1.PluginConfigMapRef{Name: "envs"},
				Input: navarchv1.PluginInput{Parameters: map[string]apiextensionsv1.JSON{"bad": {Raw: []byte("{")}}}},
			wantErr: "spec.generators[0].plugin.input.parameters[bad]:",
		},
		{
			name:    "a null parameter set",
			in:      Inputs{Plugins: &fakePlugins{sets: map[string][]map[string]any{"envs": {nil}}}},
			spec:    spec(nil),
			wantErr: "spec.generators[0].plugin: the plugin's parameter set 0 is not an object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := generate(t, tt.goTemplate, tt.in, navarchv1.ApplicationSetGenerator{Plugin: tt.spec})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}

func TestPluginSendsItsInputAsWritten(t *testing.T) {
	plugins := &fakePlugins{sets: map[string][]map[string]any{"p": {{"a": "1"}}}}
	spec := &navarchv1.PluginGenerator{ConfigMapRef: navarchv1.PluginConfigMapRef{Name: "p"},
		Input: navarchv1.PluginInput{Parameters: map[string]apiextensionsv1.JSON{"big": {Raw: []byte("9007199254740993")}}}}
	in := Inputs{Plugins: plugins, ApplicationSetName: "previews"}
	if _, err := generate(t, false, in, navarchv1.ApplicationSetGenerator{Plugin: spec}); err != nil {
		t.Fatal(err)
	}
	if len(plugins.calls) != 1 {
		t.Fatalf("the plugin was called %d times, want once", len(plugins.calls))
	}
	call := plugins.calls[0]
	body, err := json.Marshal(call.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	if call.ConfigMap != "p" || call.ApplicationSet != "previews" || string(body) != `{"big":9007199254740993}` {
		t.Errorf("call = %+v with parameters %s, want ConfigMap p, ApplicationSet previews, parameters {\"big\":9007199254740993}", call, body)
	}
}

func TestPluginRequeueAfter(t *testing.T) {
	for _, tt := range []struct {
		seconds *int64
		want    time.Duration
	}{{nil, 30 * time.Minute}, {ptr[int64](45), 45 * time.Second}} {
		g := Plugin{Spec: &navarchv1.PluginGenerator{ConfigMapRef: navarchv1.PluginConfigMapRef{Name: "p"}, RequeueAfterSeconds: tt.seconds}}
		if got := g.RequeueAfter(); got != tt.want {
			t.Errorf("requeueAfterSeconds %v: RequeueAfter = %v, want %v", tt.seconds, got, tt.want)
		}
	}
}

// In a matrix, a plugin's input may use an earlier child's parameters; each distinct rendering
// asks the plugin once.
func TestPluginInAMatrix(t *testing.T) {
	plugins := &fakePlugins{sets: map[string][]map[string]any{"digests": {}}}
	m := &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
		{List: listGen(t, map[string]any{"branch": "a"}, map[string]any{"branch": "b"}, map[string]any{"branch": "a", "x": "2"})},
		{Plugin: &navarchv1.PluginGenerator{ConfigMapRef: navarchv1.PluginConfigMapRef{Name: "digests"},
			Input: navarchv1.PluginInput{Parameters: pluginParams(t, map[string]any{"branch": "{{branch}}"})}}},
	}}
	got, err := generate(t, false, Inputs{Plugins: plugins}, navarchv1.ApplicationSetGenerator{Matrix: m})
	if err != nil {
		t.Fatal(err)
	}
	checkParams(t, got, []map[string]any{
		{"branch": "a", "digest": "sha256:a", "generator.input.parameters.branch": "a"},
		{"branch": "b", "digest": "sha256:b", "generator.input.parameters.branch": "b"},
		{"branch": "a", "x": "2", "digest": "sha256:a", "generator.input.parameters.branch": "a"},
	})
	if len(plugins.calls) != 2 {
		t.Errorf("the plugin was called %d times, want 2 (once per distinct input)", len(plugins.calls))
	}
}
