package jsontree

import (
	"reflect"
	"strings"
	"testing"
)

func TestJQPaths(t *testing.T) {
	// Unstructured objects hold int64; the expression must still compare them.
	deploy := map[string]any{"spec": map[string]any{
		"replicas": int64(3),
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "sidecar", "image": "envoy:1"},
			map[string]any{"name": "web", "image": "web:1"},
		}}},
	}}
	tests := []struct {
		name  string
		expr  string
		trees []any
		want  [][]any
		// wantCount, when set, checks only how many paths were found.
		wantCount int
	}{
		{name: "field", expr: ".spec.replicas", trees: []any{deploy},
			want: [][]any{{"spec", "replicas"}}},
		{name: "select by name", expr: `.spec.template.spec.containers[] | select(.name == "web") | .image`,
			trees: []any{deploy}, want: [][]any{{"spec", "template", "spec", "containers", 1, "image"}}},
		{name: "int64 compared as a number", expr: `select(.spec.replicas > 2) | .spec.replicas`,
			trees: []any{deploy}, want: [][]any{{"spec", "replicas"}}},
		{name: "every tree in turn", expr: ".spec.replicas", trees: []any{deploy, map[string]any{}},
			want: [][]any{{"spec", "replicas"}, {"spec", "replicas"}}},
		{name: "iterating a missing field finds nothing", expr: ".spec.volumes[].name",
			trees: []any{deploy}, want: nil},
		{name: "output is bounded", expr: "repeat(.)", trees: []any{map[string]any{}}, wantCount: maxPaths},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := CompileJQ(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			got := q.Paths(tt.trees...)
			if tt.wantCount > 0 {
				if len(got) != tt.wantCount {
					t.Errorf("got %d paths, want %d", len(got), tt.wantCount)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Paths = %v, want %v", got, tt.want)
			}
		})
	}
	if got := deploy["spec"].(map[string]any)["replicas"]; got != int64(3) {
		t.Errorf("Paths changed its input: replicas = %T %v", got, got)
	}
}

func TestCompileJQErrors(t *testing.T) {
	for _, expr := range []string{".spec[[", "undefined_function(1)"} {
		_, err := CompileJQ(expr)
		if err == nil || !strings.Contains(err.Error(), expr) {
			t.Errorf("CompileJQ(%q) error = %v, want one quoting the expression", expr, err)
		}
	}
}
