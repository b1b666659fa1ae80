package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// ingressHealth reads status.loadBalancer.ingress directly: its shape is the same in
// networking.k8s.io/v1 and the older extensions and v1beta1 versions, whose Go types differ.
func ingressHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var status struct {
		LoadBalancer struct {
			Ingress []map[string]any `json:"ingress"`
		} `json:"loadBalancer"`
	}
	if err := convert(obj, &status, "status"); err != nil {
		return nil, err
	}
	if len(status.LoadBalancer.Ingress) == 0 {
		return progressing("Waiting for the ingress controller to publish an address"), nil
	}
	return healthy(), nil
}
