package generators

import (
	"strings"
	"testing"
)

func TestMatchPath(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"apps/*", "apps/api", true},
		{"apps/*", "apps", false},
		{"apps/*", "apps/api/base", false},
		{"apps/*", "apps/", true}, // path.Match: * matches the empty segment
		{"apps/?pi", "apps/api", true},
		{"apps/[a-c]*", "apps/billing", true},
		{"apps/[^a-c]*", "apps/billing", false},
		{`apps/\*`, "apps/*", true},
		{`apps/\*`, "apps/x", false},
		{"apps/api", "apps/api", true},
		{"apps/api", "apps/api2", false},
		{"*", "apps", true},
		{"*", "apps/api", false},
		// ** in the middle and at the start matches zero or more segments.
		{"apps/**/base", "apps/base", true},
		{"apps/**/base", "apps/web/base", true},
		{"apps/**/base", "apps/web/x/y/base", true},
		{"apps/**/base", "apps/web/x/y/base/z", false},
		{"**/base", "base", true},
		{"**/base", "a/b/base", true},
		{"**/*.json", "config.json", true},
		{"**/*.json", "a/b/config.json", true},
		{"**/*.json", "a/b/config.yaml", false},
		// A trailing ** matches one or more segments: what is below, not the directory itself.
		{"apps/**", "apps", false},
		{"apps/**", "apps/api", true},
		{"apps/**", "apps/api/base", true},
		{"**", "anything/at/all", true},
		{"**/**", "a", true},
		{"a/**/**/b", "a/b", true},
		{"a/**/b/**/c", "a/x/b/y/z/c", true},
		{"a/**/b/**/c", "a/x/c", false},
		// ** inside a segment is just two stars.
		{"apps/a**", "apps/api", true},
		{"apps/a**", "apps/api/x", false},
	}
	for _, tt := range tests {
		got, err := matchPath(tt.pattern, tt.name)
		if err != nil {
			t.Errorf("matchPath(%q, %q): %v", tt.pattern, tt.name, err)
			continue
		}
		if got != tt.want {
			t.Errorf("matchPath(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestValidatePattern(t *testing.T) {
	tests := []struct{ pattern, wantErr string }{
		{"apps/*", ""},
		{"**/config.json", ""},
		{"a/..b/c", ""},
		{"", "must not be empty"},
		{"/apps/*", "must be relative"},
		{"..", `must not contain ".."`},
		{"apps/../../etc", `must not contain ".."`},
		{"apps/[", "malformed glob"},
		{`apps/\`, "malformed glob"},
	}
	for _, tt := range tests {
		err := validatePattern(tt.pattern)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("validatePattern(%q): %v", tt.pattern, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("validatePattern(%q) = %v, want an error containing %q", tt.pattern, err, tt.wantErr)
		}
	}
}

// FuzzMatchPath checks that matching never panics, that a valid pattern never errors, and that
// a pattern without glob metacharacters matches exactly the path it spells.
func FuzzMatchPath(f *testing.F) {
	for _, seed := range [][2]string{
		{"apps/*", "apps/api"},
		{"apps/**/base", "apps/x/base"},
		{"**", "a/b"},
		{"a/b", "a/b"},
		{"a//b", "a//b"},
		{"[a-", "a"},
		{`\`, `\`},
		{"", ""},
		{"**/**/**/**/**/**/**/x", "a/b/c/d/e/f/g/h/i/j/k/y"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		got, err := matchPath(pattern, name)
		if validatePattern(pattern) == nil && err != nil {
			t.Fatalf("matchPath(%q, %q): valid pattern failed: %v", pattern, name, err)
		}
		if !strings.ContainsAny(pattern, `*?[\`) {
			if err != nil {
				t.Fatalf("matchPath(%q, %q): literal pattern failed: %v", pattern, name, err)
			}
			if got != (pattern == name) {
				t.Fatalf("matchPath(%q, %q) = %v: a literal pattern must match exactly itself", pattern, name, got)
			}
			if ok, _ := matchPath(pattern, pattern); !ok {
				t.Fatalf("literal pattern %q does not match itself", pattern)
			}
		}
	})
}
