package health

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// genericHealth judges any other kind with kstatus. An object without a status, or with an
// empty one, has no health: most such kinds (Endpoints, StorageClasses, custom resources whose
// controller reports nothing) are configuration, and calling them Healthy would only be noise.
func genericHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	status, found := obj.Object["status"]
	if !found || status == nil {
		return nil, nil
	}
	if m, ok := status.(map[string]any); ok && len(m) == 0 {
		return nil, nil
	}
	result, err := kstatus.Compute(obj)
	if err != nil {
		return nil, err
	}
	var code navarchv1.HealthStatusCode
	switch result.Status {
	case kstatus.CurrentStatus:
		return healthy(), nil
	case kstatus.InProgressStatus, kstatus.TerminatingStatus:
		code = navarchv1.HealthProgressing
	case kstatus.FailedStatus:
		code = navarchv1.HealthDegraded
	case kstatus.NotFoundStatus:
		code = navarchv1.HealthMissing
	default:
		code = navarchv1.HealthUnknown
	}
	return &navarchv1.HealthStatus{Status: code, Message: result.Message}, nil
}
