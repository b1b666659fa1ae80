package render

import "testing"

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{"*.yaml", []string{"a.yaml", ".yaml"}, []string{"a.yml", "sub/a.yaml", "a.yaml.bak"}},
		{"{deploy.yaml,svc.yaml}", []string{"deploy.yaml", "svc.yaml"}, []string{"deploy.yml", "ingress.yaml", "deploy.yamlsvc.yaml"}},
		{"{a,b{c,d}}.yaml", []string{"a.yaml", "bc.yaml", "bd.yaml"}, []string{"b.yaml", "ab.yaml"}},
		{"{*.json,sub/*}", []string{"x.json", "sub/x.yaml"}, []string{"sub/x/y.yaml", "x.yaml"}},
		{"**/*.yaml", []string{"a/b.yaml", "a/b/c.yaml"}, []string{"b.yaml"}},
		{"**.yaml", []string{"a/b.yaml", "b.yaml"}, []string{"b.yml"}},
		{"sub/**", []string{"sub/a", "sub/a/b"}, []string{"sub", "other/a"}},
		{"?.yaml", []string{"a.yaml"}, []string{"ab.yaml", "/.yaml"}},
		{"[ab].yaml", []string{"a.yaml", "b.yaml"}, []string{"c.yaml"}},
		{"[a-c].yaml", []string{"b.yaml"}, []string{"d.yaml"}},
		{"[!a].yaml", []string{"b.yaml"}, []string{"a.yaml", "/.yaml"}},
		{"[^a].yaml", []string{"b.yaml"}, []string{"a.yaml"}},
		{"[]a].yaml", []string{"].yaml", "a.yaml"}, []string{"b.yaml"}},
		{"[-a].yaml", []string{"-.yaml", "a.yaml"}, []string{"b.yaml"}},
		{`\*.yaml`, []string{"*.yaml"}, []string{"a.yaml"}},
		{`a\{b\}`, []string{"a{b}"}, []string{"ab"}},
		{"a,b", []string{"a,b"}, []string{"a"}},
		{"a}b", []string{"a}b"}, nil},
		{"(x|y).+$", []string{"(x|y).+$"}, []string{"x.y"}},
		{"dé?loy.yaml", []string{"dééloy.yaml", "déploy.yaml"}, []string{"deploy.yaml"}},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Errorf("compileGlob(%q): %v", tt.pattern, err)
			continue
		}
		for _, p := range tt.match {
			if !g.match(p) {
				t.Errorf("%q does not match %q", tt.pattern, p)
			}
		}
		for _, p := range tt.noMatch {
			if g.match(p) {
				t.Errorf("%q matches %q", tt.pattern, p)
			}
		}
	}
}

func TestGlobErrors(t *testing.T) {
	for pattern, want := range map[string]string{
		"{a,b":   "unclosed '{' in pattern",
		"[ab":    "unclosed '[' in pattern",
		"[]":     "unclosed '[' in pattern",
		"[z-a]":  "syntax error in pattern",
		`a\`:     "syntax error in pattern",
		"[a\\":   "syntax error in pattern",
		"a\xffb": "pattern is not valid UTF-8",
		"[\xff]": "pattern is not valid UTF-8",
		"{{a}":   "unclosed '{' in pattern",
	} {
		if _, err := compileGlob(pattern); err == nil || err.Error() != want {
			t.Errorf("compileGlob(%q) error = %v, want %q", pattern, err, want)
		}
	}
}
