// Package v1alpha1 holds navarch's API types in the group navarch.io: ApplicationSet (one
// template fanned out by generators), Application (one source rendered onto one cluster) and
// Cluster (a registered workload cluster). Field names follow Argo CD's so existing YAML ports by
// changing apiVersion.
//
// +kubebuilder:object:generate=true
// +groupName=navarch.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "navarch.io", Version: "v1alpha1"}

var (
	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&ApplicationSet{}, &ApplicationSetList{},
		&Application{}, &ApplicationList{},
		&Cluster{}, &ClusterList{},
		&Project{}, &ProjectList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
