package generators

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func testClusters() clusterList {
	prodEU := cluster("prod-eu", "https://prod-eu.example.com", map[string]string{"env": "prod", "region": "eu"})
	prodEU.Annotations = map[string]string{
		"team":                "platform",
		lastAppliedAnnotation: `{"a":"huge"}`,
	}
	return clusterList{clusters: []navarchv1.Cluster{
		cluster("staging", "https://staging.example.com", map[string]string{"env": "staging", "region": "eu"}),
		cluster("Prod_US", "https://prod-us.example.com", map[string]string{"env": "prod", "region": "us"}),
		prodEU,
	}}
}

func TestClusters(t *testing.T) {
	tests := []struct {
		name       string
		goTemplate bool
		lister     ClusterLister
		spec       navarchv1.ClusterGenerator
		want       []map[string]any
		wantErr    string
	}{
		{
			name:   "matchLabels, in name order, annotations and labels flattened",
			lister: testClusters(),
			spec:   navarchv1.ClusterGenerator{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			want: []map[string]any{
				{
					"name": "Prod_US", "nameNormalized": "prod-us", "server": "https://prod-us.example.com", "project": "",
					"metadata.labels.env": "prod", "metadata.labels.region": "us",
				},
				{
					"name": "prod-eu", "nameNormalized": "prod-eu", "server": "https://prod-eu.example.com", "project": "",
					"metadata.labels.env": "prod", "metadata.labels.region": "eu", "metadata.annotations.team": "platform",
				},
			},
		},
		{
			name:   "matchExpressions",
			lister: testClusters(),
			spec: navarchv1.ClusterGenerator{Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu"}},
				{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"staging"}},
			}}},
			want: []map[string]any{{
				"name": "prod-eu", "nameNormalized": "prod-eu", "server": "https://prod-eu.example.com", "project": "",
				"metadata.labels.env": "prod", "metadata.labels.region": "eu", "metadata.annotations.team": "platform",
			}},
		},
		{
			name:   "values are templated with the cluster's own parameters",
			lister: testClusters(),
			spec: navarchv1.ClusterGenerator{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}},
				Values:   map[string]string{"ns": "apps-{{metadata.labels.env}}", "plain": "x", "self": "{{name}}/{{unknown}}"},
			},
			want: []map[string]any{{
				"name": "Prod_US", "nameNormalized": "prod-us", "server": "https://prod-us.example.com", "project": "",
				"metadata.labels.env": "prod", "metadata.labels.region": "us",
				"values.ns": "apps-prod", "values.plain": "x", "values.self": "Prod_US/{{unknown}}",
			}},
		},
		{
			name:       "goTemplate nests metadata and values",
			goTemplate: true,
			lister:     testClusters(),
			spec: navarchv1.ClusterGenerator{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod", "region": "eu"}},
				Values:   map[string]string{"ns": "apps-{{.metadata.labels.region}}"},
			},
			want: []map[string]any{{
				"name": "prod-eu", "nameNormalized": "prod-eu", "server": "https://prod-eu.example.com", "project": "",
				"metadata": map[string]any{
					"labels":      map[string]any{"env": "prod", "region": "eu"},
					"annotations": map[string]any{"team": "platform"},
				},
				"values": map[string]any{"ns": "apps-eu"},
			}},
		},
		{
			name: "an in-cluster Cluster without a server gets the in-cluster URL",
			lister: clusterList{clusters: []navarchv1.Cluster{{
				ObjectMeta: metav1.ObjectMeta{Name: "in-cluster"},
				Spec:       navarchv1.ClusterSpec{InCluster: true},
			}}},
			want: []map[string]any{{"name": "in-cluster", "nameNormalized": "in-cluster", "server": "https://kubernetes.default.svc", "project": ""}},
		},
		{
			name:   "no cluster matches",
			lister: testClusters(),
			spec:   navarchv1.ClusterGenerator{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}},
			want:   nil,
		},
		{
			name:    "a failing list is an error, not an empty result",
			lister:  clusterList{err: errors.New("cache not synced")},
			wantErr: "spec.generators[0].clusters: list clusters: cache not synced",
		},
		{
			name:    "no lister",
			wantErr: "spec.generators[0].clusters: no cluster lister configured",
		},
		{
			name:   "invalid selector",
			lister: testClusters(),
			spec: navarchv1.ClusterGenerator{Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "env", Operator: "Equals", Values: []string{"x"}},
			}}},
			wantErr: `spec.generators[0].clusters.selector.matchExpressions[0].operator: "Equals" is not one of`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			got, err := generate(t, tt.goTemplate, Inputs{Clusters: tt.lister}, navarchv1.ApplicationSetGenerator{Clusters: &spec})
			if checkErr(t, err, tt.wantErr) {
				checkParams(t, got, tt.want)
			}
		})
	}
}
