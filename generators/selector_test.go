package generators

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestSelector(t *testing.T) {
	clusters := clusterList{clusters: []navarchv1.Cluster{
		cluster("a", "https://a.example.com", map[string]string{"env": "prod", "tier": "gold"}),
		cluster("b", "https://b.example.com", map[string]string{"env": "staging"}),
		cluster("c", "https://c.example.com", map[string]string{"env": "prod"}),
	}}
	names := func(sets []map[string]any, goTemplate bool) []string {
		var out []string
		for _, s := range sets {
			v, _ := lookupParam(s, "name", goTemplate)
			out = append(out, v.(string))
		}
		return out
	}
	expr := func(key string, op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	tests := []struct {
		name       string
		goTemplate bool
		selector   *metav1.LabelSelector
		want       []string
		wantErr    string
	}{
		{name: "nil selector keeps everything", want: []string{"a", "b", "c"}},
		{name: "empty selector keeps everything", selector: &metav1.LabelSelector{}, want: []string{"a", "b", "c"}},
		{
			name:     "matchLabels on flat keys, values need not be label syntax",
			selector: &metav1.LabelSelector{MatchLabels: map[string]string{"server": "https://c.example.com"}},
			want:     []string{"c"},
		},
		{name: "In", selector: expr("metadata.labels.env", metav1.LabelSelectorOpIn, "prod"), want: []string{"a", "c"}},
		{name: "NotIn matches missing keys", selector: expr("metadata.labels.tier", metav1.LabelSelectorOpNotIn, "gold"), want: []string{"b", "c"}},
		{name: "Exists", selector: expr("metadata.labels.tier", metav1.LabelSelectorOpExists), want: []string{"a"}},
		{name: "DoesNotExist", selector: expr("metadata.labels.tier", metav1.LabelSelectorOpDoesNotExist), want: []string{"b", "c"}},
		{
			name:       "goTemplate: dotted keys resolve in nested maps",
			goTemplate: true,
			selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"metadata.labels.env": "prod"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "values.size", Operator: metav1.LabelSelectorOpIn, Values: []string{"a-large"}}},
			},
			want: []string{"a"},
		},
		{
			name:     "In without values",
			selector: expr("x", metav1.LabelSelectorOpIn),
			wantErr:  "spec.generators[0].selector.matchExpressions[0].values: must not be empty for operator In",
		},
		{
			name:     "Exists with values",
			selector: expr("x", metav1.LabelSelectorOpExists, "y"),
			wantErr:  "spec.generators[0].selector.matchExpressions[0].values: must be empty for operator Exists",
		},
		{
			name:     "empty key",
			selector: expr("", metav1.LabelSelectorOpExists),
			wantErr:  "spec.generators[0].selector.matchExpressions[0].key: must not be empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values := map[string]string{"size": "{{name}}-large"}
			if tt.goTemplate {
				values["size"] = "{{.name}}-large"
			}
			got, err := generate(t, tt.goTemplate, Inputs{Clusters: clusters}, navarchv1.ApplicationSetGenerator{
				Clusters: &navarchv1.ClusterGenerator{Values: values},
				Selector: tt.selector,
			})
			if !checkErr(t, err, tt.wantErr) {
				return
			}
			if g := names(got, tt.goTemplate); !equalStrings(g, tt.want) {
				t.Errorf("selected %v, want %v", g, tt.want)
			}
		})
	}
}

func TestSelectorOnGitSegments(t *testing.T) {
	for _, goTemplate := range []bool{false, true} {
		key := "path[1]"
		if goTemplate {
			key = "path.segments.1"
		}
		got, err := generate(t, goTemplate, Inputs{Git: deployRepo()}, navarchv1.ApplicationSetGenerator{
			Git:      gitDirs(repo, include("envs/*/*")),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{key: "prod"}},
		})
		checkErr(t, err, "")
		if len(got) != 1 {
			t.Errorf("goTemplate=%v: selected %d sets, want 1 (envs/prod/api)", goTemplate, len(got))
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
