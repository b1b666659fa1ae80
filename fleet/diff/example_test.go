package diff_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/diff"
)

func deploymentObject(replicas int64, image string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "web", "image": image}},
			}},
		},
	}}
}

// An HPA scales the Deployment, so the Application ignores its replica count; the image tag
// that differs from Git is reported.
func ExampleCompare() {
	ig, err := diff.CompileIgnore([]navarchv1.ResourceIgnoreDifferences{{
		Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"},
	}})
	if err != nil {
		panic(err)
	}
	predicted := deploymentObject(2, "web:1.1") // the dry run of what Git asks for
	live := deploymentObject(7, "web:1.0")
	live.SetResourceVersion("4711") // server-set noise is never a difference

	res := diff.Compare(predicted, live, ig)
	fmt.Println(res.Equal, res.Paths)

	live = deploymentObject(7, "web:1.1")
	fmt.Println(diff.Compare(predicted, live, ig).Equal)
	// Output:
	// false [/spec/template/spec/containers/0/image]
	// true
}
