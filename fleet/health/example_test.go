package health_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/health"
)

// Three live objects of one Application: a Deployment mid-rollout, a ConfigMap, which has no
// health, and a crash-looping Pod. The Application's health is the worst of its resources'.
func ExampleAssess() {
	manifests := []string{`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 4}
spec: {replicas: 3}
status: {observedGeneration: 4, replicas: 3, updatedReplicas: 3, availableReplicas: 1}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: shop}
data: {LOG_LEVEL: info}
`, `
apiVersion: v1
kind: Pod
metadata: {name: worker-0, namespace: shop}
spec: {containers: [{name: worker, image: worker:1.2}]}
status:
  phase: Running
  containerStatuses:
  - {name: worker, ready: false, restartCount: 7, image: "worker:1.2", imageID: "", state: {waiting: {reason: CrashLoopBackOff}}}
`}
	var codes []navarchv1.HealthStatusCode
	for _, manifest := range manifests {
		data, err := yaml.YAMLToJSON([]byte(manifest))
		if err != nil {
			fmt.Println(err)
			return
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			fmt.Println(err)
			return
		}
		h := health.Assess(obj)
		if h == nil {
			fmt.Printf("%s/%s: no health\n", obj.GetKind(), obj.GetName())
			continue
		}
		fmt.Printf("%s/%s: %s: %s\n", obj.GetKind(), obj.GetName(), h.Status, h.Message)
		codes = append(codes, h.Status)
	}
	fmt.Println("Application:", health.Worst(codes...))
	// Output:
	// Deployment/web: Progressing: Waiting for rollout to finish: 1 of 3 updated replicas are available
	// ConfigMap/web-config: no health
	// Pod/worker-0: Degraded: container "worker": CrashLoopBackOff
	// Application: Degraded
}
