package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultProject is the Project of an Application whose spec.project is empty. The controller
// creates it, allowing everything, when it is missing.
const DefaultProject = "default"

// Project says what the Applications that name it may deploy and where: which repositories
// they render, which clusters and namespaces they sync to, which kinds they may create, from
// which namespaces they may be declared, and when they may sync. Projects live in the
// controller's namespace (navarch-system by default); field names and meanings are Argo CD's
// AppProject's.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=proj,categories=navarch
// +kubebuilder:printcolumn:name="Description",type=string,JSONPath=`.spec.description`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Project struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the Project allows.
	// +required
	Spec ProjectSpec `json:"spec"`
}

// ProjectList is a list of Projects.
//
// +kubebuilder:object:root=true
type ProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Project `json:"items"`
}

// ProjectSpec is what a Project allows. Patterns are globs (`*`, `?`, `[...]`, and `**` across
// `/` for repositories); a pattern starting with `!` denies what it matches, and a deny wins
// over any allow. Empty lists allow nothing, except the namespace-scoped kinds: with neither
// namespaceResourceWhitelist nor namespaceResourceBlacklist every namespaced kind is allowed.
type ProjectSpec struct {
	// description says what the Project is for.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Description string `json:"description,omitempty"`

	// sourceRepos are the repository URLs (Git, Helm or OCI) the Applications may render.
	// `*` allows any.
	// +optional
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	SourceRepos []string `json:"sourceRepos,omitempty"`

	// destinations are the clusters and namespaces the Applications may sync to, and in which
	// every namespaced object they render must land.
	// +optional
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	Destinations []ProjectDestination `json:"destinations,omitempty"`

	// clusterResourceWhitelist are the cluster-scoped kinds the Applications may create.
	// Empty allows none.
	// +optional
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	ClusterResourceWhitelist []GroupKind `json:"clusterResourceWhitelist,omitempty"`

	// clusterResourceBlacklist are cluster-scoped kinds refused even when whitelisted.
	// +optional
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	ClusterResourceBlacklist []GroupKind `json:"clusterResourceBlacklist,omitempty"`

	// namespaceResourceWhitelist, when set, are the only namespaced kinds the Applications
	// may create.
	// +optional
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	NamespaceResourceWhitelist []GroupKind `json:"namespaceResourceWhitelist,omitempty"`

	// namespaceResourceBlacklist are namespaced kinds refused.
	// +optional
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	NamespaceResourceBlacklist []GroupKind `json:"namespaceResourceBlacklist,omitempty"`

	// sourceNamespaces are the namespaces (globs) in which Applications and ApplicationSets
	// may name this Project. Those in the controller's own namespace may always.
	// +optional
	// +kubebuilder:validation:MaxItems=200
	// +listType=atomic
	SourceNamespaces []string `json:"sourceNamespaces,omitempty"`

	// syncWindows limit when the Applications sync.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	SyncWindows []SyncWindow `json:"syncWindows,omitempty"`
}

// ProjectDestination is a cluster, by name or API server URL, and a namespace, each a glob
// that `!` negates.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) || has(self.server)",message="one of name and server must be set"
type ProjectDestination struct {
	// name of the Cluster (in-cluster for the management cluster).
	// +optional
	Name string `json:"name,omitempty"`
	// server is the Cluster's API server URL.
	// +optional
	Server string `json:"server,omitempty"`
	// namespace on that cluster. Cluster-scoped objects are checked against the cluster
	// alone.
	// +required
	Namespace string `json:"namespace"`
}

// GroupKind names kinds by API group and kind, each a glob; the core group is "".
type GroupKind struct {
	// group is the API group, "" for the core group.
	// +optional
	Group string `json:"group"`
	// kind is the kind.
	// +required
	Kind string `json:"kind"`
}

// SyncWindowKind says whether a window allows or denies syncs while it is open.
// +kubebuilder:validation:Enum=allow;deny
type SyncWindowKind string

// The kinds of sync window.
const (
	SyncWindowAllow SyncWindowKind = "allow"
	SyncWindowDeny  SyncWindowKind = "deny"
)

// SyncWindow is a recurring period in which the matching Applications may (allow) or may not
// (deny) sync. A window matches an Application whose name matches one of applications, whose
// destination namespace matches one of namespaces, or whose destination cluster (name or
// server) matches one of clusters. While a deny window is open no sync of a matching
// Application runs; when allow windows match, automated syncs run only while one is open.
// manualSync lets manual syncs through a window that would stop them.
type SyncWindow struct {
	// kind is allow or deny.
	// +required
	Kind SyncWindowKind `json:"kind"`
	// schedule is a five-field cron expression (minute hour day-of-month month day-of-week)
	// for the times the window opens.
	// +required
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`
	// duration is how long the window stays open, e.g. 1h or 30m.
	// +required
	// +kubebuilder:validation:MinLength=1
	Duration string `json:"duration"`
	// applications are Application names (globs).
	// +optional
	// +listType=atomic
	Applications []string `json:"applications,omitempty"`
	// namespaces are destination namespaces (globs).
	// +optional
	// +listType=atomic
	Namespaces []string `json:"namespaces,omitempty"`
	// clusters are destination cluster names or servers (globs).
	// +optional
	// +listType=atomic
	Clusters []string `json:"clusters,omitempty"`
	// manualSync lets manual syncs run while this window would stop them.
	// +optional
	ManualSync bool `json:"manualSync,omitempty"`
	// timeZone is the IANA time zone of schedule, e.g. Europe/Berlin; default UTC.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}
