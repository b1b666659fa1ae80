package health

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func pvcHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := convert(obj, &pvc); err != nil {
		return nil, err
	}
	switch pvc.Status.Phase {
	case corev1.ClaimBound:
		return healthy(), nil
	case corev1.ClaimLost:
		return degraded(fmt.Sprintf("PersistentVolumeClaim lost its volume %q", pvc.Spec.VolumeName)), nil
	default:
		return progressing("Waiting for the claim to be bound"), nil
	}
}

func serviceHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var svc corev1.Service
	if err := convert(obj, &svc); err != nil {
		return nil, err
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
		return progressing("Waiting for the load balancer to get an address"), nil
	}
	return healthy(), nil
}

func namespaceHealth(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error) {
	var ns corev1.Namespace
	if err := convert(obj, &ns); err != nil {
		return nil, err
	}
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return progressing("Namespace is terminating"), nil
	}
	return healthy(), nil
}
