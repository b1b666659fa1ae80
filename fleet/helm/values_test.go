package helm

import (
	"errors"
	"io/fs"
	"maps"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
)

// valuesRepo is a repository with a chart at apps/cfg whose ConfigMap shows every top-level
// value as "value|kind", and value files around it.
func valuesRepo() fstest.MapFS {
	fsys := addFiles(fstest.MapFS{}, "apps/cfg", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: cfg\nversion: 1.0.0\n",
		"values.yaml": `fromChart: chart
fromFileA: chart
fromFileB: chart
fromValues: chart
fromObject: chart
fromParam: chart
`,
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
{{- range $k, $v := .Values }}
  {{ $k }}: {{ printf "%v|%s" $v (kindOf $v) | quote }}
{{- end }}
`,
		"values-a.yaml":    "fromFileA: a\nfromFileB: a\nfromValues: a\nfromObject: a\nfromParam: a\n",
		"values-b.yaml":    "fromFileB: b\nfromValues: b\nfromObject: b\nfromParam: b\n",
		"envs/1-base.yaml": "env: base\nbase: yes\n",
		"envs/2-prod.yaml": "env: prod\n",
		"files/motd.txt":   "hello, world\n{{ not a template }}\n",
		"bad.yaml":         "a: [\n",
	})
	return addFiles(fsys, "config", map[string]string{"top.yaml": "top: root\n"})
}

// renderValues renders the cfg chart with opts and returns its ConfigMap's data.
func renderValues(t *testing.T, opts *navarchv1.ApplicationSourceHelm, refs map[string]fs.FS) (map[string]string, error) {
	t.Helper()
	req := render.HelmRequest{
		Chart:       render.HelmChart{FS: valuesRepo(), Dir: "apps/cfg", Source: "apps/cfg"},
		Options:     opts,
		ReleaseName: "cfg",
		Refs:        refs,
	}
	objs, err := New(Options{}).RenderChart(t.Context(), req)
	if err != nil {
		return nil, err
	}
	data, _, err := unstructured.NestedStringMap(find(t, objs, "ConfigMap", "cfg").Object, "data")
	if err != nil {
		t.Fatal(err)
	}
	return data, nil
}

func TestValuesPrecedence(t *testing.T) {
	data, err := renderValues(t, &navarchv1.ApplicationSourceHelm{
		ValueFiles:   []string{"values-a.yaml", "values-b.yaml"},
		Values:       "fromValues: values\nfromObject: values\nfromParam: values\n",
		ValuesObject: &runtime.RawExtension{Raw: []byte(`{"fromObject": "object", "fromParam": "object"}`)},
		Parameters:   []navarchv1.HelmParameter{{Name: "fromParam", Value: "param"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"fromChart":  "chart|string",
		"fromFileA":  "a|string",
		"fromFileB":  "b|string",
		"fromValues": "values|string",
		"fromObject": "object|string",
		"fromParam":  "param|string",
	}
	if !maps.Equal(data, want) {
		t.Errorf("values:\n got %v\nwant %v", data, want)
	}
}

func TestValuesSources(t *testing.T) {
	refs := map[string]fs.FS{"config": fstest.MapFS{
		"env/prod.yaml": {Data: []byte("ref: from-config-repo\n")},
	}}
	tests := []struct {
		name string
		opts navarchv1.ApplicationSourceHelm
		want map[string]string
	}{{
		name: "forceString keeps a number a string",
		opts: navarchv1.ApplicationSourceHelm{Parameters: []navarchv1.HelmParameter{
			{Name: "str", Value: "0123", ForceString: true},
			{Name: "num", Value: "456"},
			{Name: "flag", Value: "true"},
		}},
		want: map[string]string{"str": "0123|string", "num": "456|int64", "flag": "true|bool"},
	}, {
		name: "forceString parameters come after the others, as --set-string after --set",
		opts: navarchv1.ApplicationSourceHelm{Parameters: []navarchv1.HelmParameter{
			{Name: "order", Value: "set-string", ForceString: true},
			{Name: "order", Value: "set"},
		}},
		want: map[string]string{"order": "set-string|string"},
	}, {
		name: "a value with commas is one value; braces make a list",
		opts: navarchv1.ApplicationSourceHelm{Parameters: []navarchv1.HelmParameter{
			{Name: "commas", Value: "a,b,c"},
			{Name: "escaped", Value: `x\,y`},
			{Name: "stringCommas", Value: "1,2", ForceString: true},
			{Name: "list", Value: "{x,y}"},
		}},
		want: map[string]string{"commas": "a,b,c|string", "escaped": "x,y|string", "stringCommas": "1,2|string", "list": "[x y]|slice"},
	}, {
		name: "file parameters hold the file as a string",
		opts: navarchv1.ApplicationSourceHelm{FileParameters: []navarchv1.HelmFileParameter{{Name: "motd", Path: "files/motd.txt"}}},
		want: map[string]string{"motd": "hello, world\n{{ not a template }}\n|string"},
	}, {
		name: "a glob is expanded in order, the later file winning",
		opts: navarchv1.ApplicationSourceHelm{ValueFiles: []string{"envs/*.yaml"}},
		want: map[string]string{"env": "prod|string", "base": "true|bool"},
	}, {
		name: "$ref reads from the source with that ref",
		opts: navarchv1.ApplicationSourceHelm{ValueFiles: []string{"$config/env/prod.yaml"}},
		want: map[string]string{"ref": "from-config-repo|string"},
	}, {
		name: "a path from the repository root, and one going up",
		opts: navarchv1.ApplicationSourceHelm{ValueFiles: []string{"/config/top.yaml", "../../config/top.yaml"}},
		want: map[string]string{"top": "root|string"},
	}, {
		name: "missing value files are skipped with ignoreMissingValueFiles",
		opts: navarchv1.ApplicationSourceHelm{
			ValueFiles:              []string{"missing.yaml", "nothing/*.yaml", "values-a.yaml"},
			IgnoreMissingValueFiles: true,
		},
		want: map[string]string{"fromFileA": "a|string"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := renderValues(t, &tt.opts, refs)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if data[k] != v {
					t.Errorf("%s = %q, want %q", k, data[k], v)
				}
			}
		})
	}
}

func TestValuesErrors(t *testing.T) {
	refs := map[string]fs.FS{"config": fstest.MapFS{}}
	tests := []struct {
		name     string
		opts     navarchv1.ApplicationSourceHelm
		want     string
		notFound bool
	}{{
		name:     "missing value file",
		opts:     navarchv1.ApplicationSourceHelm{ValueFiles: []string{"values-a.yaml", "values-missing.yaml"}},
		want:     `chart apps/cfg: value file "values-missing.yaml": no such file`,
		notFound: true,
	}, {
		name:     "a glob matching nothing",
		opts:     navarchv1.ApplicationSourceHelm{ValueFiles: []string{"nothing/*.yaml"}},
		want:     `chart apps/cfg: value file "nothing/*.yaml": no file matches: no such file`,
		notFound: true,
	}, {
		name:     "missing file of a ref",
		opts:     navarchv1.ApplicationSourceHelm{ValueFiles: []string{"$config/prod.yaml"}},
		want:     `chart apps/cfg: value file "$config/prod.yaml": no such file`,
		notFound: true,
	}, {
		name: "unknown ref",
		opts: navarchv1.ApplicationSourceHelm{ValueFiles: []string{"$values/prod.yaml"}, IgnoreMissingValueFiles: true},
		want: `chart apps/cfg: value file "$values/prod.yaml": no source with ref "values"`,
	}, {
		name: "outside the repository",
		opts: navarchv1.ApplicationSourceHelm{ValueFiles: []string{"../../../etc/passwd"}, IgnoreMissingValueFiles: true},
		want: `chart apps/cfg: value file "../../../etc/passwd": must stay inside the repository`,
	}, {
		name: "outside a ref",
		opts: navarchv1.ApplicationSourceHelm{ValueFiles: []string{"$config/../x.yaml"}},
		want: `chart apps/cfg: value file "$config/../x.yaml": must stay inside the repository`,
	}, {
		name: "remote",
		opts: navarchv1.ApplicationSourceHelm{ValueFiles: []string{"https://example.com/values.yaml"}},
		want: `chart apps/cfg: value file "https://example.com/values.yaml": remote value files are not supported`,
	}, {
		name: "not YAML",
		opts: navarchv1.ApplicationSourceHelm{ValueFiles: []string{"bad.yaml"}},
		want: `chart apps/cfg: value file "bad.yaml": cannot unmarshal yaml document`,
	}, {
		name: "values not YAML",
		opts: navarchv1.ApplicationSourceHelm{Values: "a: [\n"},
		want: `chart apps/cfg: values: cannot unmarshal yaml document`,
	}, {
		name: "valuesObject not an object",
		opts: navarchv1.ApplicationSourceHelm{ValuesObject: &runtime.RawExtension{Raw: []byte(`[1, 2]`)}},
		want: `chart apps/cfg: valuesObject: `,
	}, {
		name: "bad parameter",
		opts: navarchv1.ApplicationSourceHelm{Parameters: []navarchv1.HelmParameter{{Name: "a[x]", Value: "1"}}},
		want: `chart apps/cfg: parameter "a[x]": `,
	}, {
		name:     "missing file parameter",
		opts:     navarchv1.ApplicationSourceHelm{FileParameters: []navarchv1.HelmFileParameter{{Name: "cert", Path: "files/cert.pem"}}, IgnoreMissingValueFiles: true},
		want:     `chart apps/cfg: file parameter "cert": "files/cert.pem": no such file`,
		notFound: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderValues(t, &tt.opts, refs)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err:\n got %v\nwant %s…", err, tt.want)
			}
			if notFound := errors.Is(err, ErrValueFileNotFound); notFound != tt.notFound {
				t.Errorf("errors.Is(err, ErrValueFileNotFound) = %t, want %t", notFound, tt.notFound)
			}
		})
	}
}

func TestEscapeCommas(t *testing.T) {
	for in, want := range map[string]string{
		"":        "",
		"plain":   "plain",
		"a,b":     `a\,b`,
		`a\,b,c`:  `a\,b\,c`,
		",":       `\,`,
		"{a,b}":   "{a,b}",
		"{a,b":    `{a\,b`,
		"x={a,b}": `x={a\,b}`,
	} {
		if got := escapeCommas(in); got != want {
			t.Errorf("escapeCommas(%q) = %q, want %q", in, got, want)
		}
	}
}
