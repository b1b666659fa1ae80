package templates

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestEngineRenderString(t *testing.T) {
	fast, err := NewEngine(Options{})
	if err != nil {
		t.Fatal(err)
	}
	goEngine, err := NewEngine(Options{GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		engine  *Engine
		in      string
		params  map[string]any
		want    string
		wantErr string
	}{
		{fast, "- name: {{ name }}\n  url: {{server}}", map[string]any{"name": "a", "server": "https://a"}, "- name: a\n  url: https://a", ""},
		{fast, "{{ .name }}", map[string]any{"name": "a"}, "{{ .name }}", ""},
		{fast, "{{a}} {{b", map[string]any{"a": "1"}, "", `cannot find the closing "}}"`},
		{goEngine, "{{ .name }}", map[string]any{"name": "a"}, "a", ""},
		{goEngine, "no template", nil, "no template", ""},
		{goEngine, "{{ .missing }}", map[string]any{"name": "a"}, "", `map has no entry for key "missing"`},
		{goEngine, "{{ .name", nil, "", "unclosed action"},
		{goEngine, `{{ define "x" }}X{{ end }}{{ template "x" }}-{{ .name }}`, map[string]any{"name": "a"}, "X-a", ""},
	}
	for _, tt := range tests {
		// Twice, the second time from the cache.
		for range 2 {
			got, err := tt.engine.RenderString(tt.in, tt.params)
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
}

// TestEngineSharedFunctionTableIsolatesTemplates checks that strings parsed with the shared
// function table do not see each other's templates and keep their own options.
func TestEngineSharedFunctionTableIsolatesTemplates(t *testing.T) {
	e, err := NewEngine(Options{GoTemplate: true})
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.RenderString(`{{ define "x" }}one{{ end }}{{ template "x" }}`, nil)
	if err != nil || first != "one" {
		t.Fatalf("first = %q, %v", first, err)
	}
	second, err := e.RenderString(`{{ define "x" }}two{{ end }}{{ template "x" }}`, nil)
	if err != nil || second != "two" {
		t.Fatalf("second = %q, %v", second, err)
	}
	a, _ := e.RenderString("{{ .a }}", map[string]any{"a": "A"})
	b, _ := e.RenderString("{{ .b }}", map[string]any{"b": "B"})
	a2, _ := e.RenderString("{{ .a }}", map[string]any{"a": "A"})
	if a != "A" || b != "B" || a2 != "A" {
		t.Errorf("a=%q b=%q a2=%q", a, b, a2)
	}
}

func TestEngineCacheIsBounded(t *testing.T) {
	e, err := NewEngine(Options{GoTemplate: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range engineCacheSize + 10 {
		got, err := e.RenderString(fmt.Sprintf("{{ .x }}-%d", i), map[string]any{"x": "v"})
		if err != nil || got != fmt.Sprintf("v-%d", i) {
			t.Fatalf("%d: %q, %v", i, got, err)
		}
	}
	if n := len(e.cache); n > engineCacheSize {
		t.Errorf("cache holds %d entries, want at most %d", n, engineCacheSize)
	}
}

func TestConcurrentUse(t *testing.T) {
	e, err := NewEngine(Options{GoTemplate: true})
	if err != nil {
		t.Fatal(err)
	}
	patch := "spec:\n  syncPolicy:\n    automated:\n      prune: {{ .prune }}\n"
	tmpl, err := e.Compile(benchTemplate(true), &patch)
	if err != nil {
		t.Fatal(err)
	}
	sets := benchParams(200, true)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i, p := range sets {
				p := map[string]any{"name": p["name"], "server": p["server"], "metadata": p["metadata"], "path": p["path"], "values": p["values"], "prune": i%2 == 0}
				app, err := tmpl.Render(p)
				if err != nil {
					t.Error(err)
					return
				}
				if want := p["path"].(map[string]any)["basename"].(string) + "-" + p["name"].(string); app.Name != want {
					t.Errorf("name %q, want %q", app.Name, want)
				}
				s := fmt.Sprintf("{{ .w }}-%d", i%50)
				if got, err := e.RenderString(s, map[string]any{"w": w}); err != nil || got != fmt.Sprintf("%d-%d", w, i%50) {
					t.Errorf("RenderString = %q, %v", got, err)
				}
			}
		})
	}
	wg.Wait()
}
