package repo

import (
	"errors"
	"testing"
)

func TestParseIndex(t *testing.T) {
	cases := []struct {
		name     string
		data     string
		versions []string
		err      error
	}{
		{
			name: "yaml, sorted newest first, entries without version dropped",
			data: `apiVersion: v1
entries:
  web:
  - name: web
    version: 1.0.0
    urls: [web-1.0.0.tgz]
  - name: web
    version: 1.10.0
    urls: [web-1.10.0.tgz]
  - name: web
    urls: [broken.tgz]
  - null
serverInfo: {}
unknownField: true
`,
			versions: []string{"1.10.0", "1.0.0"},
		},
		{
			name:     "json",
			data:     `{"apiVersion":"v1","entries":{"web":[{"name":"web","version":"0.1.0","urls":["a.tgz"]}]}}`,
			versions: []string{"0.1.0"},
		},
		{name: "no apiVersion", data: "entries: {}\n", err: ErrInvalidRepository},
		{name: "not an index", data: "<html>login</html>", err: ErrInvalidRepository},
		{name: "empty", data: "", err: ErrInvalidRepository},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			idx, err := parseIndex([]byte(tc.data))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("parseIndex: %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range idx.Entries["web"] {
				got = append(got, v.Version)
			}
			if len(got) != len(tc.versions) {
				t.Fatalf("versions %v, want %v", got, tc.versions)
			}
			for i := range got {
				if got[i] != tc.versions[i] {
					t.Fatalf("versions %v, want %v", got, tc.versions)
				}
			}
		})
	}
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nentries:\n  web:\n  - name: web\n    version: 1.0.0\n    urls: [web-1.0.0.tgz]\n"))
	f.Add([]byte(`{"apiVersion":"v1","entries":{"web":[null]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := parseIndex(data)
		if err != nil {
			return
		}
		for name, versions := range idx.Entries {
			for _, v := range versions {
				if v == nil || v.Metadata == nil || v.Version == "" {
					t.Fatalf("entry of %s kept without a version", name)
				}
			}
			// Matching must not panic on whatever the index holds.
			_, _ = idx.Get(name, "")
		}
	})
}

func TestRedact(t *testing.T) {
	cases := map[string]string{
		"https://bob:hunter2@charts.example.com/stable": "https://charts.example.com/stable",
		"https://charts.example.com":                    "https://charts.example.com",
		"oci://bob:hunter2@reg.example.com/charts":      "oci://reg.example.com/charts",
		"https://bob:hunter2@exa mple.com/%zz":          "https://exa mple.com/%zz",
	}
	for in, want := range cases {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
