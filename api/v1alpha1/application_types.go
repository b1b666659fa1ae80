package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Application binds one source in Git to one destination cluster and namespace. The fleet
// reconciler renders the source, diffs it against the live cluster and syncs it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=app;apps,categories=navarch
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.destination.name`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.destination.namespace`
// +kubebuilder:printcolumn:name="Sync",type=string,JSONPath=`.status.sync.status`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health.status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.sync.revision`,priority=1
// +kubebuilder:printcolumn:name="Server",type=string,JSONPath=`.spec.destination.server`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state: what to deploy and where.
	// +required
	Spec ApplicationSpec `json:"spec"`

	// operation requests a sync. The controller clears it once the operation has started and
	// records its progress in status.operationState.
	// +optional
	Operation *Operation `json:"operation,omitempty"`

	// status is the observed state, written by the controller.
	// +optional
	Status ApplicationStatus `json:"status,omitempty"`
}

// ApplicationList is a list of Applications.
//
// +kubebuilder:object:root=true
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Application `json:"items"`
}

// ApplicationSpec is what to deploy (source), where (destination) and how (syncPolicy).
//
// +kubebuilder:validation:XValidation:rule="has(self.source) != has(self.sources)",message="exactly one of source and sources must be set"
type ApplicationSpec struct {
	// project is the Project that says what this Application may deploy and where. Empty
	// means "default", the Project that allows everything.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Project string `json:"project,omitempty"`

	// source is where the manifests come from: a directory of a Git repository, or a Helm
	// chart. Exactly one of source and sources is set.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.repoURL.matches('^(?i:https?)://[^/?#]*@') && !self.repoURL.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@]*:[^/?#@]*@')",message="repoURL must not carry user info (user:password@); keep credentials in a Secret labelled navarch.io/secret-type=repository in the controller's namespace",fieldPath=".repoURL"
	Source ApplicationSource `json:"source,omitzero"`

	// sources are several sources applied together as one Application: the objects of
	// every source are synced as one set, and a source with only a ref contributes files
	// (Helm value files named "$ref/path") and no objects. Exactly one of source and sources
	// is set.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:XValidation:rule="!self.repoURL.matches('^(?i:https?)://[^/?#]*@') && !self.repoURL.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@]*:[^/?#@]*@')",message="repoURL must not carry user info (user:password@); keep credentials in a Secret labelled navarch.io/secret-type=repository in the controller's namespace",fieldPath=".repoURL"
	// +listType=atomic
	Sources []ApplicationSource `json:"sources,omitempty"`

	// destination is the cluster and default namespace the manifests are applied to.
	// +required
	Destination ApplicationDestination `json:"destination"`

	// syncPolicy controls when and how syncs happen. Without it, syncs are manual.
	// +optional
	SyncPolicy *SyncPolicy `json:"syncPolicy,omitempty"`

	// ignoreDifferences lists fields whose live value may differ from Git without the
	// Application becoming OutOfSync, e.g. a Deployment's replicas owned by an HPA.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	IgnoreDifferences []ResourceIgnoreDifferences `json:"ignoreDifferences,omitempty"`

	// revisionHistoryLimit is the number of successful syncs kept in status.history.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	RevisionHistoryLimit *int64 `json:"revisionHistoryLimit,omitempty"`
}

// ApplicationSource is a directory in a Git repository, rendered as plain manifests, a
// kustomization or a Helm chart, or a Helm chart from a Helm repository or an OCI registry.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.kustomize) && has(self.helm))",message="at most one of kustomize and helm may be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.directory) && (has(self.kustomize) || has(self.helm)))",message="directory cannot be combined with kustomize or helm"
// +kubebuilder:validation:XValidation:rule="!(has(self.chart) && (has(self.kustomize) || has(self.directory)))",message="a chart source takes helm options only"
// +kubebuilder:validation:XValidation:rule="!(has(self.chart) && has(self.path))",message="path and chart are exclusive: path names a directory of a Git repository, chart a chart of a Helm repository"
type ApplicationSource struct {
	// repoURL is the URL of the Git repository (https://, http://, ssh:// or user@host:path),
	// or, with chart, of the Helm repository (https://) or OCI registry (oci://). It must not
	// carry a password: credentials live in repository credential Secrets.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	RepoURL string `json:"repoURL"`

	// path is the directory inside the Git repository, relative to its root.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`

	// chart is the name of a Helm chart in the Helm repository or OCI registry at repoURL.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Chart string `json:"chart,omitempty"`

	// targetRevision is a branch, tag or commit SHA of the Git repository (empty means
	// HEAD), or, with chart, a chart version or semver constraint (empty means the latest
	// stable version).
	// +optional
	// +kubebuilder:validation:MaxLength=255
	TargetRevision string `json:"targetRevision,omitempty"`

	// ref names this source among spec.sources, so that value files of other sources can
	// read its files as "$ref/path". A source with a ref and neither path nor chart
	// contributes files only.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_-]*$`
	Ref string `json:"ref,omitempty"`

	// name names this source among spec.sources in status and CLI output.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// kustomize holds options for a kustomization in path.
	// +optional
	Kustomize *ApplicationSourceKustomize `json:"kustomize,omitempty"`

	// helm holds options for a Helm chart in path.
	// +optional
	Helm *ApplicationSourceHelm `json:"helm,omitempty"`

	// directory holds options for a directory of plain manifests.
	// +optional
	Directory *ApplicationSourceDirectory `json:"directory,omitempty"`
}

