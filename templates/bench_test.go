package templates

import (
	"fmt"
	"testing"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// benchTemplate is a realistic ApplicationSet template: one Application per cluster and app
// directory.
func benchTemplate(goTemplate bool) navarchv1.ApplicationSetTemplate {
	k := func(fast, goTmpl string) string {
		if goTemplate {
			return "{{ " + goTmpl + " }}"
		}
		return "{{" + fast + "}}"
	}
	return navarchv1.ApplicationSetTemplate{
		Metadata: navarchv1.ApplicationSetTemplateMeta{
			Name: k("path.basename", ".path.basename") + "-" + k("name", ".name"),
			Labels: map[string]string{
				"app.kubernetes.io/name": k("path.basename", ".path.basename"),
				"env":                    k("metadata.labels.env", ".metadata.labels.env"),
				"team":                   "platform",
			},
			Annotations: map[string]string{"navarch.io/cluster": k("server", ".server")},
		},
		Spec: navarchv1.ApplicationSpec{
			Source: navarchv1.ApplicationSource{
				RepoURL:        "https://git.example.com/platform/apps.git",
				Path:           k("path", ".path.path"),
				TargetRevision: k("values.revision", ".values.revision"),
			},
			Destination: navarchv1.ApplicationDestination{
				Name:      k("name", ".name"),
				Namespace: k("path.basename", ".path.basename"),
			},
			SyncPolicy: &navarchv1.SyncPolicy{
				Automated:   &navarchv1.SyncPolicyAutomated{Prune: true, SelfHeal: true},
				SyncOptions: []navarchv1.SyncOption{"CreateNamespace=true", "ServerSideApply=true"},
			},
		},
	}
}

// benchParams returns n parameter sets as a git-directories × clusters matrix produces them.
func benchParams(n int, goTemplate bool) []map[string]any {
	sets := make([]map[string]any, n)
	for i := range sets {
		cluster := fmt.Sprintf("cluster-%03d", i%100)
		app := fmt.Sprintf("app-%03d", i/100)
		env := []string{"dev", "staging", "prod"}[i%3]
		server := "https://" + cluster + ".example.com:6443"
		if goTemplate {
			sets[i] = map[string]any{
				"name":     cluster,
				"server":   server,
				"metadata": map[string]any{"labels": map[string]any{"env": env}},
				"path": map[string]any{
					"path":     "apps/" + app,
					"basename": app,
					"segments": []string{"apps", app},
				},
				"values": map[string]any{"revision": "main"},
			}
		} else {
			sets[i] = map[string]any{
				"name":                cluster,
				"server":              server,
				"metadata.labels.env": env,
				"path":                "apps/" + app,
				"path.basename":       app,
				"path[0]":             "apps",
				"path[1]":             app,
				"values.revision":     "main",
			}
		}
	}
	return sets
}

// BenchmarkRender10k renders 10,000 Applications per operation; the budget is 0.5 s (5e8
// ns/op) in both modes.
func BenchmarkRender10k(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"fasttemplate", Options{}},
		{"goTemplate", Options{GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			tmpl, err := Compile(benchTemplate(mode.opts.GoTemplate), nil, mode.opts)
			if err != nil {
				b.Fatal(err)
			}
			sets := benchParams(10000, mode.opts.GoTemplate)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, p := range sets {
					if _, err := tmpl.Render(p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkRender10kAsExpand renders 10,000 Applications the way a pass of Expand does: a
// fresh Budget and Engine, the template compiled through the Engine, every render charged.
func BenchmarkRender10kAsExpand(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"fasttemplate", Options{}},
		{"goTemplate", Options{GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			tmpl := benchTemplate(mode.opts.GoTemplate)
			sets := benchParams(10000, mode.opts.GoTemplate)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				opts := mode.opts
				opts.Budget = NewBudget(5*time.Second, 256<<20)
				e, err := NewEngine(opts)
				if err != nil {
					b.Fatal(err)
				}
				c, err := e.Compile(tmpl, nil)
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range sets {
					if _, err := c.Render(p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkRender measures one Application, with and without a templatePatch.
func BenchmarkRender(b *testing.B) {
	fastPatch := "spec:\n  syncPolicy:\n    automated:\n      prune: {{prune}}\n"
	goPatch := "spec:\n  syncPolicy:\n    syncOptions:\n{{- range .options }}\n      - {{ . }}\n{{- end }}\n"
	for _, c := range []struct {
		name  string
		opts  Options
		patch *string
	}{
		{"fasttemplate", Options{}, nil},
		{"goTemplate", Options{GoTemplate: true}, nil},
		{"fasttemplate+patch", Options{}, &fastPatch},
		{"goTemplate+patch", Options{GoTemplate: true}, &goPatch},
	} {
		b.Run(c.name, func(b *testing.B) {
			tmpl, err := Compile(benchTemplate(c.opts.GoTemplate), c.patch, c.opts)
			if err != nil {
				b.Fatal(err)
			}
			sets := benchParams(100, c.opts.GoTemplate)
			for _, p := range sets {
				p["prune"] = "true"
				p["options"] = []string{"CreateNamespace=true", "PruneLast=true"}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := tmpl.Render(sets[i%len(sets)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkEngineRenderString measures a cached one-off string, as generators render them.
func BenchmarkEngineRenderString(b *testing.B) {
	for _, c := range []struct {
		name   string
		opts   Options
		s      string
		params map[string]any
	}{
		{"fasttemplate", Options{}, "{{path.basename}}-{{name}}", map[string]any{"path.basename": "app", "name": "c1"}},
		{"goTemplate", Options{GoTemplate: true}, "{{ .path.basename }}-{{ .name }}", map[string]any{"path": map[string]any{"basename": "app"}, "name": "c1"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			e, err := NewEngine(c.opts)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.RenderString(c.s, c.params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompile measures parsing a template, which happens once per ApplicationSet.
func BenchmarkCompile(b *testing.B) {
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"fasttemplate", Options{}},
		{"goTemplate", Options{GoTemplate: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			tmpl := benchTemplate(c.opts.GoTemplate)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(tmpl, nil, c.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRender10kPatch renders 10,000 Applications with a templatePatch that differs for
// every parameter set, so that every patch is parsed (the worst case for the patch cache).
func BenchmarkRender10kPatch(b *testing.B) {
	for _, mode := range []struct {
		name  string
		opts  Options
		patch string
	}{
		{"fasttemplate", Options{}, "metadata:\n  annotations:\n    cluster: '{{name}}-{{path.basename}}'\nspec:\n  syncPolicy:\n    automated:\n      selfHeal: false\n"},
		{"goTemplate", Options{GoTemplate: true}, "metadata:\n  annotations:\n    cluster: '{{ .name }}-{{ .path.basename }}'\nspec:\n  syncPolicy:\n    automated:\n      selfHeal: {{ ne .metadata.labels.env \"prod\" }}\n"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			tmpl, err := Compile(benchTemplate(mode.opts.GoTemplate), &mode.patch, mode.opts)
			if err != nil {
				b.Fatal(err)
			}
			sets := benchParams(10000, mode.opts.GoTemplate)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, p := range sets {
					if _, err := tmpl.Render(p); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
