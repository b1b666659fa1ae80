package jsontree

import (
	"encoding/json"
	"reflect"
	"testing"
)

// doc decodes a JSON document for a test.
func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

func TestLookup(t *testing.T) {
	tree := map[string]any{"spec": map[string]any{
		"replicas":   int64(3),
		"containers": []any{map[string]any{"name": "web"}},
	}}
	tests := []struct {
		name   string
		path   []any
		want   any
		wantOK bool
	}{
		{name: "scalar", path: []any{"spec", "replicas"}, want: int64(3), wantOK: true},
		{name: "list index from jq", path: []any{"spec", "containers", 0, "name"}, want: "web", wantOK: true},
		{name: "list index from a pointer", path: []any{"spec", "containers", "0", "name"}, want: "web", wantOK: true},
		{name: "index out of range", path: []any{"spec", "containers", 1}},
		{name: "leading zero is not an index", path: []any{"spec", "containers", "00"}},
		{name: "missing key", path: []any{"spec", "paused"}},
		{name: "through a scalar", path: []any{"spec", "replicas", "x"}},
		{name: "empty path is the tree", path: nil, want: tree, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Lookup(tree, tt.path)
			if ok != tt.wantOK || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Lookup(%v) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestCopy(t *testing.T) {
	tests := []struct {
		name     string
		dst, src string
		path     []any
		want     string
	}{
		{name: "scalar replaced",
			dst: `{"spec":{"replicas":1,"paused":false}}`, src: `{"spec":{"replicas":5}}`,
			path: []any{"spec", "replicas"}, want: `{"spec":{"replicas":5,"paused":false}}`},
		{name: "absent from src is removed from dst",
			dst: `{"spec":{"replicas":1,"paused":false}}`, src: `{"spec":{}}`,
			path: []any{"spec", "replicas"}, want: `{"spec":{"paused":false}}`},
		{name: "missing maps are created",
			dst: `{}`, src: `{"metadata":{"labels":{"a":"b"}}}`,
			path: []any{"metadata", "labels", "a"}, want: `{"metadata":{"labels":{"a":"b"}}}`},
		{name: "null in dst becomes a map",
			dst: `{"metadata":{"labels":null}}`, src: `{"metadata":{"labels":{"a":"b"}}}`,
			path: []any{"metadata", "labels", "a"}, want: `{"metadata":{"labels":{"a":"b"}}}`},
		{name: "list element replaced",
			dst: `{"l":[{"i":"a"},{"i":"b"}]}`, src: `{"l":[{"i":"a"},{"i":"live"}]}`,
			path: []any{"l", 1, "i"}, want: `{"l":[{"i":"a"},{"i":"live"}]}`},
		{name: "a list element dst lacks is not created",
			dst: `{"l":[]}`, src: `{"l":[{"i":"a"}]}`,
			path: []any{"l", 0, "i"}, want: `{"l":[]}`},
		{name: "no map is invented where src has a list",
			dst: `{}`, src: `{"l":[{"i":"a"}]}`,
			path: []any{"l", 0, "i"}, want: `{}`},
		{name: "list element absent from src is cut out",
			dst: `{"l":["a","b","c"]}`, src: `{"l":["a"]}`,
			path: []any{"l", 1}, want: `{"l":["a","c"]}`},
		{name: "empty path does nothing",
			dst: `{"a":1}`, src: `{"a":2}`, path: nil, want: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst, src := doc(t, tt.dst), doc(t, tt.src)
			Copy(dst, src, tt.path)
			if want := doc(t, tt.want); !reflect.DeepEqual(dst, want) {
				t.Errorf("Copy = %v, want %v", dst, want)
			}
		})
	}
}

func TestCopyDoesNotShare(t *testing.T) {
	dst, src := doc(t, `{}`), doc(t, `{"spec":{"template":{"x":1}}}`)
	Copy(dst, src, []any{"spec", "template"})
	dst["spec"].(map[string]any)["template"].(map[string]any)["x"] = 2.0
	if got := src["spec"].(map[string]any)["template"].(map[string]any)["x"]; got != 1.0 {
		t.Errorf("editing the copy changed src: x = %v", got)
	}
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name        string
		tree        string
		path        []any
		want        string
		wantRemoved bool
	}{
		{name: "map entry", tree: `{"spec":{"replicas":1,"paused":true}}`, path: []any{"spec", "replicas"},
			want: `{"spec":{"paused":true}}`, wantRemoved: true},
		{name: "list element", tree: `{"l":["a","b","c"]}`, path: []any{"l", "1"},
			want: `{"l":["a","c"]}`, wantRemoved: true},
		{name: "element of a nested list", tree: `{"l":[["a","b"]]}`, path: []any{"l", 0, 0},
			want: `{"l":[["b"]]}`, wantRemoved: true},
		{name: "missing key", tree: `{"spec":{}}`, path: []any{"spec", "replicas"}, want: `{"spec":{}}`},
		{name: "index out of range", tree: `{"l":["a"]}`, path: []any{"l", 3}, want: `{"l":["a"]}`},
		{name: "empty path", tree: `{"a":1}`, path: nil, want: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := doc(t, tt.tree)
			if got := Remove(tree, tt.path); got != tt.wantRemoved {
				t.Errorf("Remove reported %v, want %v", got, tt.wantRemoved)
			}
			if want := doc(t, tt.want); !reflect.DeepEqual(tree, want) {
				t.Errorf("Remove = %v, want %v", tree, want)
			}
		})
	}
}

func TestEditsAllKeepIndexesValid(t *testing.T) {
	// Paths in the order jq finds them: cutting element 1 first would shift element 3 to 2.
	paths := [][]any{{"l", 1}, {"l", 3}, {"l", "1"}, {"l", 10}}
	tree := doc(t, `{"l":[0,1,2,3,4,5,6,7,8,9,10]}`)
	RemoveAll(tree, paths)
	if want := doc(t, `{"l":[0,2,4,5,6,7,8,9]}`); !reflect.DeepEqual(tree, want) {
		t.Errorf("RemoveAll = %v, want %v", tree, want)
	}

	dst := doc(t, `{"l":[{"n":"a"},{"n":"d1"},{"n":"d2"}]}`)
	src := doc(t, `{"l":[{"n":"a"}]}`)
	CopyAll(dst, src, [][]any{{"l", 1}, {"l", 2}})
	if want := doc(t, `{"l":[{"n":"a"}]}`); !reflect.DeepEqual(dst, want) {
		t.Errorf("CopyAll = %v, want %v", dst, want)
	}
}
