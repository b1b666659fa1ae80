package generators

import (
	"testing"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestMerge(t *testing.T) {
	clusters := clusterList{clusters: []navarchv1.Cluster{
		cluster("a", "https://a", map[string]string{"env": "prod"}),
		cluster("b", "https://b", map[string]string{"env": "staging"}),
		cluster("c", "https://c", map[string]string{"env": "prod"}),
	}}
	tests := []struct {
		name       string
		goTemplate bool
		merge      navarchv1.MergeGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name: "later generators override base sets with the same merge key; unmatched sets are dropped",
			merge: navarchv1.MergeGenerator{
				MergeKeys: []string{"server"},
				Generators: []navarchv1.NestedGenerator{
					{Clusters: &navarchv1.ClusterGenerator{Values: map[string]string{"kafka": "true", "redis": "false"}}},
					{List: listGen(t,
						map[string]any{"server": "https://c", "values.redis": "true"},
						map[string]any{"server": "https://elsewhere", "values.redis": "true"},
					)},
					{List: listGen(t, map[string]any{"server": "https://a", "values.kafka": "false"})},
				},
			},
			want: []map[string]any{
				{"name": "a", "nameNormalized": "a", "server": "https://a", "project": "", "metadata.labels.env": "prod", "values.kafka": "false", "values.redis": "false"},
				{"name": "b", "nameNormalized": "b", "server": "https://b", "project": "", "metadata.labels.env": "staging", "values.kafka": "true", "values.redis": "false"},
				{"name": "c", "nameNormalized": "c", "server": "https://c", "project": "", "metadata.labels.env": "prod", "values.kafka": "true", "values.redis": "true"},
			},
		},
		{
			name: "several merge keys",
			merge: navarchv1.MergeGenerator{
				MergeKeys: []string{"app", "env", "app"},
				Generators: []navarchv1.NestedGenerator{
					{List: listGen(t,
						map[string]any{"app": "api", "env": "prod", "replicas": "2"},
						map[string]any{"app": "api", "env": "dev", "replicas": "1"},
					)},
					{List: listGen(t, map[string]any{"app": "api", "env": "prod", "replicas": "5"})},
				},
			},
			want: []map[string]any{
				{"app": "api", "env": "prod", "replicas": "5"},
				{"app": "api", "env": "dev", "replicas": "1"},
			},
		},
		{
			name:       "goTemplate: nested maps merge, dotted merge keys reach into them",
			goTemplate: true,
			merge: navarchv1.MergeGenerator{
				MergeKeys: []string{"metadata.labels.env"},
				Generators: []navarchv1.NestedGenerator{
					{List: listGen(t, map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "prod"}}, "values": map[string]any{"a": "1", "b": "1"}})},
					{List: listGen(t, map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "prod"}}, "values": map[string]any{"b": "2"}})},
				},
			},
			want: []map[string]any{{"metadata": map[string]any{"labels": map[string]any{"env": "prod"}}, "values": map[string]any{"a": "1", "b": "2"}}},
		},
		{
			name: "a set without a merge key is an error",
			merge: navarchv1.MergeGenerator{
				MergeKeys: []string{"server"},
				Generators: []navarchv1.NestedGenerator{
					{Clusters: &navarchv1.ClusterGenerator{}},
					{List: listGen(t, map[string]any{"server": "https://a"}, map[string]any{"name": "b"})},
				},
			},
			wantErr: `spec.generators[0].merge.generators[1]: parameter set 1: merge key "server" is not a parameter`,
		},
		{
			name: "duplicate merge key values in one generator are an error",
			merge: navarchv1.MergeGenerator{
				MergeKeys: []string{"metadata.labels.env"},
				Generators: []navarchv1.NestedGenerator{
					{Clusters: &navarchv1.ClusterGenerator{}},
					{List: listGen(t, map[string]any{"x": "1"})},
				},
			},
			wantErr: `spec.generators[0].merge.generators[0]: parameter sets 0 and 2 have the same mergeKeys values ["prod"]`,
		},
		{
			name:    "no merge keys",
			merge:   navarchv1.MergeGenerator{Generators: []navarchv1.NestedGenerator{{List: listGen(t)}}},
			wantErr: "spec.generators[0].merge.mergeKeys: must have at least one key",
		},
		{
			name: "a merge inside a matrix",
			merge: navarchv1.MergeGenerator{
				MergeKeys: []string{"env"},
				Generators: []navarchv1.NestedGenerator{
					nestedMatrix(t,
						navarchv1.NestedGenerator{List: listGen(t, map[string]any{"env": "prod"}, map[string]any{"env": "dev"})},
						navarchv1.NestedGenerator{List: listGen(t, map[string]any{"size": "s"})},
					),
					{List: listGen(t, map[string]any{"env": "prod", "size": "xl"})},
				},
			},
			want: []map[string]any{{"env": "prod", "size": "xl"}, {"env": "dev", "size": "s"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.merge
			got, err := generate(t, tt.goTemplate, Inputs{Clusters: clusters}, navarchv1.ApplicationSetGenerator{Merge: &m})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}

func TestMergeRequeueAfter(t *testing.T) {
	g := Merge{Field: "m", Spec: &navarchv1.MergeGenerator{
		MergeKeys: []string{"x"},
		Generators: []navarchv1.NestedGenerator{
			{Clusters: &navarchv1.ClusterGenerator{}},
			nestedMatrix(t,
				navarchv1.NestedGenerator{List: listGen(t)},
				navarchv1.NestedGenerator{Git: &navarchv1.GitGenerator{RepoURL: repo, Files: []navarchv1.GitPathItem{include("*")}, RequeueAfterSeconds: ptr[int64](60)}},
			),
			{Git: gitDirs(repo, include("*"))},
		},
	}}
	if got := g.RequeueAfter(); got != time.Minute {
		t.Errorf("RequeueAfter = %v, want 1m (the nested git generator's)", got)
	}
}
