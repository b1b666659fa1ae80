// Package engine is navarch's per-cluster reconciler of one Application: it compares the
// Application's rendered manifests with the live cluster (server-side dry runs, ignore rules,
// health) and runs sync operations.
//
// A sync operation is a plan of tasks — apply each desired object, wave by wave in kind
// order, then prune what left Git — that the engine advances pass by pass. A pass runs a short
// list of steps (gate retry, select, plan, terminate, SyncFail hooks, project, create
// namespace, validate, dry run, run groups, finish), each ending in a typed outcome: proceed to
// the next step, wait (for a watch event, or for a timer), fail the attempt, or end the
// operation.
// Everything the operation has done is recorded in status.operationState, so each Reconcile
// continues where the last one stopped: after a wait, or after a controller restart.
//
// Timed behaviour never rides on the Git poll: a wait ends on a watch event of the objects or
// the Application (a hook completing, a wave turning healthy, a prune confirmation), or on its
// own timer, returned as Result.RequeueAfter, for what no watch announces (a retry at
// nextRetryAt, the kind of a new CRD being served, the selfHeal backoff).
//
// The engine works on the Application object it is given and changes only its status; the
// caller persists it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/diff"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/project"
)

// Options configure an Engine.
type Options struct {
	// Source fetches and renders manifests.
	Source *source.Fetcher
	// SelfHealBackoff is how long after a sync selfHeal waits before correcting drift again.
	// Default 2s.
	SelfHealBackoff time.Duration
	// Now returns the current time; tests may replace it.
	Now func() time.Time
	// Projects says what each Application's Project allows; nil allows everything.
	Projects Projects
}

// Engine reconciles Applications. It is safe for concurrent use by the workers of every
// cluster; it keeps only caches.
type Engine struct {
	opts      Options
	dryRuns   dryRunCache
	takeovers takeovers
	quiet     quietPasses
}

