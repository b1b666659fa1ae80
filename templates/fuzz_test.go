package templates

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

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
		got, err := RenderString(s, params, Options{})
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
		if r := c.render(params); r != got {
			t.Fatalf("compiled render %q, one-pass %q", r, got)
		}
		js := append([]byte{'"'}, c.appendJSON(nil, params)...)
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

// expensive lists functions and constructs the Go fuzz target leaves out: they are fine in
// templates but let random inputs burn CPU or memory (range over a huge number, repeat,
// key generation, printf widths) or are not deterministic (random values, time).
var expensive = []string{
	"range", "repeat", "until", "seq", "rand", "shuffle", "gen", "bcrypt", "htpasswd", "derive",
	"Cert", "AES", "printf", "indent", "wrap", "uuid", "now", "date", "ago", "Date",
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
	} {
		f.Add(seed.s, seed.value)
	}
	e, err := NewEngine(Options{GoTemplate: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s, value string) {
		if len(s) > 512 {
			return
		}
		for _, name := range expensive {
			if strings.Contains(s, name) {
				return
			}
		}
		params := map[string]any{
			"name":     "in-cluster",
			"value":    value,
			"metadata": map[string]any{"labels": map[string]any{"env": value}},
			"path":     map[string]any{"basename": "guestbook", "segments": []any{"apps", "guestbook"}},
		}
		for _, opts := range []Options{{GoTemplate: true}, {GoTemplate: true, GoTemplateOptions: []string{"missingkey=error"}}} {
			got, err := RenderString(s, params, opts)
			got2, err2 := RenderString(s, params, opts)
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
			c, cerr := Compile(tmpl, nil, opts)
			if cerr != nil {
				if err == nil {
					t.Fatalf("Compile failed (%v) where RenderString did not", cerr)
				}
				continue
			}
			app, rerr := c.Render(params)
			if (rerr == nil) != (err == nil) {
				t.Fatalf("Render error %v, RenderString error %v", rerr, err)
			}
			if rerr == nil && utf8.ValidString(got) && (app.Name != got || app.Spec.Source.Path != got) {
				t.Fatalf("Render gave %q / %q, RenderString %q", app.Name, app.Spec.Source.Path, got)
			}
		}
		if got, err := e.RenderString(s, params); err == nil {
			if want, _ := RenderString(s, params, Options{GoTemplate: true}); got != want {
				t.Fatalf("Engine gave %q, RenderString %q", got, want)
			}
		}
	})
}
