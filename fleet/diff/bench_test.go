package diff

import (
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// BenchmarkCompare measures one comparison of a live Deployment with its predicted state under
// the three kinds of ignore rule, the work done per object on every reconcile.
func BenchmarkCompare(b *testing.B) {
	ig := compile(b, navarchv1.ResourceIgnoreDifferences{
		Group: "apps", Kind: "Deployment",
		JSONPointers:          []string{"/spec/replicas"},
		JQPathExpressions:     []string{`.spec.template.spec.containers[] | select(.name == "web") | .image`},
		ManagedFieldsManagers: []string{"kube-controller-manager"},
	})
	predicted := deployment(b, nil)
	live := withManagedFields(b, withNoise(b, deployment(b, replace("replicas: 2", "replicas: 5"))))
	b.ReportAllocs()
	for b.Loop() {
		if res := Compare(predicted, live, ig); !res.Equal {
			b.Fatalf("Compare = %+v, want equal", res)
		}
	}
}

// BenchmarkHash measures the cache key of one Deployment.
func BenchmarkHash(b *testing.B) {
	live := withNoise(b, deployment(b, nil))
	b.ReportAllocs()
	for b.Loop() {
		Hash(live)
	}
}