// ApplicationSourceKustomize holds kustomize options applied on top of the kustomization.
type ApplicationSourceKustomize struct {
	// namePrefix is prepended to the name of every resource.
	// +optional
	NamePrefix string `json:"namePrefix,omitempty"`
	// nameSuffix is appended to the name of every resource.
	// +optional
	NameSuffix string `json:"nameSuffix,omitempty"`
	// namespace overrides the namespace of every namespaced resource.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// images overrides container images, in kustomize's `name=newName:tag` or `name:tag` form.
	// +optional
	// +listType=atomic
	Images []string `json:"images,omitempty"`
	// commonLabels are added to every resource and selector.
	// +optional
	CommonLabels map[string]string `json:"commonLabels,omitempty"`
	// commonAnnotations are added to every resource.
	// +optional
	CommonAnnotations map[string]string `json:"commonAnnotations,omitempty"`
	// replicas overrides the replica count of named workloads.
	// +optional
	// +listType=atomic
	Replicas []KustomizeReplica `json:"replicas,omitempty"`
}

// KustomizeReplica overrides the replica count of one workload.
type KustomizeReplica struct {
	// name of the Deployment, StatefulSet or ReplicaSet.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// count is the replica count.
	// +required
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`
}

// ApplicationSourceHelm holds the options of a Helm chart. Values are merged in this order,
// later winning: the chart's values.yaml, valueFiles (in order), values, valuesObject,
// parameters and fileParameters.
type ApplicationSourceHelm struct {
	// releaseName defaults to the Application's name.
	// +optional
	// +kubebuilder:validation:MaxLength=53
	ReleaseName string `json:"releaseName,omitempty"`
	// namespace is the release namespace (.Release.Namespace); default the destination
	// namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// valueFiles are values files, in order, relative to the chart directory. Globs are
	// expanded (sorted); "$ref/path" names a file of the source with that ref in
	// spec.sources, relative to its repository root.
	// +optional
	// +listType=atomic
	ValueFiles []string `json:"valueFiles,omitempty"`
	// ignoreMissingValueFiles skips value files that do not exist instead of failing.
	// +optional
	IgnoreMissingValueFiles bool `json:"ignoreMissingValueFiles,omitempty"`
	// values is a YAML string of values.
	// +optional
	Values string `json:"values,omitempty"`
	// valuesObject is values as a structured object; it takes precedence over values.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	ValuesObject *runtime.RawExtension `json:"valuesObject,omitempty"`
	// parameters set individual values, like `helm --set`.
	// +optional
	// +listType=atomic
	Parameters []HelmParameter `json:"parameters,omitempty"`
	// fileParameters set individual values to the content of a file, like
	// `helm --set-file`; paths as valueFiles.
	// +optional
	// +listType=atomic
	FileParameters []HelmFileParameter `json:"fileParameters,omitempty"`
	// skipCrds skips the chart's crds/ directory.
	// +optional
	SkipCrds bool `json:"skipCrds,omitempty"`
	// skipTests leaves out the chart's test hooks (helm.sh/hook: test).
	// +optional
	SkipTests bool `json:"skipTests,omitempty"`
	// skipSchemaValidation skips the chart's values.schema.json.
	// +optional
	SkipSchemaValidation bool `json:"skipSchemaValidation,omitempty"`
	// kubeVersion is .Capabilities.KubeVersion; default the destination cluster's version.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	KubeVersion string `json:"kubeVersion,omitempty"`
	// apiVersions are .Capabilities.APIVersions ("apps/v1", "apps/v1/Deployment"); default
	// the destination cluster's.
	// +optional
	// +listType=atomic
	APIVersions []string `json:"apiVersions,omitempty"`
	// passCredentials sends the repository's credentials also to chart downloads on other
	// hosts named by the repository's index.
	// +optional
	PassCredentials bool `json:"passCredentials,omitempty"`
	// version is the Helm version of the chart's API; only v3 is supported.
	// +optional
	// +kubebuilder:validation:Enum=v3
	Version string `json:"version,omitempty"`
}

// HelmFileParameter is one `--set-file` value.
type HelmFileParameter struct {
	// name is the dotted value path.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// path is the file whose content becomes the value, as a value file path.
	// +required
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
}

// HelmParameter is one `--set` value.
type HelmParameter struct {
	// name is the dotted value path.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// value is the value to set.
	// +optional
	Value string `json:"value,omitempty"`
	// forceString keeps the value a string, like `helm --set-string`.
	// +optional
	ForceString bool `json:"forceString,omitempty"`
}

// ApplicationSourceDirectory holds options for a directory of plain YAML/JSON manifests.
type ApplicationSourceDirectory struct {
	// recurse includes manifests in subdirectories.
	// +optional
	Recurse bool `json:"recurse,omitempty"`
	// include is a glob (or `{a,b}` list of globs) of file paths to include.
	// +optional
	Include string `json:"include,omitempty"`
	// exclude is a glob (or `{a,b}` list of globs) of file paths to leave out; it wins over include.
	// +optional
	Exclude string `json:"exclude,omitempty"`
}

// ApplicationDestination names the target cluster, by Cluster name or by API server URL, and the
// default namespace for namespaced resources that name none.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.server)",message="exactly one of name or server must be set"
type ApplicationDestination struct {
	// name is the name of a Cluster, or `in-cluster` for the management cluster itself.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`
	// server is the API server URL of a registered Cluster.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Server string `json:"server,omitempty"`
	// namespace is the default namespace for namespaced resources that set none.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// SyncPolicy controls when and how an Application syncs.
type SyncPolicy struct {
	// automated syncs whenever the Application is OutOfSync. Without it, syncs are manual.
	// +optional
	Automated *SyncPolicyAutomated `json:"automated,omitempty"`

	// syncOptions tune the sync, e.g. `CreateNamespace=true`, `ServerSideApply=true`,
	// `PrunePropagationPolicy=background`.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	SyncOptions []SyncOption `json:"syncOptions,omitempty"`

	// retry controls retries of a failed sync.
	// +optional
	Retry *RetryStrategy `json:"retry,omitempty"`
}

// SyncOption is one `Name=value` sync option.
//
// +kubebuilder:validation:Pattern=`^((CreateNamespace|ServerSideApply|ApplyOutOfSyncOnly|PruneLast|Replace|Force|Validate|FailOnSharedResource|RespectIgnoreDifferences|SkipDryRunOnMissingResource)=(true|false)|PrunePropagationPolicy=(foreground|background|orphan))$`
type SyncOption string

// SyncPolicyAutomated enables automated sync.
type SyncPolicyAutomated struct {
	// prune deletes resources that are no longer in Git.
	// +optional
	Prune bool `json:"prune,omitempty"`
	// selfHeal re-syncs when the live state drifts from Git without a Git change.
	// +optional
	SelfHeal bool `json:"selfHeal,omitempty"`
	// allowEmpty allows a sync that would leave the Application with no resources at all.
	// +optional
	AllowEmpty bool `json:"allowEmpty,omitempty"`
}

// RetryStrategy controls retries of a failed sync operation. A retry re-runs the whole operation.
type RetryStrategy struct {
	// limit is the maximum number of retries; a negative value retries forever.
	// +optional
	Limit int64 `json:"limit,omitempty"`
	// backoff controls the wait between retries.
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
}

// Backoff is an exponential backoff: wait = min(maxDuration, duration * factor^retry).
type Backoff struct {
	// duration is the first wait, e.g. `5s` (the default) or `1m`; a bare number means seconds.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^[0-9]+$`
	Duration string `json:"duration,omitempty"`
	// factor multiplies the wait after each retry; default 2.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Factor *int64 `json:"factor,omitempty"`
	// maxDuration caps the wait, e.g. `3m` (the default).
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$|^[0-9]+$`
	MaxDuration string `json:"maxDuration,omitempty"`
}

// ResourceIgnoreDifferences selects resources and the fields of them to leave out of the diff.
//
// +kubebuilder:validation:XValidation:rule="has(self.jsonPointers) || has(self.jqPathExpressions) || has(self.managedFieldsManagers)",message="one of jsonPointers, jqPathExpressions or managedFieldsManagers must be set"
type ResourceIgnoreDifferences struct {
	// group of the resources; empty means the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// kind of the resources.
	// +required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// name of the resource; empty matches every name.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the resource; empty matches every namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// jsonPointers are RFC 6901 pointers to the ignored fields, e.g. `/spec/replicas`.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:items:Pattern=`^(/.*)?$`
	JSONPointers []string `json:"jsonPointers,omitempty"`
	// jqPathExpressions are jq paths to the ignored fields, e.g. `.spec.template.spec.containers[].image`.
	// +optional
	// +listType=atomic
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
	// managedFieldsManagers ignores every field owned by these field managers.
	// +optional
	// +listType=atomic
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// Operation is a requested operation on an Application: a sync, or a rollback to an entry of
// status.history.
//
// +kubebuilder:validation:XValidation:rule="has(self.sync) || has(self.rollback)",message="one of sync and rollback must be set"
type Operation struct {
	// sync requests a sync.
	// +optional
	Sync *SyncOperation `json:"sync,omitempty"`
	// rollback syncs the commit and source of a history entry (it wins over sync when both are
	// set; the recorded operation holds both) and pauses automated sync (the
	// navarch.io/automated-sync-paused annotation) until the annotation is removed.
	// +optional
	Rollback *RollbackOperation `json:"rollback,omitempty"`
	// initiatedBy records who asked for the operation.
	// +optional
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
	// retry overrides the Application's retry strategy for this operation.
	// +optional
	Retry *RetryStrategy `json:"retry,omitempty"`
}

// SyncOperation is a sync of an Application to a revision.
type SyncOperation struct {
	// revision to sync to; empty means the source's targetRevision.
	// +optional
	Revision string `json:"revision,omitempty"`
	// source to sync instead of spec.source, e.g. the source of a history entry.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!self.repoURL.matches('^(?i:https?)://[^/?#]*@') && !self.repoURL.matches('^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@]*:[^/?#@]*@')",message="repoURL must not carry user info (user:password@); keep credentials in a Secret labelled navarch.io/secret-type=repository in the controller's namespace",fieldPath=".repoURL"
	Source *ApplicationSource `json:"source,omitempty"`
	// revisions to sync to, one per source of spec.sources (empty: that source's
	// targetRevision).
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty"`
	// sources to sync instead of spec.sources, e.g. the sources of a history entry.
	// +optional
	// +listType=atomic
	Sources []ApplicationSource `json:"sources,omitempty"`
	// prune deletes resources that are no longer in Git.
	// +optional
	Prune bool `json:"prune,omitempty"`
	// dryRun runs the operation without changing the cluster.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// syncOptions override the Application's sync options for this operation.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	SyncOptions []SyncOption `json:"syncOptions,omitempty"`
	// resources restricts the sync to these resources; empty means all.
	// +optional
	// +listType=atomic
	Resources []SyncOperationResource `json:"resources,omitempty"`
}

// SyncOperationResource selects one resource for a partial sync.
type SyncOperationResource struct {
	// group of the resource; empty means the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// kind of the resource.
	// +required
	Kind string `json:"kind"`
	// name of the resource.
	// +required
	Name string `json:"name"`
	// namespace of the resource.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// RollbackOperation names the history entry to roll back to.
type RollbackOperation struct {
	// id of the entry in status.history.
	// +required
	// +kubebuilder:validation:Minimum=0
	ID int64 `json:"id"`
}

// OperationInitiator records who started an operation.
type OperationInitiator struct {
	// username of the person who started it, if a person did.
	// +optional
	Username string `json:"username,omitempty"`
	// automated is true when automated sync started it.
	// +optional
	Automated bool `json:"automated,omitempty"`
}

// SyncStatusCode says whether the live state matches Git.
//
// +kubebuilder:validation:Enum=Synced;OutOfSync;Unknown
type SyncStatusCode string

// Sync status codes.
const (
	SyncStatusSynced    SyncStatusCode = "Synced"
	SyncStatusOutOfSync SyncStatusCode = "OutOfSync"
	SyncStatusUnknown   SyncStatusCode = "Unknown"
)

// HealthStatusCode is the health of a resource or an Application.
//
// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Suspended;Missing;Unknown
type HealthStatusCode string

// Health status codes, from best to worst as an Application aggregates them.
const (
	HealthHealthy     HealthStatusCode = "Healthy"
	HealthSuspended   HealthStatusCode = "Suspended"
	HealthProgressing HealthStatusCode = "Progressing"
	HealthMissing     HealthStatusCode = "Missing"
	HealthDegraded    HealthStatusCode = "Degraded"
	HealthUnknown     HealthStatusCode = "Unknown"
)

// OperationPhase is the phase of a sync operation.
//
// +kubebuilder:validation:Enum=Running;Succeeded;Failed;Error;Terminating
type OperationPhase string

// Operation phases.
const (
	OperationRunning     OperationPhase = "Running"
	OperationSucceeded   OperationPhase = "Succeeded"
	OperationFailed      OperationPhase = "Failed"
	OperationError       OperationPhase = "Error"
	OperationTerminating OperationPhase = "Terminating"
)

// SyncPhase is the phase of a sync in which a task runs.
//
// +kubebuilder:validation:Enum=PreSync;Sync;PostSync;SyncFail
type SyncPhase string

// Sync phases, in the order they run; SyncFail runs only when the operation fails.
const (
	SyncPhasePreSync  SyncPhase = "PreSync"
	SyncPhaseSync     SyncPhase = "Sync"
	SyncPhasePostSync SyncPhase = "PostSync"
	SyncPhaseSyncFail SyncPhase = "SyncFail"
)

// ApplicationStatus is the observed state of an Application.
type ApplicationStatus struct {
	// observedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the Application's state: Ready, Reconciling, Stalled, and
	// problems such as ComparisonError or SharedResourceWarning.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// sync says whether the live state matches Git, and at which commit.
	// +optional
	Sync SyncStatus `json:"sync,omitempty"`

	// health is the worst health of the Application's resources.
	// +optional
	Health HealthStatus `json:"health,omitempty"`

	// resources is the Application's inventory: every resource it manages, with its sync
	// status and health. Prune works from this list, never from a cluster-wide scan.
	// +optional
	// +listType=atomic
	Resources []ResourceStatus `json:"resources,omitempty"`

	// createdNamespace is the destination namespace that navarch created for this
	// Application (sync option CreateNamespace=true), marked with the annotation
	// navarch.io/created-by. Deleting the Application with the resources finalizer deletes
	// it last, if it still carries that annotation naming this Application. Empty when
	// navarch created none, or when the source holds the Namespace itself.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	CreatedNamespace string `json:"createdNamespace,omitempty"`

	// operationState is the progress of the current or last sync operation.
	// +optional
	OperationState *OperationState `json:"operationState,omitempty"`

	// history lists the last successful syncs, newest last.
	// +optional
	// +listType=atomic
	History []RevisionHistory `json:"history,omitempty"`

	// reconciledAt is when the Application was last compared with Git.
	// +optional
	ReconciledAt *metav1.Time `json:"reconciledAt,omitempty"`
}

// SyncStatus is the comparison of the live state with Git.
type SyncStatus struct {
	// status is Synced, OutOfSync or Unknown.
	// +optional
	Status SyncStatusCode `json:"status,omitempty"`
	// revision is the commit (or chart version) the live state was compared with; with
	// several sources, their revisions joined by commas.
	// +optional
	Revision string `json:"revision,omitempty"`
	// revisions are the revisions of each of spec.sources, in order.
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty"`
}

// HealthStatus is a health code with an explanation.
type HealthStatus struct {
	// status is the health code.
	// +optional
	Status HealthStatusCode `json:"status,omitempty"`
	// message explains a health other than Healthy.
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceRef identifies one Kubernetes object.
type ResourceRef struct {
	// group of the object; empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// version of the object's API.
	// +optional
	Version string `json:"version,omitempty"`
	// kind of the object.
	// +required
	Kind string `json:"kind"`
	// namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the object.
	// +required
	Name string `json:"name"`
}

// ResourceStatus is one managed resource in an Application's inventory.
type ResourceStatus struct {
	ResourceRef `json:",inline"`
	// status is the resource's sync status.
	// +optional
	Status SyncStatusCode `json:"status,omitempty"`
	// health is the resource's health; nil for kinds without a health assessment.
	// +optional
	Health *HealthStatus `json:"health,omitempty"`
	// hook is true for hook resources.
	// +optional
	Hook bool `json:"hook,omitempty"`
	// syncWave is the resource's sync wave.
	// +optional
	SyncWave int64 `json:"syncWave,omitempty"`
	// requiresPruning is true when the resource is no longer in Git.
	// +optional
	RequiresPruning bool `json:"requiresPruning,omitempty"`
	// message explains a status other than Synced, e.g. the fields that differ from Git.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}

// OperationState is the progress of a sync operation. The engine advances the operation from
// this state, so a controller restart resumes it where it stopped.
type OperationState struct {
	// operation is the operation being run.
	// +required
	Operation Operation `json:"operation"`
	// phase is the operation's phase.
	// +required
	Phase OperationPhase `json:"phase"`
	// message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// syncResult holds the per-task results.
	// +optional
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
	// startedAt is when the operation started.
	// +required
	StartedAt metav1.Time `json:"startedAt"`
	// finishedAt is when the operation finished.
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// retryCount is the number of retries made so far.
	// +optional
	RetryCount int64 `json:"retryCount,omitempty"`
	// nextRetryAt is when the next retry starts, while the operation waits to retry.
	// +optional
	NextRetryAt *metav1.Time `json:"nextRetryAt,omitempty"`
	// id identifies the current attempt of the operation. Hook instances carry it (annotation
	// navarch.io/operation), and hooks with generateName are named with it, so that a
	// restarted controller recognises the hooks it already created.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ID string `json:"id,omitempty"`
	// failure is the error that failed the current attempt. It is set while the SyncFail hooks
	// run, before the operation is marked Failed.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Failure string `json:"failure,omitempty"`
}

// SyncOperationResult is the result of a sync operation.
type SyncOperationResult struct {
	// revision is the commit (or chart version) synced; with several sources, their
	// revisions joined by commas.
	// +required
	Revision string `json:"revision"`
	// revisions are the revisions synced of each source, with several sources.
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty"`
	// resources are the results of the operation's tasks.
	// +optional
	// +listType=atomic
	Resources []ResourceResult `json:"resources,omitempty"`
}

// ResultCode is the outcome of one task of a sync.
//
// +kubebuilder:validation:Enum=Synced;SyncFailed;Pruned;PruneSkipped
type ResultCode string

// Task result codes.
const (
	ResultSynced       ResultCode = "Synced"
	ResultSyncFailed   ResultCode = "SyncFailed"
	ResultPruned       ResultCode = "Pruned"
	ResultPruneSkipped ResultCode = "PruneSkipped"
)

// HookPhase is the state of a hook resource.
//
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Error;Terminating
type HookPhase string

// Hook phases.
const (
	HookPending     HookPhase = "Pending"
	HookRunning     HookPhase = "Running"
	HookSucceeded   HookPhase = "Succeeded"
	HookFailed      HookPhase = "Failed"
	HookError       HookPhase = "Error"
	HookTerminating HookPhase = "Terminating"
)

// ResourceResult is the result of one task of a sync operation.
type ResourceResult struct {
	ResourceRef `json:",inline"`
	// status is the task's outcome.
	// +optional
	Status ResultCode `json:"status,omitempty"`
	// message explains the outcome.
	// +optional
	Message string `json:"message,omitempty"`
	// hookType is the hook's type for hook tasks.
	// +optional
	HookType string `json:"hookType,omitempty"`
	// hookPhase is the hook's state for hook tasks.
	// +optional
	HookPhase HookPhase `json:"hookPhase,omitempty"`
	// syncPhase is the phase the task ran in.
	// +optional
	SyncPhase SyncPhase `json:"syncPhase,omitempty"`
	// syncWave is the wave the task ran in.
	// +optional
	SyncWave int64 `json:"syncWave,omitempty"`
}

// RevisionHistory is one successful sync.
type RevisionHistory struct {
	// id numbers history entries, increasing.
	// +required
	ID int64 `json:"id"`
	// revision is the commit (or chart version) synced; with several sources, their
	// revisions joined by commas.
	// +required
	Revision string `json:"revision"`
	// revisions are the revisions synced of each source, with several sources.
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty"`
	// source is the source as it was synced.
	// +optional
	Source ApplicationSource `json:"source,omitzero"`
	// sources are the sources as they were synced, with several sources.
	// +optional
	// +listType=atomic
	Sources []ApplicationSource `json:"sources,omitempty"`
	// deployStartedAt is when the sync started.
	// +optional
	DeployStartedAt *metav1.Time `json:"deployStartedAt,omitempty"`
	// deployedAt is when the sync finished.
	// +required
	DeployedAt metav1.Time `json:"deployedAt"`
	// initiatedBy records who started the sync.
	// +optional
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
}
