package health

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// crdHealth checks NamesAccepted before Established: a CRD whose new names conflict stays
// Established under its old names, and that rejected change is what the user needs to see.
func crdHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	// Only the status is read: a CRD's schema can be large and says nothing about health.
	var status apiextensionsv1.CustomResourceDefinitionStatus
	if err := convert(obj, &status, "status"); err != nil {
		return nil, err
	}
	var established bool
	for _, c := range status.Conditions {
		switch {
		case c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse:
			return degraded(explain(c.Message, c.Reason, "CustomResourceDefinition names are not accepted")), nil
		case c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue:
			established = true
		}
	}
	if established {
		return healthy(), nil
	}
	return progressing("Waiting for the CustomResourceDefinition to be established"), nil
}

// apiServiceHealth reads conditions without the kube-aggregator types, which this module does
// not depend on. An unavailable APIService is Progressing rather than Degraded: its backing
// Service usually becomes available a little after it is applied.
func apiServiceHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	conditions, err := statusConditions(obj)
	if err != nil {
		return nil, err
	}
	available, found := findCondition(conditions, "Available")
	switch {
	case !found:
		return progressing("Waiting for the APIService to become available"), nil
	case available.Status == "True":
		return healthy(), nil
	default:
		return progressing(explain(available.Message, available.Reason, "APIService is not available")), nil
	}
}
