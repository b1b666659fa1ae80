package render

import (
	"encoding/json"
	"testing"
	"testing/fstest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// FuzzRender renders a directory holding one file, YAML or JSON. Whatever the file, Render
// must not panic, must give the same answer twice, and every object it returns must be a
// valid unstructured object.
func FuzzRender(f *testing.F) {
	for _, seed := range []struct {
		data   string
		isJSON bool
	}{
		{cm("a") + "---\n" + cm("b"), false},
		{"apiVersion: v1\nkind: List\nitems:\n- " + `{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}` + "\n", false},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {n: 1e999, big: 123456789012345678901234567890}\n", false},
		{"a: &a [*a, *a]\nb: *a\n", false},
		{"--- |\n  text\n---\n- 1\n", false},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: a: b\n", false},
		{"\x00\xff\xfe", false},
		{"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"a\"}, \"n\": 1e400}", true},
		{`{"apiVersion": "v1", "kind": "List", "items": [{"kind": "List", "items": [1]}]}`, true},
		{`[1, 2`, true},
	} {
		f.Add([]byte(seed.data), seed.isJSON)
	}
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		name := "app/manifest.yaml"
		if isJSON {
			name = "app/manifest.json"
		}
		repo := fstest.MapFS{name: {Data: data}}
		src := navarchv1.ApplicationSource{Path: "app"}
		objs, err := renderPlain(repo, src)
		objs2, err2 := renderPlain(repo, src)
		if (err == nil) != (err2 == nil) || len(objs) != len(objs2) {
			t.Fatalf("not deterministic: %d objects, %v / %d objects, %v", len(objs), err, len(objs2), err2)
		}
		if err != nil {
			if err.Error() != err2.Error() {
				t.Fatalf("not deterministic: %v / %v", err, err2)
			}
			return
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "" || o.GetKind() == "" || (o.GetName() == "" && o.GetGenerateName() == "") {
				t.Fatalf("invalid object returned: %v", o.Object)
			}
			o.DeepCopy()
			if _, err := json.Marshal(o.Object); err != nil {
				t.Fatalf("object does not marshal: %v", err)
			}
		}
	})
}
