package health

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// assessFunc judges one kind. It returns nil for an object without health, and an error only
// when the object cannot be read, which Assess reports as Unknown.
type assessFunc func(obj *unstructured.Unstructured) (*navarchv1.HealthStatus, error)

// assessors holds the kinds with rules of their own. The legacy extensions group shares the
// rules of the group that replaced it.
var assessors = map[schema.GroupKind]assessFunc{
	{Group: "apps", Kind: "Deployment"}:                               deploymentHealth,
	{Group: "extensions", Kind: "Deployment"}:                         deploymentHealth,
	{Group: "apps", Kind: "StatefulSet"}:                              statefulSetHealth,
	{Group: "apps", Kind: "DaemonSet"}:                                daemonSetHealth,
	{Group: "extensions", Kind: "DaemonSet"}:                          daemonSetHealth,
	{Group: "apps", Kind: "ReplicaSet"}:                               replicaSetHealth,
	{Group: "extensions", Kind: "ReplicaSet"}:                         replicaSetHealth,
	{Group: "", Kind: "Pod"}:                                          podHealth,
	{Group: "", Kind: "PersistentVolumeClaim"}:                        pvcHealth,
	{Group: "", Kind: "Service"}:                                      serviceHealth,
	{Group: "", Kind: "Namespace"}:                                    namespaceHealth,
	{Group: "batch", Kind: "Job"}:                                     jobHealth,
	{Group: "batch", Kind: "CronJob"}:                                 cronJobHealth,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                     ingressHealth,
	{Group: "extensions", Kind: "Ingress"}:                            ingressHealth,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: crdHealth,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:             apiServiceHealth,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:           hpaHealth,
	{Group: navarchv1.GroupVersion.Group, Kind: "Application"}:        applicationHealth,
	{Group: "argoproj.io", Kind: "Application"}:                       applicationHealth,
}

// withoutHealth holds kinds that are configuration, not something that runs: they are never
// healthy or unhealthy, whatever their status says.
var withoutHealth = map[schema.GroupKind]bool{
	{Group: "", Kind: "ConfigMap"}:                                   true,
	{Group: "", Kind: "Secret"}:                                      true,
	{Group: "", Kind: "ServiceAccount"}:                              true,
	{Group: "", Kind: "LimitRange"}:                                  true,
	{Group: "", Kind: "ResourceQuota"}:                               true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:              true,
}

// Assess returns the health of obj, a live object as read from a cluster, or nil when its kind
// has no notion of health (ConfigMap, Secret, RBAC, and any other kind without a status), which
// callers count as healthy. A nil obj, an object that does not exist, is Missing. An object that
// cannot be read as its kind is Unknown, with the reason in the message. Integers in obj must be
// int64, as client-go's decoders and Unstructured.UnmarshalJSON produce them; kstatus, which judges
// the kinds without rules of their own, reports float64 numbers as an error (Unknown).
func Assess(obj *unstructured.Unstructured) *navarchv1.HealthStatus {
	if obj == nil {
		return &navarchv1.HealthStatus{Status: navarchv1.HealthMissing, Message: "object does not exist"}
	}
	// Whatever the kind, an object on its way out is neither healthy nor broken: it is going.
	if ts, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "deletionTimestamp"); found && ts != nil {
		return progressing("being deleted")
	}
	gk := obj.GroupVersionKind().GroupKind()
	if withoutHealth[gk] {
		return nil
	}
	assess, ok := assessors[gk]
	if !ok {
		assess = genericHealth
	}
	health, err := assess(obj)
	if err != nil {
		return &navarchv1.HealthStatus{Status: navarchv1.HealthUnknown, Message: err.Error()}
	}
	return health
}

func healthy() *navarchv1.HealthStatus {
	return &navarchv1.HealthStatus{Status: navarchv1.HealthHealthy}
}

func suspended(message string) *navarchv1.HealthStatus {
	return &navarchv1.HealthStatus{Status: navarchv1.HealthSuspended, Message: message}
}

func progressing(message string) *navarchv1.HealthStatus {
	return &navarchv1.HealthStatus{Status: navarchv1.HealthProgressing, Message: message}
}

func degraded(message string) *navarchv1.HealthStatus {
	return &navarchv1.HealthStatus{Status: navarchv1.HealthDegraded, Message: message}
}

// convert reads obj, or the part of it at path, into the typed value into.
func convert(obj *unstructured.Unstructured, into any, path ...string) error {
	content := obj.Object
	if len(path) > 0 {
		field, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
		if err != nil {
			return fmt.Errorf("read %s %q: %w", obj.GetKind(), obj.GetName(), err)
		}
		if !found || field == nil {
			return nil
		}
		m, ok := field.(map[string]any)
		if !ok {
			return fmt.Errorf("read %s %q: %s is a %T, not an object", obj.GetKind(), obj.GetName(), strings.Join(path, "."), field)
		}
		content = m
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, into); err != nil {
		return fmt.Errorf("read %s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// condition is the shape every Kubernetes condition shares, for kinds whose Go types this
// module does not import or whose versions differ elsewhere.
type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// statusConditions returns obj's status.conditions.
func statusConditions(obj *unstructured.Unstructured) ([]condition, error) {
	var status struct {
		Conditions []condition `json:"conditions"`
	}
	if err := convert(obj, &status, "status"); err != nil {
		return nil, err
	}
	return status.Conditions, nil
}

// findCondition returns the condition of type t.
func findCondition(conditions []condition, t string) (condition, bool) {
	for _, c := range conditions {
		if c.Type == t {
			return c, true
		}
	}
	return condition{}, false
}

// explain returns the first of messages that is not empty.
func explain(messages ...string) string {
	for _, m := range messages {
		if m != "" {
			return m
		}
	}
	return ""
}
