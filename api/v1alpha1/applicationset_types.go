package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ApplicationSet generates Applications: its generators produce parameter sets and its
// template turns each set into one Application in the ApplicationSet's namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=appset;appsets,categories=navarch
// +kubebuilder:printcolumn:name="Applications",type=integer,JSONPath=`.status.applicationCount`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="ResourcesUpToDate")].status`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health.status`
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.status.rollout.phase`,priority=1
// +kubebuilder:printcolumn:name="Error",type=string,JSONPath=`.status.conditions[?(@.type=="ErrorOccurred")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ApplicationSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state: generators and template.
	// +required
	Spec ApplicationSetSpec `json:"spec"`

	// status is the observed state, written by the controller.
	// +optional
	Status ApplicationSetStatus `json:"status,omitempty"`
}

// ApplicationSetList is a list of ApplicationSets.
//
// +kubebuilder:object:root=true
type ApplicationSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApplicationSet `json:"items"`
}

// ApplicationSetSpec is the generators, the template, and how generated Applications are
// kept in line.
type ApplicationSetSpec struct {
	// goTemplate renders the template with Go text/template and sprig instead of plain
	// `{{ key }}` substitution.
	// +optional
	GoTemplate bool `json:"goTemplate,omitempty"`

	// goTemplateOptions are text/template options, e.g. `missingkey=error`.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	GoTemplateOptions []GoTemplateOption `json:"goTemplateOptions,omitempty"`

	// generators produce the parameter sets; the Applications are the union of all of them.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Generators []ApplicationSetGenerator `json:"generators"`

	// template is rendered once per parameter set into an Application.
	// +required
	Template ApplicationSetTemplate `json:"template"`

	// templatePatch is a templated YAML document merged onto each rendered Application, for
	// fields string substitution cannot produce (booleans, lists, maps).
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	TemplatePatch *string `json:"templatePatch,omitempty"`

	// syncPolicy controls how generated Applications are created, updated and deleted.
	// +optional
	SyncPolicy *ApplicationSetSyncPolicy `json:"syncPolicy,omitempty"`

	// strategy controls the order in which generated Applications are synced.
	// +optional
	Strategy *ApplicationSetStrategy `json:"strategy,omitempty"`

	// ignoreApplicationDifferences lists fields of generated Applications that may be edited
	// by hand without the controller reverting them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	IgnoreApplicationDifferences []ApplicationSetIgnoreDifferences `json:"ignoreApplicationDifferences,omitempty"`

	// preservedFields lists labels and annotations of generated Applications whose live value
	// the controller keeps when it updates them, so that a hand edit or another tool's value
	// survives. Every other label and annotation is made equal to the template's: one the
	// template no longer sets is removed.
	// +optional
	PreservedFields *ApplicationPreservedFields `json:"preservedFields,omitempty"`
}

// ApplicationPreservedFields lists the label and annotation keys of generated Applications
// that keep their live value.
type ApplicationPreservedFields struct {
	// annotations are annotation keys, e.g. `example.com/owner`.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=317
	Annotations []string `json:"annotations,omitempty"`
	// labels are label keys.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=317
	Labels []string `json:"labels,omitempty"`
}

// GoTemplateOption is a text/template option.
//
// +kubebuilder:validation:Enum="missingkey=error";"missingkey=zero";"missingkey=default";"missingkey=invalid"
type GoTemplateOption string

// ApplicationSetTemplate is the template of a generated Application.
type ApplicationSetTemplate struct {
	// metadata of the generated Application; name is required and usually templated.
	// +required
	Metadata ApplicationSetTemplateMeta `json:"metadata"`
	// spec of the generated Application.
	// +required
	Spec ApplicationSpec `json:"spec"`
}

// ApplicationSetTemplateMeta is the templatable subset of an Application's metadata.
type ApplicationSetTemplateMeta struct {
	// name of the generated Application.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace is ignored: generated Applications live in the ApplicationSet's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// labels of the generated Application.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations of the generated Application.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// finalizers of the generated Application.
	// +optional
	// +listType=atomic
	Finalizers []string `json:"finalizers,omitempty"`
}

