package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// ids names objects as "Kind/name", or "Kind/namespace/name" for those with a namespace.
func ids(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		name := o.GetName()
		if name == "" {
			name = o.GetGenerateName() + "*"
		}
		if ns := o.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		out[i] = o.GetKind() + "/" + name
	}
	return out
}

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestRenderDirectory(t *testing.T) {
	repo := fstest.MapFS{
		"README.md": file("# not a manifest\n"),
		"root.yaml": file(cm("root")),

		// Several documents: a comment before the first "---" is not a document; empty and
		// comment-only documents are skipped.
		"apps/multi/all.yaml": file("# header\n---\n" + cm("one") + "---\n---\n# only a comment\n---\n" + cm("two") + "...\n"),

		"apps/lists/a-list.yaml": file(`apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: item-1}}
- {apiVersion: v1, kind: Secret, metadata: {name: item-2}}
`),
		"apps/lists/b-cmlist.yml": file(`apiVersion: v1
kind: ConfigMapList
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: item-3}}
`),
		"apps/lists/c-empty-list.yaml": file("apiVersion: v1\nkind: List\nitems: []\n"),

		"apps/json/a.json": file(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json-one"}}`),
		"apps/json/b.json": file(`{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json-two"}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "json-three-"}}
]}`),
		"apps/json/c.json": file("  \n"),

		// Sorted by path: a.json, b.yaml, c.yml; other files are ignored.
		"apps/order/b.yaml":   file(cm("b")),
		"apps/order/a.json":   file(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}`),
		"apps/order/c.yml":    file(cm("c")),
		"apps/order/d.txt":    file("not yaml: ["),
		"apps/order/e.yaml~":  file("not yaml: ["),
		"apps/order/notes.md": file("# notes"),

		"apps/web/deploy.yaml":             file(cm("deploy")),
		"apps/web/svc.yaml":                file(cm("svc")),
		"apps/web/ingress.yaml":            file(cm("ingress")),
		"apps/web/extra/more.yaml":         file(cm("more")),
		"apps/web/extra/deeper/last.json":  file(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "last"}}`),
		"apps/web/extra/kustomization.yml": file("resources: [more.yaml]\n"),
		"apps/web.yaml":                    file(cm("sibling")), // sorts between web/ entries by full path
	}

	tests := []struct {
		name string
		src  navarchv1.ApplicationSource
		want []string
	}{
		{"root by empty path", navarchv1.ApplicationSource{}, []string{"ConfigMap/root"}},
		{"root by dot", navarchv1.ApplicationSource{Path: "."}, []string{"ConfigMap/root"}},
		{"trailing slash", navarchv1.ApplicationSource{Path: "apps/order/"}, []string{"ConfigMap/a", "ConfigMap/b", "ConfigMap/c"}},
		{"multi-document", navarchv1.ApplicationSource{Path: "apps/multi"}, []string{"ConfigMap/one", "ConfigMap/two"}},
		{"lists", navarchv1.ApplicationSource{Path: "apps/lists"}, []string{"ConfigMap/item-1", "Secret/item-2", "ConfigMap/item-3"}},
		{"json", navarchv1.ApplicationSource{Path: "apps/json"}, []string{"ConfigMap/json-one", "ConfigMap/json-two", "ConfigMap/json-three-*"}},
		{"file order", navarchv1.ApplicationSource{Path: "apps/order"}, []string{"ConfigMap/a", "ConfigMap/b", "ConfigMap/c"}},
		{"no recursion", navarchv1.ApplicationSource{Path: "apps/web"}, []string{"ConfigMap/deploy", "ConfigMap/ingress", "ConfigMap/svc"}},
		{
			"recursion skips kustomization files",
			navarchv1.ApplicationSource{Path: "apps/web", Directory: &navarchv1.ApplicationSourceDirectory{Recurse: true}},
			[]string{"ConfigMap/deploy", "ConfigMap/last", "ConfigMap/more", "ConfigMap/ingress", "ConfigMap/svc"},
		},
		{
			"recursion from the root",
			navarchv1.ApplicationSource{Directory: &navarchv1.ApplicationSourceDirectory{Recurse: true, Include: "apps/web*"}},
			[]string{"ConfigMap/sibling"},
		},
		{
			"include with braces",
			navarchv1.ApplicationSource{Path: "apps/web", Directory: &navarchv1.ApplicationSourceDirectory{Include: "{deploy.yaml,svc.yaml}"}},
			[]string{"ConfigMap/deploy", "ConfigMap/svc"},
		},
		{
			"exclude wins over include",
			navarchv1.ApplicationSource{Path: "apps/web", Directory: &navarchv1.ApplicationSourceDirectory{Include: "{deploy,svc}.yaml", Exclude: "svc.*"}},
			[]string{"ConfigMap/deploy"},
		},
		{
			"star does not cross slash",
			navarchv1.ApplicationSource{Path: "apps/web", Directory: &navarchv1.ApplicationSourceDirectory{Recurse: true, Include: "*.yaml"}},
			[]string{"ConfigMap/deploy", "ConfigMap/ingress", "ConfigMap/svc"},
		},
		{
			"double star crosses slash",
			navarchv1.ApplicationSource{Path: "apps/web", Directory: &navarchv1.ApplicationSourceDirectory{Recurse: true, Include: "extra/**"}},
			[]string{"ConfigMap/last", "ConfigMap/more"},
		},
		{
			"exclude a subdirectory",
			navarchv1.ApplicationSource{Path: "apps/web", Directory: &navarchv1.ApplicationSourceDirectory{Recurse: true, Exclude: "{extra/**,ingress.yaml}"}},
			[]string{"ConfigMap/deploy", "ConfigMap/svc"},
		},
		{
			"empty kustomize options are no kustomization",
			navarchv1.ApplicationSource{Path: "apps/order", Kustomize: &navarchv1.ApplicationSourceKustomize{}},
			[]string{"ConfigMap/a", "ConfigMap/b", "ConfigMap/c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := renderPlain(repo, tt.src)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got := ids(objs); !slices.Equal(got, tt.want) {
				t.Errorf("objects:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestRenderDirectoryValues(t *testing.T) {
	repo := fstest.MapFS{"d/deploy.yaml": file(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {version: "1.0"}
spec:
  replicas: 3
  minReadySeconds: 1.5
  paused: false
  big: 12345678901234567890
  date: 2024-01-02
`)}
	objs, err := renderPlain(repo, navarchv1.ApplicationSource{Path: "d"})
	if err != nil {
		t.Fatal(err)
	}
	spec := objs[0].Object["spec"].(map[string]any)
	for field, want := range map[string]any{
		"replicas":        int64(3),
		"minReadySeconds": 1.5,
		"paused":          false,
		"big":             1.2345678901234567e19,
		"date":            "2024-01-02",
	} {
		if got := spec[field]; got != want {
			t.Errorf("spec.%s = %#v, want %#v", field, got, want)
		}
	}
	if got := objs[0].GetLabels()["version"]; got != "1.0" {
		t.Errorf("label version = %q, want 1.0", got)
	}
	objs[0].DeepCopy() // panics on values that are not JSON-compatible
}

func TestRenderErrors(t *testing.T) {
	repo := fstest.MapFS{
		"apps/web/deploy.yaml": file(cm("ok") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: a: b\n"),
		"nokind/a.yaml":        file(cm("ok") + "---\n# second\napiVersion: v1\nmetadata:\n  name: x\n"),
		"noname/a.yaml":        file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n"),
		"nometa/a.yaml":        file("apiVersion: v1\nkind: ConfigMap\n"),
		"badname/a.yaml":       file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 3\n"),
		"noversion/a.yaml":     file("kind: ConfigMap\nmetadata:\n  name: x\n"),
		"listitem/a.yaml":      file("apiVersion: v1\nkind: List\nitems:\n- " + `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}` + "\n- {apiVersion: v1, metadata: {name: b}}\n"),
		"scalar/a.yaml":        file("just some text\n"),
		"array/a.yaml":         file("- a\n- b\n"),
		"badjson/a.json":       file("{\n  \"apiVersion\": \"v1\",\n  \"kind\": }\n"),
		"jsonarray/a.json":     file(`[{"apiVersion": "v1"}]`),
		"binary/a.yaml":        file("\x00\x01\x02\xff"),
		"chart/Chart.yaml":     file("name: chart\n"),
		"chart/values.yaml":    file("a: b\n"),
		"plain/a.yaml":         file(cm("a")),
		"afile.yaml":           file(cm("a")),
	}
	tests := []struct {
		name     string
		src      navarchv1.ApplicationSource
		want     string // the whole message
		is       error
		file     string // when set, the error is an *Error for this file and document
		document int
	}{
		{
			name: "invalid YAML names the file, the document and the line in the file",
			src:  navarchv1.ApplicationSource{Path: "apps/web"},
			want: "apps/web/deploy.yaml: document 2: yaml: line 10: mapping values are not allowed in this context",
			file: "apps/web/deploy.yaml", document: 2,
		},
		{
			name: "missing kind",
			src:  navarchv1.ApplicationSource{Path: "nokind"},
			want: "nokind/a.yaml: document 2: missing kind",
			file: "nokind/a.yaml", document: 2,
		},
		{
			name: "missing name",
			src:  navarchv1.ApplicationSource{Path: "noname"},
			want: "noname/a.yaml: document 1: missing metadata.name",
			file: "noname/a.yaml", document: 1,
		},
		{
			name: "missing metadata",
			src:  navarchv1.ApplicationSource{Path: "nometa"},
			want: "nometa/a.yaml: document 1: missing metadata.name",
		},
		{
			name: "name is not a string",
			src:  navarchv1.ApplicationSource{Path: "badname"},
			want: "badname/a.yaml: document 1: metadata.name is not a string but a number",
		},
		{
			name: "missing apiVersion",
			src:  navarchv1.ApplicationSource{Path: "noversion"},
			want: "noversion/a.yaml: document 1: missing apiVersion",
		},
		{
			name: "list item",
			src:  navarchv1.ApplicationSource{Path: "listitem"},
			want: "listitem/a.yaml: document 1: items[1]: missing kind",
		},
		{
			name: "scalar document",
			src:  navarchv1.ApplicationSource{Path: "scalar"},
			want: "scalar/a.yaml: document 1: not an object but a string",
		},
		{
			name: "array document",
			src:  navarchv1.ApplicationSource{Path: "array"},
			want: "array/a.yaml: document 1: not an object but an array",
		},
		{
			name: "invalid JSON names the file and the line",
			src:  navarchv1.ApplicationSource{Path: "badjson"},
			want: "badjson/a.json: json: line 3: invalid character '}' looking for beginning of value",
			file: "badjson/a.json", document: 0,
		},
		{
			name: "JSON array",
			src:  navarchv1.ApplicationSource{Path: "jsonarray"},
			want: "jsonarray/a.json: not an object but an array",
		},
		{
			name: "binary file",
			src:  navarchv1.ApplicationSource{Path: "binary"},
			want: "binary/a.yaml: document 1: yaml: control characters are not allowed",
		},
		{
			name: "missing path",
			src:  navarchv1.ApplicationSource{Path: "apps/x"},
			want: `path "apps/x": no such directory in the repository`,
			is:   ErrPathNotFound,
		},
		{
			name: "path is a file",
			src:  navarchv1.ApplicationSource{Path: "afile.yaml"},
			want: `path "afile.yaml": no such directory in the repository`,
			is:   ErrPathNotFound,
		},
		{
			name: "path outside the repository",
			src:  navarchv1.ApplicationSource{Path: "apps/../../etc"},
			want: `path "apps/../../etc": must stay inside the repository`,
		},
		{
			name: "absolute path",
			src:  navarchv1.ApplicationSource{Path: "/etc"},
			want: `path "/etc": must be relative to the repository root`,
		},
		{
			name: "helm by Chart.yaml",
			src:  navarchv1.ApplicationSource{Path: "chart"},
			want: "chart: helm sources are not supported yet",
			is:   ErrHelmNotSupported,
		},
		{
			name: "helm by spec.source.helm",
			src:  navarchv1.ApplicationSource{Path: "plain", Helm: &navarchv1.ApplicationSourceHelm{}},
			want: "plain: helm sources are not supported yet",
			is:   ErrHelmNotSupported,
		},
		{
			name: "kustomize options without a kustomization",
			src:  navarchv1.ApplicationSource{Path: "plain", Kustomize: &navarchv1.ApplicationSourceKustomize{NamePrefix: "p-"}},
			want: "plain: spec.source.kustomize is set but the directory holds no kustomization.yaml, kustomization.yml or Kustomization",
		},
		{
			name: "bad include",
			src:  navarchv1.ApplicationSource{Path: "plain", Directory: &navarchv1.ApplicationSourceDirectory{Include: "{a,b"}},
			want: `spec.source.directory.include: invalid pattern "{a,b": unclosed '{' in pattern`,
		},
		{
			name: "bad exclude",
			src:  navarchv1.ApplicationSource{Path: "plain", Directory: &navarchv1.ApplicationSourceDirectory{Exclude: "[a"}},
			want: `spec.source.directory.exclude: invalid pattern "[a": unclosed '[' in pattern`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := renderPlain(repo, tt.src)
			if err == nil {
				t.Fatalf("Render returned %q, want error %q", ids(objs), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %q\nwant %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			if tt.file != "" {
				var rerr *Error
				if !errors.As(err, &rerr) {
					t.Fatalf("error %v is not an *Error", err)
				}
				if rerr.File != tt.file || rerr.Document != tt.document {
					t.Errorf("Error{File: %q, Document: %d}, want {%q, %d}", rerr.File, rerr.Document, tt.file, tt.document)
				}
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	tests := []struct {
		in   string
		want []string // "index@line:text"
	}{
		{"", nil},
		{"# only a comment\n", nil},
		{"a: 1\n", []string{"1@1:a: 1\n"}},
		{"a: 1", []string{"1@1:a: 1"}},
		{"---\na: 1\n", []string{"1@2:a: 1\n"}},
		{"# c\n\n---\na: 1\n---\nb: 2\n", []string{"1@4:a: 1\n", "2@6:b: 2\n"}},
		{"a: 1\n---\n---\nb: 2\n", []string{"1@1:a: 1\n", "2@3:", "3@4:b: 2\n"}},
		{"a: 1\n--- # comment\nb: 2\n", []string{"1@1:a: 1\n", "2@3:b: 2\n"}},
		{"--- {a: 1}\n", []string{"1@1:    {a: 1}\n"}},
		{"a: 1\r\n---\r\nb: 2\r\n", []string{"1@1:a: 1\r\n", "2@3:b: 2\r\n"}},
		{"a: |\n  ---\n----\n", []string{"1@1:a: |\n  ---\n----\n"}},
		{"\xef\xbb\xbfa: 1\n", []string{"1@1:a: 1\n"}},
		{"a: 1\n---\n", []string{"1@1:a: 1\n", "2@3:"}},
	}
	for _, tt := range tests {
		var got []string
		for _, d := range splitDocuments([]byte(tt.in)) {
			got = append(got, fmt.Sprintf("%d@%d:%s", d.index, d.line, d.text))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("splitDocuments(%q):\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// renderPlain renders src without remote bases or Helm, as most tests need.
func renderPlain(repo fs.FS, src navarchv1.ApplicationSource) ([]*unstructured.Unstructured, error) {
	return Render(context.Background(), repo, src, Options{})
}