// New returns an Engine.
func New(opts Options) *Engine {
	if opts.SelfHealBackoff <= 0 {
		opts.SelfHealBackoff = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Engine{opts: opts}
}

// Result tells the caller what to do after Reconcile.
type Result struct {
	// RequeueAfter asks for another Reconcile after this long even without events; 0 means
	// only on events.
	RequeueAfter time.Duration
	// ClearOperation asks the caller to remove the Application's `operation` field: the
	// operation it requested has started, or was dropped because another one runs. The
	// caller clears it before it writes the status that records the operation, so that
	// whoever sees the operation sees the request gone.
	ClearOperation bool
	// Annotations asks the caller to set (non-empty value) or remove (empty value)
	// annotations of the Application. Set annotations (the pause of a rollback) are written
	// with the cleared request, before the status; removals acknowledge what the status
	// records (a termination, a prune confirmation) and are written after it.
	Annotations map[string]string
	// Quiet says the pass compared nothing and changed nothing: the Application, its commit
	// and its objects are as an earlier pass that had nothing to do left them (see quiet.go).
	Quiet bool

	settled *quietPass // a pass with nothing to do, for Settled once its status is written
}

const (
	// fetchErrorWait is how soon, at the latest, an Application whose source could not be
	// fetched or rendered looks again; sooner when the Git poll is shorter, since a commit
	// that fixes the source is seen at the next poll.
	fetchErrorWait = 30 * time.Second
	// startWait is how soon a started operation runs its steps: at once, in the pass after
	// the one that recorded its start.
	startWait = time.Millisecond
)

// Reconcile compares app with the cluster behind dest, records the comparison in app.Status,
// and starts or advances a sync operation. refresh forces a new Git lookup.
//
// Result.RequeueAfter is the sooner of the next Git poll and the operation's or selfHeal's own
// timer.
func (e *Engine) Reconcile(ctx context.Context, app *navarchv1.Application, dest *clustercache.Remote, refresh bool) (Result, error) {
	remote := clusterOf(dest)
	now := metav1.NewTime(e.opts.Now())
	st := &app.Status
	st.ReconciledAt = &now
	res := Result{}
	key := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	pass := passOf(key, app, dest)

	pol, err := e.policyOf(ctx, app, remote)
	if err != nil {
		if !project.IsRefusal(err) {
			return res, err
		}
		e.refuse(app, err, &res)
		return res, nil
	}
	removeCondition(app, navarchv1.ApplicationInvalidSpecError)
	ig, err := diff.CompileIgnore(app.Spec.IgnoreDifferences)
	if err != nil {
		e.comparisonFailed(app, err)
		return res, nil
	}
	manifests, err := e.fetch(ctx, app, remote, pol, nil, nil, refresh)
	if err != nil {
		e.comparisonFailed(app, err)
		return Result{RequeueAfter: min(fetchErrorWait, e.opts.Source.PollInterval())}, nil
	}
	res.RequeueAfter = manifests.NextPoll
	pass.saw(manifests, pol)
	if !refresh && e.stillQuiet(key, pass) {
		return Result{RequeueAfter: manifests.NextPoll, Quiet: true}, nil
	}
	opts := e.syncOptions(app)
	desired, hooks, err := e.prepare(app, remote, manifests.Objects, opts)
	if err != nil {
		e.comparisonFailed(app, err)
		return res, nil
	}
	pol.police(app, desired, hooks)
	cmp := e.compare(ctx, app, remote, desired, ig, opts)
	e.checkTakeovers(ctx, app, pol, cmp.resources)
	cmp.commit, cmp.revisions, cmp.hooks, cmp.pol = manifests.Commit, revisionsOf(app, nil, manifests.Commit), hooks, pol
	e.recordTakeovers(app, cmp, dest.Enqueue)
	e.recordComparison(app, cmp)

	// Start an operation: asked for, or automated, as the sync windows allow.
	gate := pol.gate(app, e.opts.Now())
	windowWait := false
	started := false
	switch {
	case app.Operation != nil && app.Operation.InitiatedBy.Automated && !gate.Automated:
		// A requested sync marked automated (a rollout step's) waits for the window, its
		// request kept.
		windowWait = true
	case app.Operation != nil:
		res.ClearOperation = true
		if st.OperationState == nil || st.OperationState.Phase != navarchv1.OperationRunning {
			started = true
			if !gate.Manual {
				// Recorded at no commit: a refused request does not count as a sync of this
				// commit, which automated sync then starts once the window allows.
				e.startOperation(app, *app.Operation, "")
				e.finish(app, navarchv1.OperationFailed, "sync refused: "+gate.Reason+"; manual syncs need manualSync on the windows that stop them")
				break
			}
			if pause := e.startRequested(ctx, app, remote, pol, manifests.Commit); pause != "" {
				res.Annotations = map[string]string{navarchv1.AnnotationAutomatedSyncPaused: pause}
			}
		}
	default:
		e.supersede(app, cmp)
		op, wait := e.automatedOperation(app, cmp, manifests.Objects)
		switch {
		case op != nil && !gate.Automated:
			windowWait = true
		case op != nil:
			e.startOperation(app, *op, manifests.Commit)
			// Without hooks, an automated operation that a crash loses before its start is
			// recorded is simply started again: applying and pruning are idempotent.
			started = len(hooks) > 0
		case wait > 0:
			res.RequeueAfter = min(res.RequeueAfter, wait)
		}
	}
	blocked(app, gate, windowWait)
	if d := e.untilChange(gate); windowWait && d > 0 {
		res.RequeueAfter = min(res.RequeueAfter, d)
	}

	switch state := st.OperationState; {
	case state == nil || state.Phase != navarchv1.OperationRunning:
	case started:
		// A requested operation, or an automated one with hooks, runs from the pass after the
		// one that started it, once the caller has recorded the start (and cleared the
		// request). The cluster then changes only for an operation the status records: a hook
		// runs once per attempt, and a request that a crash dropped has applied nothing.
		res.RequeueAfter = min(res.RequeueAfter, startWait)
	default:
		_, terminate := app.Annotations[navarchv1.AnnotationTerminateOperation]
		after, err := e.runOperation(ctx, app, remote, cmp, terminate)
		if err != nil {
			return res, err
		}
		if after > 0 {
			res.RequeueAfter = min(res.RequeueAfter, after)
		}
		if st.OperationState.Phase == navarchv1.OperationSucceeded {
			e.compareAfterSync(ctx, app, remote, pol, manifests, ig)
		}
	}
	if _, ok := app.Annotations[navarchv1.AnnotationTerminateOperation]; ok {
		if res.Annotations == nil {
			res.Annotations = map[string]string{}
		}
		res.Annotations[navarchv1.AnnotationTerminateOperation] = "" // handled, or nothing to terminate
	}
	if state := st.OperationState; state != nil && state.Phase != navarchv1.OperationRunning {
		if _, ok := app.Annotations[navarchv1.AnnotationPruneConfirmed]; ok {
			if res.Annotations == nil {
				res.Annotations = map[string]string{}
			}
			res.Annotations[navarchv1.AnnotationPruneConfirmed] = "" // a confirmation holds for one operation
		}
	}
	setReady(app)
	if !refresh && quiet(app, cmp, res, gate, manifests.NextPoll) {
		res.settled = &pass
	}
	return res, nil
}

// compareAfterSync records the comparison of an operation that succeeded in this pass as the
// next pass would make it, reading the objects the pass applied as the server returned them.
// Without it the status would say OutOfSync (the comparison made before the sync) until the
// watch caches have the objects and another pass runs, which, with thousands of Applications
// syncing, queues behind all their first passes; and it would cost a second status write. The
// next pass finds the same from the caches, and writes nothing.
func (e *Engine) compareAfterSync(ctx context.Context, app *navarchv1.Application, remote *cluster, pol *policy, manifests *source.Manifests, ig *diff.Ignore) {
	opts := e.syncOptions(app) // without the finished operation's options, as the next pass
	desired, hooks, err := e.prepare(app, remote, manifests.Objects, opts)
	if err != nil {
		return // the first comparison found the same and recorded it
	}
	pol.police(app, desired, hooks)
	cmp := e.compare(ctx, app, remote.asWritten(), desired, ig, opts)
	cmp.commit, cmp.revisions = manifests.Commit, revisionsOf(app, nil, manifests.Commit)
	e.recordComparison(app, cmp)
}

// startRequested starts the operation of app.operation: a sync (of spec.source at the
// compared commit, or of an explicit revision or source), or a rollback to a history entry.
// For a rollback it returns the value of the annotation that pauses automated sync.
func (e *Engine) startRequested(ctx context.Context, app *navarchv1.Application, remote *cluster, pol *policy, commit string) (pause string) {
	op := *app.Operation
	if rb := op.Rollback; rb != nil {
		i := slices.IndexFunc(app.Status.History, func(h navarchv1.RevisionHistory) bool { return h.ID == rb.ID })
		if i < 0 {
			e.startOperation(app, op, "")
			e.finish(app, navarchv1.OperationFailed, fmt.Sprintf("operation.rollback.id: no history entry %d", rb.ID))
			return ""
		}
		h := app.Status.History[i]
		op.Sync = &navarchv1.SyncOperation{Revision: h.Revision}
		if len(h.Sources) > 0 {
			op.Sync.Sources, op.Sync.Revisions = h.Sources, h.Revisions
		} else {
			op.Sync.Source = new(h.Source)
		}
		pause = fmt.Sprintf("rolled back to history entry %d (%s); remove this annotation to resume automated sync", h.ID, source.ShortRevision(h.Revision))
	}
	if op.Sync == nil {
		op.Sync = &navarchv1.SyncOperation{}
	}
	if op.Sync.Revision != "" || len(op.Sync.Revisions) > 0 || op.Sync.GetSources() != nil {
		sources := op.Sync.GetSources()
		if sources == nil {
			sources = app.Spec.GetSources()
		}
		revisions, err := requestedRevisions(op.Sync, len(sources))
		if err == nil {
			err = pol.checkSources(app, sources)
		}
		if err == nil {
			var at *source.Manifests
			if at, err = e.fetch(ctx, app, remote, pol, sources, revisions, false); err == nil {
				commit = at.Commit
			}
		}
		if err != nil {
			e.startOperation(app, op, "")
			e.finish(app, navarchv1.OperationFailed, err.Error())
			return ""
		}
	}
	e.startOperation(app, op, commit)
	return pause
}

// supersede ends an automated operation that waits to retry an older commit once a newer one
// is compared: the newer commit gets its own operation.
func (e *Engine) supersede(app *navarchv1.Application, c *comparison) {
	state := app.Status.OperationState
	if state == nil || state.Phase != navarchv1.OperationRunning || state.NextRetryAt == nil ||
		!state.Operation.InitiatedBy.Automated || state.SyncResult.Revision == c.commit {
		return
	}
	e.finish(app, navarchv1.OperationFailed, fmt.Sprintf("superseded by commit %s; last error: %s", source.ShortRevision(c.commit), state.Message))
}

// syncOptions are the Application's sync options.
func (e *Engine) syncOptions(app *navarchv1.Application) syncOptions {
	var lists [][]navarchv1.SyncOption
	if p := app.Spec.SyncPolicy; p != nil {
		lists = append(lists, p.SyncOptions)
	}
	if os := app.Status.OperationState; os != nil && os.Phase == navarchv1.OperationRunning && os.Operation.Sync != nil {
		lists = append(lists, os.Operation.Sync.SyncOptions)
	}
	return parseSyncOptions(lists...)
}

// comparisonFailed records that the Application could not be compared with Git.
func (e *Engine) comparisonFailed(app *navarchv1.Application, err error) {
	app.Status.Sync.Status = navarchv1.SyncStatusUnknown
	if app.Status.Health.Status == "" {
		app.Status.Health = navarchv1.HealthStatus{Status: navarchv1.HealthUnknown}
	}
	setCondition(app, navarchv1.ApplicationComparisonError, metav1.ConditionTrue, navarchv1.ReasonComparisonFailed, err.Error())
	setReady(app)
}

// recordComparison writes a comparison into the Application's status.
func (e *Engine) recordComparison(app *navarchv1.Application, c *comparison) {
	st := &app.Status
	st.Sync = navarchv1.SyncStatus{Status: c.sync, Revision: c.commit, Revisions: c.revisions}
	st.Health = c.health
	resources := make([]navarchv1.ResourceStatus, 0, len(c.resources))
	for _, r := range c.resources {
		rs := navarchv1.ResourceStatus{
			ResourceRef:     r.ref,
			Status:          r.status,
			Health:          r.health,
			SyncWave:        r.wave,
			RequiresPruning: r.prune,
			Message:         truncate(r.message, 512),
		}
		resources = append(resources, rs)
	}
	st.Resources = resources
	if len(c.errors) > 0 {
		setCondition(app, navarchv1.ApplicationComparisonError, metav1.ConditionTrue, navarchv1.ReasonComparisonFailed, truncate(strings.Join(c.errors, "; "), 2048))
	} else {
		removeCondition(app, navarchv1.ApplicationComparisonError)
	}
	refused := e.takeovers.of(types.NamespacedName{Namespace: app.Namespace, Name: app.Name})
	for _, r := range c.resources {
		if te := (*takeoverError)(nil); errors.As(r.forbidden, &te) {
			refused = append(refused, te.Error())
		}
	}
	switch {
	case len(refused) > 0:
		setCondition(app, navarchv1.ApplicationSharedResourceWarning, metav1.ConditionTrue, navarchv1.ReasonTakeoverRefused, truncate(strings.Join(slices.Concat(refused, c.shared), "; "), 2048))
	case len(c.shared) > 0:
		setCondition(app, navarchv1.ApplicationSharedResourceWarning, metav1.ConditionTrue, navarchv1.ReasonSharedResource, truncate(strings.Join(c.shared, "; "), 2048))
	default:
		removeCondition(app, navarchv1.ApplicationSharedResourceWarning)
	}
	setReady(app)
}

// automatedOperation returns the operation automated sync starts now, if any; otherwise how
// long until selfHeal may act.
func (e *Engine) automatedOperation(app *navarchv1.Application, c *comparison, rendered []*unstructured.Unstructured) (*navarchv1.Operation, time.Duration) {
	p := app.Spec.SyncPolicy
	if p == nil || p.Automated == nil || c.sync != navarchv1.SyncStatusOutOfSync || len(c.errors) > 0 {
		return nil, 0
	}
	if _, paused := app.Annotations[navarchv1.AnnotationAutomatedSyncPaused]; paused {
		return nil, 0
	}
	last := app.Status.OperationState
	if last != nil && last.Phase == navarchv1.OperationRunning {
		return nil, 0
	}
	if last != nil && last.Operation.Sync != nil && last.Operation.Sync.DryRun {
		last = nil // a dry run changed nothing: it does not count as a sync of its commit
	}
	if !actionable(c, p.Automated.Prune) {
		return nil, 0 // only objects that may not be pruned differ: a sync would change nothing
	}
	if last != nil && last.SyncResult != nil && last.SyncResult.Revision == c.commit {
		if last.Phase != navarchv1.OperationSucceeded {
			return nil, 0 // a failed sync of this commit is retried by the retry policy only
		}
		if !p.Automated.SelfHeal {
			return nil, 0
		}
		if last.FinishedAt != nil {
			if wait := last.FinishedAt.Add(e.opts.SelfHealBackoff).Sub(e.opts.Now()); wait > 0 {
				return nil, wait
			}
		}
	}
	if p.Automated.Prune && !p.Automated.AllowEmpty && len(rendered) == 0 && len(app.Status.Resources) > 0 {
		setCondition(app, navarchv1.ApplicationSyncError, metav1.ConditionTrue, navarchv1.ReasonEmptyRender,
			"automated sync refused: the source renders no objects, and syncing would prune every resource; set syncPolicy.automated.allowEmpty to allow it")
		setReady(app)
		return nil, 0
	}
	return &navarchv1.Operation{
		Sync:        &navarchv1.SyncOperation{Revision: c.commit, Revisions: c.revisions, Prune: p.Automated.Prune},
		InitiatedBy: navarchv1.OperationInitiator{Automated: true},
	}, 0
}

// actionable reports whether a sync would change something: a desired object differs, or an
// object to prune may be pruned.
func actionable(c *comparison, prune bool) bool {
	for _, r := range c.resources {
		if r.status != navarchv1.SyncStatusOutOfSync {
			continue
		}
		if !r.prune || (prune && !r.options.off("Prune")) {
			return true
		}
	}
	return false
}

// startOperation records a new running operation at commit.
func (e *Engine) startOperation(app *navarchv1.Application, op navarchv1.Operation, commit string) {
	if op.Sync == nil {
		op.Sync = &navarchv1.SyncOperation{}
	}
	if app.Spec.HasMultipleSources() && op.Sync.GetSources() == nil {
		// The operation syncs the sources it started with, even if spec.sources changes
		// while it runs: its revisions are theirs, by position.
		op.Sync.Sources = slices.Clone(app.Spec.Sources)
	}
	state := &navarchv1.OperationState{
		Operation:  op,
		Phase:      navarchv1.OperationRunning,
		Message:    "sync started",
		StartedAt:  metav1.NewTime(e.opts.Now()),
		SyncResult: &navarchv1.SyncOperationResult{Revision: commit, Revisions: revisionsOf(app, op.Sync.GetSources(), commit)},
	}
	state.ID = attemptID(app, state)
	app.Status.OperationState = state
}

// fetch renders the Application's sources (or those given, for an operation that names its
// own) at revision ("" for their targetRevisions; several sources' revisions joined), as a
// Helm release named after the Application in its destination namespace, on remote.
func (e *Engine) fetch(ctx context.Context, app *navarchv1.Application, remote *cluster, pol *policy, sources []navarchv1.ApplicationSource, revisions []string, refresh bool) (*source.Manifests, error) {
	if sources == nil {
		sources = app.Spec.GetSources()
	}
	return e.opts.Source.FetchSources(ctx, source.Request{
		Sources:         sources,
		Revisions:       revisions,
		Refresh:         refresh,
		ReleaseName:     app.Name,
		Namespace:       app.Spec.Destination.Namespace,
		Capabilities:    remote.Capabilities,
		AllowRepository: pol.allowRepository,
	})
}

// requestedRevisions are the revisions a sync operation asks for, one per source: its
// revisions, or its revision (for several sources, the revisions joined by commas, as status
// and history record them). Their number must match the sources'.
func requestedRevisions(sync *navarchv1.SyncOperation, sources int) ([]string, error) {
	switch {
	case len(sync.Revisions) > 0:
		if len(sync.Revisions) != sources {
			return nil, fmt.Errorf("operation.sync.revisions: %d revisions for %d sources", len(sync.Revisions), sources)
		}
		return sync.Revisions, nil
	case sync.Revision == "":
		return nil, nil
	case sources == 1:
		return []string{sync.Revision}, nil
	}
	revisions := source.SplitRevisions(sync.Revision, sources)
	if len(revisions) != sources {
		return nil, fmt.Errorf("operation.sync.revision %q: the Application has %d sources; give one revision per source in operation.sync.revisions", sync.Revision, sources)
	}
	return revisions, nil
}

// revisionsOf is the revision of each source for status and history: nil for an
// Application with spec.source, one per source with spec.sources.
func revisionsOf(app *navarchv1.Application, sources []navarchv1.ApplicationSource, revision string) []string {
	if sources == nil {
		if !app.Spec.HasMultipleSources() {
			return nil
		}
		sources = app.Spec.Sources
	}
	if len(sources) == 1 && !app.Spec.HasMultipleSources() {
		return nil
	}
	return source.SplitRevisions(revision, len(sources))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
