package generators

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestList(t *testing.T) {
	tests := []struct {
		name       string
		goTemplate bool
		list       *navarchv1.ListGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name: "elements become flat string parameters, values reachable as values.x",
			list: listGen(t,
				map[string]any{"cluster": "engineering-dev", "url": "https://1.2.3.4"},
				map[string]any{"cluster": "engineering-prod", "url": "https://2.4.6.8", "values": map[string]any{"replicas": 3, "env": "prod"}},
			),
			want: []map[string]any{
				{"cluster": "engineering-dev", "url": "https://1.2.3.4"},
				{"cluster": "engineering-prod", "url": "https://2.4.6.8", "values.replicas": "3", "values.env": "prod"},
			},
		},
		{
			name: "fasttemplate flattens nested objects and lists, formats scalars",
			list: listGen(t, map[string]any{
				"a":     map[string]any{"b": map[string]any{"c": "deep"}},
				"list":  []any{"x", map[string]any{"y": true}},
				"big":   1000000,
				"float": 1.5,
				"null":  nil,
				"empty": map[string]any{},
			}),
			want: []map[string]any{{
				"a.b.c": "deep", "list.0": "x", "list.1.y": "true", "big": "1000000", "float": "1.5", "null": "",
			}},
		},
		{
			name:       "goTemplate keeps elements as decoded",
			goTemplate: true,
			list: listGen(t,
				map[string]any{"cluster": "dev", "values": map[string]any{"replicas": 3}},
			),
			want: []map[string]any{{"cluster": "dev", "values": map[string]any{"replicas": float64(3)}}},
		},
		{
			name: "elementsYaml follows elements, appended as decoded",
			list: &navarchv1.ListGenerator{
				Elements:     elements(t, map[string]any{"cluster": "a"}),
				ElementsYaml: "- cluster: b\n  values:\n    tier: gold\n- cluster: c\n",
			},
			want: []map[string]any{{"cluster": "a"}, {"cluster": "b", "values": map[string]any{"tier": "gold"}}, {"cluster": "c"}},
		},
		{
			name:       "elementsYaml in goTemplate mode",
			goTemplate: true,
			list:       &navarchv1.ListGenerator{ElementsYaml: `[{"cluster": "b", "tags": ["x"]}]`},
			want:       []map[string]any{{"cluster": "b", "tags": []any{"x"}}},
		},
		{
			name: "empty elementsYaml list gives nothing",
			list: &navarchv1.ListGenerator{ElementsYaml: "[]"},
			want: nil,
		},
		{
			name:    "elementsYaml of scalars is an error naming the field",
			list:    &navarchv1.ListGenerator{ElementsYaml: "- a\n- b\n"},
			wantErr: "spec.generators[0].list.elementsYaml: item 0: must be an object, not a string",
		},
		{
			name:    "malformed elementsYaml",
			list:    &navarchv1.ListGenerator{ElementsYaml: "- a: [\n"},
			wantErr: "spec.generators[0].list.elementsYaml: ",
		},
		{
			name:    "an element that is not an object",
			list:    &navarchv1.ListGenerator{Elements: []apiextensionsv1.JSON{{Raw: []byte(`"x"`)}}},
			wantErr: "spec.generators[0].list.elements[0]: must be an object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := generate(t, tt.goTemplate, Inputs{}, navarchv1.ApplicationSetGenerator{List: tt.list})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}
