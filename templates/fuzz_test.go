package templates

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Allocation bounds of one render in the fuzz targets, as runtime.MemStats.TotalAlloc counts
// them (garbage included). A fasttemplate render makes one string of at most MaxFieldSize; a
// Go template render is charged to a Budget of fuzzBudget bytes, and on top of that makes
// its output, text/template's own garbage (MaxSteps of it at most) and the transient copies
// of functions that escape a value (a few times MaxValueSize).
const (
	maxFastAlloc = 8 << 20
	fuzzBudget   = 32 << 20
	maxGoAlloc   = 128 << 20
)

// allocated returns how many bytes f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func FuzzFastTemplate(f *testing.F) {
	for _, seed := range []struct{ s, key, value string }{
		{"{{path.basename}}-{{name}}", "name", "in-cluster"},
		{"{{ unknown }} and {{name}}", "x", "y"},
		{"{{}}{{ }}{{{name}}}", "name", "n"},
		{"no template at all", "a", "b"},
		{"{{ a\n}} {{a}}", "a", "{{a}}"},
		{"{{a}}{{", "a", "1"},
		{"}}{{a}}{{b}}}}", "b", "\"quoted\"\n"},
		{"{{ values.replicas }}", "values.replicas", "3"},
		{"\xff{{a}}\x00", "a", "\xfe"},
		{"{{path[0]}}/{{path[1]}}", "path[0]", "apps"},
	} {
		f.Add(seed.s, seed.key, seed.value)
	}
	f.Fuzz(func(t *testing.T, s, key, value string) {
		params := map[string]any{key: value, "name": "in-cluster", "path.basename": "guestbook"}
		var got string
		var err error
		if n := allocated(func() { got, err = RenderString(s, params, Options{}) }); n > maxFastAlloc {
			t.Fatalf("rendering %q allocated %d bytes, more than %d", s, n, maxFastAlloc)
		}
		if len(got) > MaxFieldSize {
			t.Fatalf("rendered %d bytes, more than MaxFieldSize", len(got))
		}
		got2, err2 := RenderString(s, params, Options{})
		if got != got2 || (err == nil) != (err2 == nil) {
			t.Fatalf("not deterministic: %q, %v / %q, %v", got, err, got2, err2)
		}
		if !strings.Contains(s, "{{") && (err != nil || got != s) {
			t.Fatalf("a string without {{ changed: %q -> %q, %v", s, got, err)
		}
		if !isFastTemplated(s) {
			if err != nil || got != s {
				t.Fatalf("an untemplated string changed: %q -> %q, %v", s, got, err)
			}
			return
		}
		// The compiled form agrees with the one-pass renderer, as a string and as JSON.
		c, cerr := compileFast(s)
		if (cerr == nil) != (err == nil) {
			t.Fatalf("compileFast error %v, RenderString error %v", cerr, err)
		}
		if cerr != nil {
			return
		}
		if r, ok := c.render(params, MaxFieldSize); !ok || r != got {
			t.Fatalf("compiled render %q, %v; one-pass %q", r, ok, got)
		}
		out, n, ok := c.appendJSON(nil, params, MaxFieldSize)
		if !ok || n != len(got) {
			t.Fatalf("appendJSON counted %d bytes, %v; the string has %d", n, ok, len(got))
		}
		js := append([]byte{'"'}, out...)
		js = append(js, '"')
		var decoded string
		if err := json.Unmarshal(js, &decoded); err != nil {
			t.Fatalf("appendJSON produced invalid JSON %s: %v", js, err)
		}
		if utf8.ValidString(got) && decoded != got {
			t.Fatalf("appendJSON decodes to %q, want %q", decoded, got)
		}
	})
}

// excluded lists functions the Go fuzz target leaves out: they are not deterministic (random
// values, time), or a call takes long by design (key generation, bcrypt). The functions whose
// results grow with an argument (repeat, until, seq, indent, printf widths, ...) and range
// are bounded, so they stay in, and every render must stay under maxGoAlloc.
var excluded = []string{
	"rand", "shuffle", "uuid", "now", "date", "ago", "Date", "gen", "bcrypt", "htpasswd", "derive", "Cert", "AES",
}

