package helm

import (
	"slices"
	"strings"
	"testing"
)

func TestParseManifests(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
		err           string
	}{{
		name:    "documents, empty ones skipped",
		content: "---\n# just a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n",
		want:    []string{"ConfigMap/a", "Secret/b"},
	}, {
		name:    "a List stands for its items",
		content: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n- apiVersion: v1\n  kind: Service\n  metadata:\n    name: b\n",
		want:    []string{"ConfigMap/a", "Service/b"},
	}, {
		name:    "generateName",
		content: "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: run-\n",
		want:    []string{"Job/"},
	}, {
		name:    "document numbers count from the first",
		content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nmetadata:\n  name: b\n",
		err:     "templates/a.yaml: document 2: missing kind",
	}, {
		name:    "a leading separator opens the first document",
		content: "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
		err:     "templates/a.yaml: document 1: missing metadata.name",
	}, {
		name:    "an item of a List",
		content: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  metadata:\n    name: a\n",
		err:     "templates/a.yaml: document 1: items[0]: missing kind",
	}, {
		name:    "not an object",
		content: "- a\n- b\n",
		err:     "templates/a.yaml: document 1: not an object but []interface {}",
	}, {
		name:    "no apiVersion",
		content: "kind: ConfigMap\nmetadata:\n  name: a\n",
		err:     "templates/a.yaml: document 1: missing apiVersion",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := parseManifests("templates/a.yaml", tt.content)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Errorf("err = %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := kindNames(objs); !slices.Equal(got, tt.want) {
				t.Errorf("objects %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSortByKindFollowsHelmInstallOrder(t *testing.T) {
	content := strings.Join([]string{
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d1\n",
		"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
		"apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
		"apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d2\n",
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
	}, "---\n")
	objs, err := parseManifests("templates/a.yaml", content)
	if err != nil {
		t.Fatal(err)
	}
	sortByKind(objs)
	want := []string{"Namespace/ns", "Service/s", "Deployment/d1", "Deployment/d2", "Gadget/g", "Widget/w"}
	if got := kindNames(objs); !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func FuzzParseManifests(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkind: List\nitems: []\n")
	f.Add("---\n---\n: :\n")
	f.Fuzz(func(t *testing.T, content string) {
		objs, err := parseManifests("templates/a.yaml", content)
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetKind() == "" || o.GetAPIVersion() == "" {
				t.Errorf("object without kind or apiVersion: %v", o.Object)
			}
		}
	})
}
