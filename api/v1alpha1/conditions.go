package v1alpha1

// Condition types shared by all kinds, following kstatus conventions: Ready says the object
// reached its desired state, Reconciling that work is under way, Stalled that it cannot
// progress without a change.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// ApplicationSet condition types, named as in Argo CD so dashboards and alerts port.
const (
	// ApplicationSetErrorOccurred is True when the last pass hit an error: a generator or
	// template error (then nothing was created, updated or deleted), Applications that could
	// not be written, or deletions held back by the deletion budget.
	ApplicationSetErrorOccurred = "ErrorOccurred"
	// ApplicationSetParametersGenerated is True when every generator produced its parameters.
	ApplicationSetParametersGenerated = "ParametersGenerated"
	// ApplicationSetResourcesUpToDate is True when every generated Application is written.
	ApplicationSetResourcesUpToDate = "ResourcesUpToDate"
	// ApplicationSetRolloutProgressing is True while a progressive rollout is under way.
	ApplicationSetRolloutProgressing = "RolloutProgressing"
	// ApplicationSetRateLimited is True while a GitHub credential of its generators is low on
	// its rate limit (polling waits for the reset) or GitHub asked to wait.
	ApplicationSetRateLimited = "RateLimited"
)

// ApplicationSet condition reasons.
const (
	ReasonGeneratorError         = "GeneratorError"
	ReasonTemplateError          = "TemplateError"
	ReasonDeletionBudgetExceeded = "DeletionBudgetExceeded"
	ReasonApplicationError       = "ApplicationError"
	ReasonParametersGenerated    = "ParametersGenerated"
	ReasonApplicationSetUpToDate = "ApplicationSetUpToDate"
	ReasonRateLimitLow           = "RateLimitLow"
	ReasonRateLimitOK            = "RateLimitOK"
)

// ApplicationSet RolloutProgressing condition reasons, one per rollout phase
// (status.rollout.phase), and one for a strategy that cannot run.
const (
	// ReasonRolloutProgressing (RolloutProgressing True): the current step is syncing or
	// soaking its Applications.
	ReasonRolloutProgressing = "RolloutProgressing"
	// ReasonRolloutWaiting (RolloutProgressing True): the current step requires approval
	// before it syncs; the AnnotationPromote annotation gives it.
	ReasonRolloutWaiting = "WaitingForApproval"
	// ReasonRolloutPaused (RolloutProgressing True): the AnnotationRolloutPaused annotation
	// stops the rollout from starting syncs.
	ReasonRolloutPaused = "RolloutPaused"
	// ReasonRolloutHalted (RolloutProgressing False): a step had more failures than its
	// maxFailures allows or passed its progressDeadline; later steps are untouched until a
	// new revision restarts the rollout.
	ReasonRolloutHalted = "RolloutHalted"
	// ReasonRolloutCompleted (RolloutProgressing False): every step is done.
	ReasonRolloutCompleted = "RolloutCompleted"
	// ReasonInvalidStrategy (RolloutProgressing False): spec.strategy.rollingSync cannot be
	// compiled, e.g. a step's matchExpressions has an unknown operator; nothing is synced.
	ReasonInvalidStrategy = "InvalidStrategy"
)

// Application condition types.
const (
	// ApplicationComparisonError is True when the source could not be fetched, rendered or
	// compared with the live state.
	ApplicationComparisonError = "ComparisonError"
	// ApplicationSyncError is True when the last sync failed.
	ApplicationSyncError = "SyncError"
	// ApplicationSharedResourceWarning is True when a resource is also tracked by another
	// Application.
	ApplicationSharedResourceWarning = "SharedResourceWarning"
	// ApplicationDeletionError is True while a deleted Application cannot delete its
	// resources yet, e.g. because its cluster does not answer; the Application keeps its
	// finalizer and finishes deleting once it can.
	ApplicationDeletionError = "DeletionError"
	// ApplicationInvalidSpecError is True when the Application's Project refuses it: the
	// Project does not exist or is invalid, or does not allow the Application's namespace,
	// sources or destination. Nothing is rendered or synced meanwhile.
	ApplicationInvalidSpecError = "InvalidSpecError"
	// ApplicationSyncBlocked is True while a sync window of the Application's Project stops
	// its automated syncs (or the syncs a rollout asks for); the message names the window and
	// says when it changes.
	ApplicationSyncBlocked = "SyncBlocked"
)

// Application condition reasons set outside a sync operation.
const (
	// ReasonClusterUnavailable: the destination cluster is not registered, not connected yet,
	// or does not answer.
	ReasonClusterUnavailable = "ClusterUnavailable"
	// ReasonProjectNotFound (InvalidSpecError True, Ready False): spec.project names no
	// Project, or an invalid one.
	ReasonProjectNotFound = "ProjectNotFound"
	// ReasonNotPermitted (InvalidSpecError True, Ready False): the Project does not allow the
	// Application's namespace, a source or the destination.
	ReasonNotPermitted = "NotPermitted"
	// ReasonSyncWindow (SyncBlocked True): a sync window stops syncs.
	ReasonSyncWindow = "SyncWindow"
	// ReasonTakeoverRefused (SharedResourceWarning True): another Application renders an
	// object this one tracks, and the Projects do not let it take the object over; or this
	// Application renders an object another one tracks.
	ReasonTakeoverRefused = "TakeoverRefused"
)

