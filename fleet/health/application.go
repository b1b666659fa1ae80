package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// applicationHealth returns the health a Navarch or Argo CD Application computed for its own
// resources, so that an Application managing other Applications (app of apps) rolls their
// health up. Both kinds keep it in status.health with the same codes.
func applicationHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var status struct {
		Health navarchv1.HealthStatus `json:"health"`
	}
	if err := convert(obj, &status, "status"); err != nil {
		return nil, err
	}
	switch code := status.Health.Status; code {
	case "":
		return progressing("waiting for the Application's first health assessment"), nil
	case navarchv1.HealthHealthy, navarchv1.HealthSuspended, navarchv1.HealthProgressing,
		navarchv1.HealthMissing, navarchv1.HealthDegraded, navarchv1.HealthUnknown:
		return &navarchv1.HealthStatus{Status: code, Message: status.Health.Message}, nil
	default:
		message := fmt.Sprintf("Application reports unknown health %q", code)
		if status.Health.Message != "" {
			message += ": " + status.Health.Message
		}
		return &navarchv1.HealthStatus{Status: navarchv1.HealthUnknown, Message: message}, nil
	}
}