func FuzzGoTemplate(f *testing.F) {
	for _, seed := range []struct{ s, value string }{
		{"{{ .path.basename }}-{{ .name }}", "x"},
		{"{{ .name | normalize }}", "Hello_World"},
		{"{{ slugify 20 .value }}", "feature/Some_Branch"},
		{`{{ default "x" .missing }}`, ""},
		{"{{ toYaml .metadata }}", "v"},
		{"{{ (fromYaml .value).a }}", "a: 1"},
		{"{{ if eq .value \"a\" }}A{{ else }}B{{ end }}", "a"},
		{"{{ .value | upper | trunc 3 }}", "abcdef"},
		{"{{ env \"HOME\" }}", ""},
		{"{{ .name", ""},
		{"{{ index .path.segments 5 }}", ""},
		{`{{ define "t" }}{{ .name }}{{ end }}{{ template "t" . }}`, ""},
		{`{{ len (repeat 600000000 "x") }}`, ""},
		{`{{ range 1000000000 }}{{ .value }}{{ end }}`, "abc"},
		{`{{ range until 100 }}{{ indent 1000 (repeat 100 "\n") }}{{ end }}`, ""},
		{`{{ $l := list }}{{ range 100 }}{{ $l = append $l $.value }}{{ end }}{{ $_ := set $ "l" $l }}{{ .l }}`, "v"},
		{`{{ printf "%1000000d" 1 }}{{ seq 100000 }}`, ""},
	} {
		f.Add(seed.s, seed.value)
	}
	f.Fuzz(func(t *testing.T, s, value string) {
		if len(s) > 512 {
			return
		}
		for _, name := range excluded {
			if strings.Contains(s, name) {
				return
			}
		}
		// Every render gets a Budget of its own, so that it may make fuzzBudget bytes (twice
		// that for an Application, which renders the string twice).
		budgetOf := func(o Options, n int64) Options {
			o.Budget = NewBudget(0, n)
			return o
		}
		budget := func(o Options) Options { return budgetOf(o, fuzzBudget) }
		bounded := func(what string, render func()) {
			t.Helper()
			if n := allocated(render); n > maxGoAlloc {
				t.Fatalf("%s of %q allocated %d bytes, more than %d", what, s, n, maxGoAlloc)
			}
		}
		params := map[string]any{
			"name":     "in-cluster",
			"value":    value,
			"metadata": map[string]any{"labels": map[string]any{"env": value}},
			"path":     map[string]any{"basename": "guestbook", "segments": []any{"apps", "guestbook"}},
		}
		for _, opts := range []Options{{GoTemplate: true}, {GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}}} {
			var got, got2 string
			var err, err2 error
			bounded("RenderString", func() { got, err = RenderString(s, params, budget(opts)) })
			bounded("RenderString", func() { got2, err2 = RenderString(s, params, budget(opts)) })
			if got != got2 || (err == nil) != (err2 == nil) {
				t.Fatalf("not deterministic: %q, %v / %q, %v", got, err, got2, err2)
			}
			if !strings.Contains(s, "{{") && (err != nil || got != s) {
				t.Fatalf("a string without {{ changed: %q -> %q, %v", s, got, err)
			}
			// A compiled template renders the same as a one-off string.
			tmpl := navarchv1.ApplicationSetTemplate{
				Metadata: navarchv1.ApplicationSetTemplateMeta{Name: s},
				Spec:     navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{Path: s}},
			}
			c, cerr := Compile(tmpl, nil, budgetOf(opts, 2*fuzzBudget))
			if cerr != nil {
				if err == nil {
					t.Fatalf("Compile failed (%v) where RenderString did not", cerr)
				}
				continue
			}
			var app *navarchv1.Application
			var rerr error
			bounded("Render", func() { app, rerr = c.Render(params) })
			if (rerr == nil) != (err == nil) {
				t.Fatalf("Render error %v, RenderString error %v", rerr, err)
			}
			if rerr == nil && utf8.ValidString(got) && (app.Name != got || app.Spec.Source.Path != got) {
				t.Fatalf("Render gave %q / %q, RenderString %q", app.Name, app.Spec.Source.Path, got)
			}
		}
		e, err := NewEngine(budget(Options{GoTemplate: true}))
		if err != nil {
			t.Fatal(err)
		}
		var got string
		bounded("Engine.RenderString", func() { got, err = e.RenderString(s, params) })
		if err == nil {
			if want, _ := RenderString(s, params, budget(Options{GoTemplate: true})); got != want {
				t.Fatalf("Engine gave %q, RenderString %q", got, want)
			}
		}
	})
}