// Application condition reasons set by the sync engine. Ready is derived from the others, the
// most important first: ComparisonFailed, SyncFailed, Syncing, OutOfSync, NotHealthy.
const (
	// ReasonSyncedAndHealthy (Ready True): the live state matches Git and every resource is
	// healthy.
	ReasonSyncedAndHealthy = "SyncedAndHealthy"
	// ReasonOutOfSync (Ready False): the live state differs from Git.
	ReasonOutOfSync = "OutOfSync"
	// ReasonSyncing (Ready False, Reconciling True): an operation is running; the message is
	// the operation's.
	ReasonSyncing = "Syncing"
	// ReasonSyncFailed (Ready False, SyncError True): the last operation failed, or it waits to
	// retry a failed attempt.
	ReasonSyncFailed = "SyncFailed"
	// ReasonComparisonFailed (Ready False, ComparisonError True): the source could not be
	// fetched or rendered, an ignore rule is invalid, or the cluster could not be read.
	ReasonComparisonFailed = "ComparisonFailed"
	// ReasonNotHealthy (Ready False): synced, but a resource is not healthy.
	ReasonNotHealthy = "NotHealthy"
	// ReasonEmptyRender (SyncError True): automated sync refused a source that renders no
	// objects, because syncing it would prune every resource.
	ReasonEmptyRender = "EmptyRender"
	// ReasonSharedResource (SharedResourceWarning True): an object is also tracked by another
	// Application.
	ReasonSharedResource = "SharedResource"
)

// Cluster Ready condition reasons.
const (
	// ReasonConnected: the last probe reached the API server and read its version.
	ReasonConnected = "Connected"
	// ReasonUnreachable: the API server did not answer.
	ReasonUnreachable = "Unreachable"
	// ReasonUnauthorized: the API server refused the credentials.
	ReasonUnauthorized = "Unauthorized"
	// ReasonInvalidKubeconfig: the kubeconfig Secret is missing or cannot be parsed.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
)

// Annotations and labels navarch reads and writes. The argocd.argoproj.io equivalents of the
// manifest annotations are honoured too, because users' repositories already carry them.
const (
	AnnotationSyncWave         = "navarch.io/sync-wave"
	AnnotationHook             = "navarch.io/hook"
	AnnotationHookDeletePolicy = "navarch.io/hook-delete-policy"
	AnnotationSyncOptions      = "navarch.io/sync-options"
	AnnotationCompareOptions   = "navarch.io/compare-options"
	AnnotationTrackingID       = "navarch.io/tracking-id"
	AnnotationRefresh          = "navarch.io/refresh"

	// AnnotationCreatedBy marks a Namespace that navarch created for an Application
	// (CreateNamespace=true) with `<app namespace>/<app name>`; the Application's
	// status.createdNamespace records it too. Deleting the Application deletes the Namespace
	// only while both say so.
	AnnotationCreatedBy = "navarch.io/created-by"

	ArgoAnnotationSyncWave         = "argocd.argoproj.io/sync-wave"
	ArgoAnnotationHook             = "argocd.argoproj.io/hook"
	ArgoAnnotationHookDeletePolicy = "argocd.argoproj.io/hook-delete-policy"
	ArgoAnnotationSyncOptions      = "argocd.argoproj.io/sync-options"
	ArgoAnnotationCompareOptions   = "argocd.argoproj.io/compare-options"

	// LabelApplicationSet is set on every generated Application to its ApplicationSet's name.
	// AnnotationOperation marks a hook instance with the id of the operation attempt that
	// created it.
	AnnotationOperation = "navarch.io/operation"
	// AnnotationTerminateOperation on an Application asks the controller to terminate its
	// running operation.
	AnnotationTerminateOperation = "navarch.io/terminate-operation"
	// AnnotationAutomatedSyncPaused on an Application pauses its automated sync; a rollback
	// sets it, and removing it re-enables automated sync.
	AnnotationAutomatedSyncPaused = "navarch.io/automated-sync-paused"
	// AnnotationPruneConfirmed on an Application confirms the prune of resources marked
	// Prune=confirm in the running operation.
	AnnotationPruneConfirmed = "navarch.io/prune-confirmed"

	LabelApplicationSet = "navarch.io/applicationset"

	// FinalizerResources makes deleting an Application delete its resources first.
	FinalizerResources = "navarch.io/resources-finalizer"

	// FinalizerHook keeps a hook instance until navarch has recorded its outcome, so that
	// ttlSecondsAfterFinished or a garbage collector cannot remove it first.
	FinalizerHook = "navarch.io/hook-finalizer"
)