// GeneratorTemplate overrides parts of the ApplicationSet's template for one generator. It
// is merged onto the main template, so it may be partial; the merged result is validated
// when the Application is written.
type GeneratorTemplate struct {
	// metadata overrides the template's metadata.
	// +optional
	Metadata ApplicationSetTemplateMeta `json:"metadata,omitempty"`
	// spec is a partial Application spec merged onto the template's spec.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Spec *apiextensionsv1.JSON `json:"spec,omitempty"`
}

// ApplicationSetGenerator is one generator. Exactly one generator kind must be set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.list), has(self.clusters), has(self.git), has(self.pullRequest), has(self.scmProvider), has(self.plugin), has(self.matrix), has(self.merge)].filter(x, x).size() == 1",message="exactly one of list, clusters, git, pullRequest, scmProvider, plugin, matrix or merge must be set"
type ApplicationSetGenerator struct {
	// list generates one parameter set per element.
	// +optional
	List *ListGenerator `json:"list,omitempty"`
	// clusters generates one parameter set per selected Cluster.
	// +optional
	Clusters *ClusterGenerator `json:"clusters,omitempty"`
	// git generates parameter sets from directories or files in a Git repository.
	// +optional
	Git *GitGenerator `json:"git,omitempty"`
	// pullRequest generates one parameter set per open pull request.
	// +optional
	PullRequest *PullRequestGenerator `json:"pullRequest,omitempty"`
	// scmProvider generates one parameter set per repository (or branch) of an organisation.
	// +optional
	SCMProvider *SCMProviderGenerator `json:"scmProvider,omitempty"`
	// plugin asks an HTTP service, a generator plugin, for the parameter sets.
	// +optional
	Plugin *PluginGenerator `json:"plugin,omitempty"`
	// matrix combines its children's parameter sets as a Cartesian product.
	// +optional
	Matrix *MatrixGenerator `json:"matrix,omitempty"`
	// merge merges its children's parameter sets by mergeKeys.
	// +optional
	Merge *MergeGenerator `json:"merge,omitempty"`
	// selector keeps only the parameter sets whose parameters match.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// NestedGenerator is a child of a matrix or merge generator. A nested matrix or merge is
// kept as raw JSON (a CRD schema cannot be recursive) and decoded and validated by the
// controller as a MatrixGenerator or MergeGenerator, so nesting depth is unlimited.
//
// +kubebuilder:validation:XValidation:rule="[has(self.list), has(self.clusters), has(self.git), has(self.pullRequest), has(self.scmProvider), has(self.plugin), has(self.matrix), has(self.merge)].filter(x, x).size() == 1",message="exactly one of list, clusters, git, pullRequest, scmProvider, plugin, matrix or merge must be set"
type NestedGenerator struct {
	// list generates one parameter set per element.
	// +optional
	List *ListGenerator `json:"list,omitempty"`
	// clusters generates one parameter set per selected Cluster.
	// +optional
	Clusters *ClusterGenerator `json:"clusters,omitempty"`
	// git generates parameter sets from directories or files in a Git repository.
	// +optional
	Git *GitGenerator `json:"git,omitempty"`
	// pullRequest generates one parameter set per open pull request.
	// +optional
	PullRequest *PullRequestGenerator `json:"pullRequest,omitempty"`
	// scmProvider generates one parameter set per repository (or branch) of an organisation.
	// +optional
	SCMProvider *SCMProviderGenerator `json:"scmProvider,omitempty"`
	// plugin asks an HTTP service, a generator plugin, for the parameter sets.
	// +optional
	Plugin *PluginGenerator `json:"plugin,omitempty"`
	// matrix is a nested matrix generator (same fields as a top-level one).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Matrix *apiextensionsv1.JSON `json:"matrix,omitempty"`
	// merge is a nested merge generator (same fields as a top-level one).
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Merge *apiextensionsv1.JSON `json:"merge,omitempty"`
	// selector keeps only the parameter sets whose parameters match.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// ListGenerator generates one parameter set per element (elements and elementsYaml add up).
type ListGenerator struct {
	// elements are objects whose keys become parameters.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	Elements []apiextensionsv1.JSON `json:"elements,omitempty"`
	// elementsYaml is a YAML list of elements; it may itself be templated with parameters of
	// an earlier matrix child.
	// +optional
	ElementsYaml string `json:"elementsYaml,omitempty"`
	// template overrides parts of the ApplicationSet's template for this generator.
	// +optional
	Template *GeneratorTemplate `json:"template,omitempty"`
}

// ClusterGenerator generates one parameter set per Cluster matching selector.
type ClusterGenerator struct {
	// selector matches Cluster labels; empty selects every Cluster.
	// +optional
	Selector metav1.LabelSelector `json:"selector,omitempty"`
	// values are extra parameters (`values.<key>`), themselves templated with the Cluster's
	// parameters.
	// +optional
	Values map[string]string `json:"values,omitempty"`
	// template overrides parts of the ApplicationSet's template for this generator.
	// +optional
	Template *GeneratorTemplate `json:"template,omitempty"`
}

// GitGenerator generates parameter sets from the directories or the files of a Git repository.
//
// +kubebuilder:validation:XValidation:rule="has(self.directories) != has(self.files)",message="exactly one of directories or files must be set"
type GitGenerator struct {
	// repoURL is the Git repository's URL.
	// +required
	// +kubebuilder:validation:MinLength=1
	RepoURL string `json:"repoURL"`
	// revision is a branch, tag or commit; empty means HEAD.
	// +optional
	Revision string `json:"revision,omitempty"`
	// directories generate one parameter set per matching directory.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Directories []GitPathItem `json:"directories,omitempty"`
	// files generate parameter sets from the content of matching JSON/YAML files.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Files []GitPathItem `json:"files,omitempty"`
	// pathParamPrefix prefixes the path parameters, e.g. `app` gives `app.path`.
	// +optional
	PathParamPrefix string `json:"pathParamPrefix,omitempty"`
	// values are extra parameters (`values.<key>`), templated with the set's parameters.
	// +optional
	Values map[string]string `json:"values,omitempty"`
	// requeueAfterSeconds is how often the repository is read again; default 180.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RequeueAfterSeconds *int64 `json:"requeueAfterSeconds,omitempty"`
	// template overrides parts of the ApplicationSet's template for this generator.
	// +optional
	Template *GeneratorTemplate `json:"template,omitempty"`
}

// GitPathItem is a path glob (`*`, `?`, `[...]`, `**`) of a git generator; exclude wins over include.
type GitPathItem struct {
	// path is a glob relative to the repository root.
	// +required
	// +kubebuilder:validation:MinLength=1
	Path string `json:"path"`
	// exclude removes the matching paths instead of adding them.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// PullRequestGenerator generates one parameter set per open pull request.
//
// +kubebuilder:validation:XValidation:rule="has(self.github)",message="github must be set (the only supported provider)"
type PullRequestGenerator struct {
	// github reads pull requests from GitHub or GitHub Enterprise.
	// +optional
	Github *PullRequestGeneratorGithub `json:"github,omitempty"`
	// filters keep pull requests matching any of them; empty keeps all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Filters []PullRequestGeneratorFilter `json:"filters,omitempty"`
	// requeueAfterSeconds is how often pull requests are listed again; default 1800.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RequeueAfterSeconds *int64 `json:"requeueAfterSeconds,omitempty"`
	// values are extra parameters, available as values.<key>; they may use the pull
	// request's parameters.
	// +optional
	Values map[string]string `json:"values,omitempty"`
	// continueOnRepoNotFoundError generates no parameter sets, instead of failing, when the
	// repository does not exist (or the credentials cannot see it).
	// +optional
	ContinueOnRepoNotFoundError bool `json:"continueOnRepoNotFoundError,omitempty"`
	// template overrides parts of the ApplicationSet's template for this generator.
	// +optional
	Template *GeneratorTemplate `json:"template,omitempty"`
}

// PullRequestGeneratorGithub selects a GitHub repository's pull requests.
type PullRequestGeneratorGithub struct {
	// owner is the user or organisation owning the repository.
	// +required
	// +kubebuilder:validation:MinLength=1
	Owner string `json:"owner"`
	// repo is the repository name.
	// +required
	// +kubebuilder:validation:MinLength=1
	Repo string `json:"repo"`
	// api is the GitHub Enterprise API base URL; empty means github.com.
	// +optional
	API string `json:"api,omitempty"`
	// tokenRef is a key of a Secret in the ApplicationSet's namespace holding an API token.
	// +optional
	TokenRef *SecretKeyRef `json:"tokenRef,omitempty"`
	// appSecretName is a Secret in the ApplicationSet's namespace holding GitHub App
	// credentials: githubAppID, githubAppInstallationID and githubAppPrivateKey (PEM).
	// +optional
	AppSecretName string `json:"appSecretName,omitempty"`
	// labels keep only pull requests carrying all of these labels.
	// +optional
	// +listType=atomic
	Labels []string `json:"labels,omitempty"`
	// commitStatus, when set, reports each preview Application's state as a commit status
	// on its pull request's head commit: pending while it syncs, success once Synced and
	// Healthy, failure when Degraded or its sync failed.
	// +optional
	CommitStatus *CommitStatus `json:"commitStatus,omitempty"`
}

// Annotations on an ApplicationSet that steer its rollout.
const (
	// AnnotationPromote approves a step that requires approval: its value is the step's
	// 1-based number. The controller records the approval and removes the annotation.
	AnnotationPromote = "navarch.io/promote"
	// AnnotationRolloutPaused pauses the rollout while present: no new sync is started;
	// syncs already started finish.
	AnnotationRolloutPaused = "navarch.io/rollout-paused"
)

// AnnotationPullRequest is set on each Application a pullRequest generator produced:
// "<owner>/<repo>#<number>@<head sha>". The commit status of a preview is written for it.
const AnnotationPullRequest = "navarch.io/pull-request"

// CommitStatus configures the commit statuses navarch writes on pull requests.
type CommitStatus struct {
	// context prefixes the status's name on GitHub, which is "<context>/<Application name>"
	// so that each preview of one pull request (e.g. one per cluster) has its own status.
	// Default "navarch".
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Context string `json:"context,omitempty"`
	// targetURL is the link shown with the status, e.g. the preview's address.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	TargetURL string `json:"targetURL,omitempty"`
}

// SCMProviderGenerator generates one parameter set per repository of an organisation (per
// branch with allBranches).
//
// +kubebuilder:validation:XValidation:rule="has(self.github)",message="github must be set (the only supported provider)"
type SCMProviderGenerator struct {
	// github reads the repositories of a GitHub or GitHub Enterprise organisation.
	// +optional
	Github *SCMProviderGeneratorGithub `json:"github,omitempty"`
	// filters keep repositories matching any of them (all conditions of one filter must
	// hold); empty keeps all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Filters []SCMProviderGeneratorFilter `json:"filters,omitempty"`
	// cloneProtocol selects the url parameter: ssh (default) or https.
	// +optional
	// +kubebuilder:validation:Enum=ssh;https
	CloneProtocol string `json:"cloneProtocol,omitempty"`
	// requeueAfterSeconds is how often repositories are listed again; default 1800.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RequeueAfterSeconds *int64 `json:"requeueAfterSeconds,omitempty"`
	// values are extra parameters, available as values.<key>.
	// +optional
	Values map[string]string `json:"values,omitempty"`
	// template overrides parts of the ApplicationSet's template for this generator.
	// +optional
	Template *GeneratorTemplate `json:"template,omitempty"`
}

// SCMProviderGeneratorGithub selects the repositories of a GitHub organisation.
type SCMProviderGeneratorGithub struct {
	// organization is the GitHub organisation (or user) whose repositories are listed.
	// +required
	// +kubebuilder:validation:MinLength=1
	Organization string `json:"organization"`
	// api is the GitHub Enterprise API base URL; empty means github.com.
	// +optional
	API string `json:"api,omitempty"`
	// tokenRef is a key of a Secret in the ApplicationSet's namespace holding an API token.
	// +optional
	TokenRef *SecretKeyRef `json:"tokenRef,omitempty"`
	// appSecretName is a Secret in the ApplicationSet's namespace holding GitHub App
	// credentials (githubAppID, githubAppInstallationID, githubAppPrivateKey).
	// +optional
	AppSecretName string `json:"appSecretName,omitempty"`
	// allBranches generates one parameter set per branch instead of per repository (its
	// default branch).
	// +optional
	AllBranches bool `json:"allBranches,omitempty"`
}

// SCMProviderGeneratorFilter keeps repositories on which all of its set conditions hold.
type SCMProviderGeneratorFilter struct {
	// repositoryMatch is a regular expression on the repository name.
	// +optional
	RepositoryMatch *string `json:"repositoryMatch,omitempty"`
	// pathsExist are paths that must all exist in the branch.
	// +optional
	// +listType=atomic
	PathsExist []string `json:"pathsExist,omitempty"`
	// pathsDoNotExist are paths none of which may exist in the branch.
	// +optional
	// +listType=atomic
	PathsDoNotExist []string `json:"pathsDoNotExist,omitempty"`
	// labelMatch is a regular expression that at least one repository topic must match.
	// +optional
	LabelMatch *string `json:"labelMatch,omitempty"`
	// branchMatch is a regular expression on the branch name.
	// +optional
	BranchMatch *string `json:"branchMatch,omitempty"`
}

// PluginGenerator asks a generator plugin for the parameter sets: an HTTP service that answers
// POST <baseUrl>/api/v1/getparams.execute, as Argo CD's plugin generator defines it. The
// ConfigMap configMapRef names, in the controller's namespace, says where the plugin is and how
// to authenticate (see docs/generators.md).
type PluginGenerator struct {
	// configMapRef names the ConfigMap, in the controller's namespace, holding the plugin's
	// baseUrl, token and optional requestTimeout.
	// +required
	ConfigMapRef PluginConfigMapRef `json:"configMapRef"`
	// input is sent to the plugin with each request.
	// +optional
	Input PluginInput `json:"input,omitempty"`
	// values are extra parameters (`values.<key>`), templated with each parameter set the
	// plugin answers; they are not sent to the plugin.
	// +optional
	Values map[string]string `json:"values,omitempty"`
	// requeueAfterSeconds is how often the plugin is asked again; default 1800.
	// +optional
	// +kubebuilder:validation:Minimum=1
	RequeueAfterSeconds *int64 `json:"requeueAfterSeconds,omitempty"`
	// template overrides parts of the ApplicationSet's template for this generator.
	// +optional
	Template *GeneratorTemplate `json:"template,omitempty"`
}

// PluginConfigMapRef names the ConfigMap of a generator plugin.
type PluginConfigMapRef struct {
	// name is the ConfigMap's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// PluginInput is what a plugin generator sends to its plugin.
type PluginInput struct {
	// parameters are sent as the request's input.parameters, and are available to templates as
	// `generator.input.parameters`. Values may be any JSON: strings, numbers, lists, objects.
	// +optional
	Parameters map[string]apiextensionsv1.JSON `json:"parameters,omitempty"`
}

// PullRequestGeneratorFilter keeps pull requests whose fields match regular expressions.
type PullRequestGeneratorFilter struct {
	// branchMatch is a regular expression on the head branch.
	// +optional
	BranchMatch *string `json:"branchMatch,omitempty"`
	// targetBranchMatch is a regular expression on the base branch.
	// +optional
	TargetBranchMatch *string `json:"targetBranchMatch,omitempty"`
	// titleMatch is a regular expression on the title.
	// +optional
	TitleMatch *string `json:"titleMatch,omitempty"`
}

// SecretKeyRef names a key of a Secret in the referring object's namespace.
type SecretKeyRef struct {
	// secretName is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
	// key is the key in the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// MatrixGenerator combines its children as a Cartesian product; a later child may use an
// earlier child's parameters in its own fields.
type MatrixGenerator struct {
	// generators are the children.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	Generators []NestedGenerator `json:"generators"`
	// template overrides parts of the ApplicationSet's template for this generator.
	// +optional
	Template *GeneratorTemplate `json:"template,omitempty"`
}

// MergeGenerator merges its children: the first is the base, and a later child's sets
// override the base sets with the same mergeKeys values.
type MergeGenerator struct {
	// generators are the children; the first is the base.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	Generators []NestedGenerator `json:"generators"`
	// mergeKeys are the parameters whose values identify a set across children.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	MergeKeys []string `json:"mergeKeys"`
	// template overrides parts of the ApplicationSet's template for this generator.
	// +optional
	Template *GeneratorTemplate `json:"template,omitempty"`
}

// ApplicationsSyncPolicy says which changes the controller may make to generated Applications.
//
// +kubebuilder:validation:Enum=create-only;create-update;create-delete;sync
type ApplicationsSyncPolicy string

// Applications sync policies.
const (
	// ApplicationsSyncCreateOnly only creates Applications.
	ApplicationsSyncCreateOnly ApplicationsSyncPolicy = "create-only"
	// ApplicationsSyncCreateUpdate creates and updates, never deletes.
	ApplicationsSyncCreateUpdate ApplicationsSyncPolicy = "create-update"
	// ApplicationsSyncCreateDelete creates and deletes, never updates.
	ApplicationsSyncCreateDelete ApplicationsSyncPolicy = "create-delete"
	// ApplicationsSyncSync creates, updates and deletes (the default).
	ApplicationsSyncSync ApplicationsSyncPolicy = "sync"
)

// ApplicationSetSyncPolicy controls how generated Applications are kept in line.
type ApplicationSetSyncPolicy struct {
	// applicationsSync restricts the changes the controller makes; default `sync`.
	// +optional
	ApplicationsSync *ApplicationsSyncPolicy `json:"applicationsSync,omitempty"`
	// preserveResourcesOnDeletion leaves deployed resources in place when a generated
	// Application is deleted.
	// +optional
	PreserveResourcesOnDeletion bool `json:"preserveResourcesOnDeletion,omitempty"`
	// maxDeletions caps how many Applications one pass may delete, as a count (3 or "3") or a
	// percentage of the existing ones ("25%"); a pass over the budget deletes nothing and
	// reports it. Counts and percentages go up to 999999999, within the field's int32.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 && self <= 999999999 : self.matches('^[0-9]{1,9}%?$')",message="must be a count from 0 to 999999999 such as 3 or \"3\", or a percentage such as \"25%\""
	MaxDeletions *intstr.IntOrString `json:"maxDeletions,omitempty"`
}

// StrategyType is how generated Applications are rolled out.
//
// +kubebuilder:validation:Enum=AllAtOnce;RollingSync
type StrategyType string

// Strategy types.
const (
	StrategyAllAtOnce   StrategyType = "AllAtOnce"
	StrategyRollingSync StrategyType = "RollingSync"
)

// DeletionOrder is the order in which Applications no longer generated are deleted.
//
// +kubebuilder:validation:Enum=AllAtOnce;Reverse
type DeletionOrder string

// Deletion orders.
const (
	DeletionOrderAllAtOnce DeletionOrder = "AllAtOnce"
	DeletionOrderReverse   DeletionOrder = "Reverse"
)

// ApplicationSetStrategy controls the order in which generated Applications sync.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'RollingSync' || has(self.rollingSync)",message="rollingSync must be set when type is RollingSync"
type ApplicationSetStrategy struct {
	// type is AllAtOnce (default) or RollingSync.
	// +optional
	// +kubebuilder:default=AllAtOnce
	Type StrategyType `json:"type,omitempty"`
	// rollingSync defines ordered steps.
	// +optional
	RollingSync *RollingSyncStrategy `json:"rollingSync,omitempty"`
	// deletionOrder is how Applications that are no longer generated are deleted: AllAtOnce
	// (default), or Reverse, with RollingSync: the last step's first, each step once the
	// later steps' Applications are gone.
	// +optional
	DeletionOrder DeletionOrder `json:"deletionOrder,omitempty"`
}

// RollingSyncStrategy syncs Applications step by step.
type RollingSyncStrategy struct {
	// steps run in order; each selects Applications by label.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Steps []RollingSyncStep `json:"steps"`
}

// RollingSyncStep selects the Applications of one step, and says when the step is done.
type RollingSyncStep struct {
	// matchExpressions select Applications by label (In, NotIn, Exists, DoesNotExist). An
	// Application belongs to the first step whose expressions all match it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []metav1.LabelSelectorRequirement `json:"matchExpressions,omitempty"`
	// maxUpdate caps how many Applications of the step sync at once: a count, or a percentage
	// of the step's Applications rounded down but at least 1 above 0%. 0 pauses the step.
	// Default: all of them.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxUpdate *intstr.IntOrString `json:"maxUpdate,omitempty"`
	// minSuccessTime is how long the step's Applications must stay Synced and Healthy (soak)
	// before the next step starts.
	// +optional
	MinSuccessTime *metav1.Duration `json:"minSuccessTime,omitempty"`
	// maxFailures is how many of the step's Applications may fail (their sync failed after
	// its retries, or they are Degraded) without halting the rollout: a count or a percentage
	// of the step. Default 0: the first failure halts the rollout.
	// +optional
	// +kubebuilder:validation:XIntOrString
	MaxFailures *intstr.IntOrString `json:"maxFailures,omitempty"`
	// progressDeadline halts the rollout when the step has not completed this long after it
	// started.
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
	// requireApproval makes the step wait, once the steps before it are done, until it is
	// promoted (navarch appset promote, or the navarch.io/promote annotation).
	// +optional
	RequireApproval bool `json:"requireApproval,omitempty"`
}

// RolloutApplicationState is where one Application is in a rollout.
//
// +kubebuilder:validation:Enum=Waiting;Pending;Progressing;Healthy;Failed
type RolloutApplicationState string

// Rollout states of an Application.
const (
	// RolloutWaiting: it needs a sync, which its step has not started yet.
	RolloutWaiting RolloutApplicationState = "Waiting"
	// RolloutPending: its sync has been requested and has not begun.
	RolloutPending RolloutApplicationState = "Pending"
	// RolloutProgressing: its sync runs, or it is synced and not yet Healthy.
	RolloutProgressing RolloutApplicationState = "Progressing"
	// RolloutHealthy: Synced at the revision rolled out, and Healthy.
	RolloutHealthy RolloutApplicationState = "Healthy"
	// RolloutFailed: its sync failed after its retries, or it is Degraded.
	RolloutFailed RolloutApplicationState = "Failed"
)

// RolloutApplicationStatus is the rollout state of one generated Application.
type RolloutApplicationStatus struct {
	// application is the Application's name.
	// +required
	Application string `json:"application"`
	// status is where it is in the rollout.
	// +required
	Status RolloutApplicationState `json:"status"`
	// step is the 1-based number of its step, as a string (Argo CD's form); empty when no
	// step matches it.
	// +optional
	Step string `json:"step,omitempty"`
	// message says why it is in this state.
	// +optional
	Message string `json:"message,omitempty"`
	// targetRevision is the revision being rolled out to it.
	// +optional
	TargetRevision string `json:"targetRevision,omitempty"`
	// lastTransitionTime is when status last changed.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// RolloutPhase is where a rollout is.
//
// +kubebuilder:validation:Enum=Progressing;WaitingForApproval;Paused;Halted;Completed
type RolloutPhase string

// Rollout phases.
const (
	RolloutPhaseProgressing        RolloutPhase = "Progressing"
	RolloutPhaseWaitingForApproval RolloutPhase = "WaitingForApproval"
	RolloutPhasePaused             RolloutPhase = "Paused"
	RolloutPhaseHalted             RolloutPhase = "Halted"
	RolloutPhaseCompleted          RolloutPhase = "Completed"
)

// RolloutStatus is the state of a RollingSync rollout.
type RolloutStatus struct {
	// phase is where the rollout is.
	// +optional
	Phase RolloutPhase `json:"phase,omitempty"`
	// step is the 1-based step the rollout is at.
	// +optional
	Step int32 `json:"step,omitempty"`
	// stepStartedAt is when that step started.
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// stepHealthyAt is when every Application of the step was Healthy: its soak started.
	// +optional
	StepHealthyAt *metav1.Time `json:"stepHealthyAt,omitempty"`
	// approvedSteps are the steps promoted since the rollout (re)started.
	// +optional
	// +listType=set
	ApprovedSteps []int32 `json:"approvedSteps,omitempty"`
	// revisions is a digest of the revisions being rolled out; a new commit changes it and
	// restarts the rollout from the first step.
	// +optional
	Revisions string `json:"revisions,omitempty"`
	// restartedAt is when a new commit restarted the rollout before it had completed.
	// +optional
	RestartedAt *metav1.Time `json:"restartedAt,omitempty"`
	// message says what the rollout waits for, or why it halted.
	// +optional
	Message string `json:"message,omitempty"`
}

// ApplicationSetIgnoreDifferences lists fields of generated Applications left as edited.
type ApplicationSetIgnoreDifferences struct {
	// name of the Application; empty matches all.
	// +optional
	Name string `json:"name,omitempty"`
	// jsonPointers are RFC 6901 pointers to the ignored fields.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:items:Pattern=`^(/.*)?$`
	JSONPointers []string `json:"jsonPointers,omitempty"`
	// jqPathExpressions are jq paths to the ignored fields.
	// +optional
	// +listType=atomic
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
}

// ApplicationSetStatus is the observed state of an ApplicationSet.
type ApplicationSetStatus struct {
	// observedGeneration is the generation of the last successful pass.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: ParametersGenerated, ResourcesUpToDate, ErrorOccurred, RolloutProgressing.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// applicationCount is the number of Applications generated.
	// +optional
	ApplicationCount int64 `json:"applicationCount,omitempty"`
	// applications lists generated Applications, capped in size; omittedApplications counts
	// the rest.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	Applications []ApplicationSetApplicationStatus `json:"applications,omitempty"`
	// omittedApplications is the number of Applications not listed in applications.
	// +optional
	OmittedApplications int64 `json:"omittedApplications,omitempty"`
	// health is the ApplicationSet's own health: the worst health of its generated
	// Applications (Missing for one not created yet), Healthy when it generates none.
	// +optional
	Health *HealthStatus `json:"health,omitempty"`
	// applicationStatus is the rollout state of each generated Application, with RollingSync.
	// +optional
	// +listType=map
	// +listMapKey=application
	ApplicationStatus []RolloutApplicationStatus `json:"applicationStatus,omitempty"`
	// rollout is the state of the RollingSync rollout.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// ApplicationSetApplicationStatus summarises one generated Application.
type ApplicationSetApplicationStatus struct {
	// name of the Application.
	// +required
	Name string `json:"name"`
	// cluster is the Application's destination.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// sync is the Application's sync status.
	// +optional
	Sync SyncStatusCode `json:"sync,omitempty"`
	// health is the Application's health.
	// +optional
	Health HealthStatusCode `json:"health,omitempty"`
	// message explains an error for this Application.
	// +optional
	Message string `json:"message,omitempty"`
}
