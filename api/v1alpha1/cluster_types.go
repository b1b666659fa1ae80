package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InClusterName is the destination name of the management cluster itself, reachable without a
// Cluster object so app-of-apps works out of the box.
const InClusterName = "in-cluster"

// Cluster registers a workload cluster. Cluster generators select Clusters by their labels;
// Applications name them in spec.destination.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ncl,categories=navarch
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.serverVersion`
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.spec.server`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says how to reach the cluster.
	// +required
	Spec ClusterSpec `json:"spec"`

	// status is the result of the last probe.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterList is a list of Clusters.
//
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

// ClusterSpec says how to reach a cluster: through a kubeconfig held in a Secret, or through
// the controller's own in-cluster configuration.
//
// +kubebuilder:validation:XValidation:rule="has(self.kubeconfigSecretRef) != (has(self.inCluster) && self.inCluster)",message="exactly one of kubeconfigSecretRef or inCluster must be set"
type ClusterSpec struct {
	// server is the cluster's API server URL, as Applications may name it in
	// spec.destination.server and cluster generators emit it as `server`.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	Server string `json:"server,omitempty"`

	// kubeconfigSecretRef is a Secret key holding a kubeconfig for the cluster.
	// +optional
	KubeconfigSecretRef *KubeconfigSecretRef `json:"kubeconfigSecretRef,omitempty"`

	// inCluster reaches the cluster the controller runs in.
	// +optional
	InCluster bool `json:"inCluster,omitempty"`
}

// KubeconfigSecretRef names the Secret key holding a kubeconfig.
type KubeconfigSecretRef struct {
	// namespace of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key in the Secret's data; default `value`.
	// +optional
	// +kubebuilder:default=value
	Key string `json:"key,omitempty"`
}

// ClusterStatus is the result of the last probe of a cluster.
type ClusterStatus struct {
	// observedGeneration is the generation last probed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready, with reasons such as Unreachable, Unauthorized, InvalidKubeconfig.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// serverVersion is the cluster's Kubernetes version, e.g. `v1.37.2`.
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`
	// lastProbeTime is when the probe that last changed this status ran. A probe that finds
	// the cluster as the status describes it writes nothing, so an idle fleet costs no writes;
	// the controller's metrics navarch_cluster_probes_total and
	// navarch_cluster_last_probe_timestamp_seconds count every probe.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
}
