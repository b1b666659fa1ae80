package health

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// hpaConditionsAnnotation is where autoscaling/v1, whose status has no conditions field, carries
// the conditions of the stored autoscaling/v2 object, as a JSON list.
const hpaConditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"

// hpaHealth judges a HorizontalPodAutoscaler of any version by its conditions. Only a Failed*
// reason is Degraded: ScalingActive=False with ScalingDisabled (a target scaled to zero) and
// AbleToScale=False while backing off are the autoscaler working as intended.
func hpaHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	conditions, err := statusConditions(obj)
	if err != nil {
		return nil, err
	}
	if raw, ok := obj.GetAnnotations()[hpaConditionsAnnotation]; ok && len(conditions) == 0 {
		if err := json.Unmarshal([]byte(raw), &conditions); err != nil {
			return nil, fmt.Errorf("read %s %q: annotation %s: %w", obj.GetKind(), obj.GetName(), hpaConditionsAnnotation, err)
		}
	}
	if len(conditions) == 0 {
		return progressing("Waiting for the autoscaler to report its conditions"), nil
	}
	for _, c := range conditions {
		if (c.Type == "AbleToScale" || c.Type == "ScalingActive") && c.Status == "False" && strings.HasPrefix(c.Reason, "Failed") {
			return degraded(explain(c.Message, c.Reason)), nil
		}
	}
	return healthy(), nil
}
