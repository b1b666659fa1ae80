package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/diff"
	"github.com/navarch-io/navarch/fleet/health"
	"github.com/navarch-io/navarch/fleet/source"
)

// crdWait is how soon an operation waiting for a CRD looks again without an event: the
// RESTMapper learns new kinds by rediscovery, which no watch announces.
const crdWait = 2 * time.Second

// operation is one pass over the running operation of an Application. Its steps run in
// order, each ending in an outcome; what they find out for the later steps is kept here.
type operation struct {
	e         *Engine
	app       *navarchv1.Application
	state     *navarchv1.OperationState
	remote    *cluster
	cmp       *comparison // this pass's comparison of the Application
	terminate bool        // the Application asks for the operation to be terminated

	opts  syncOptions // the Application's and the operation's sync options
	apply []*resource // selectResources: the objects to apply
	prune []*resource // selectResources: the objects to prune
	hooks []*resource // selectResources: the hooks to run
	plan  *plan       // planTasks: the attempt's tasks in order
	// selfValidating is the object whose dry run createNamespace left out: nothing of the
	// attempt comes before its apply, so the apply itself tells whether the server accepts it.
	selfValidating *resource
}

// step is one step of an operation pass.
type step struct {
	name string
	run  func(context.Context) (outcome, error)
}

// steps are the steps of an operation pass, in order. Each either lets the next one run
// (proceed), or ends the pass: the operation waits, the attempt failed, or the operation
// ended.
func (op *operation) steps() []step {
	return []step{
		{"gate retry", op.gateRetry},
		{"select", op.selectResources},
		{"plan", op.planTasks},
		{"terminate", op.terminateIfAsked},
		{"SyncFail hooks", op.runSyncFail},
		{"project", op.checkProject},
		{"create namespace", op.createNamespace},
		{"validate", op.validate},
		{"dry run", op.endDryRun},
		{"run groups", op.runGroups},
		{"finish", op.succeed},
	}
}

// runOperation advances the running operation as far as it can go in this pass. It returns
// how soon to look again when the operation waits for a timer (a retry, a CRD to be served);
// 0 when only watch events end its wait. An error is transient: the pass is tried again with
// the cluster queue's backoff.
func (e *Engine) runOperation(ctx context.Context, app *navarchv1.Application, remote *cluster, cmp *comparison, terminate bool) (time.Duration, error) {
	out, err := e.operationPass(ctx, app, remote, cmp, terminate)
	if err != nil || out.kind != kindWait {
		return 0, err
	}
	return out.after, nil
}

// operationPass runs one pass of the running operation and returns how it ended.
func (e *Engine) operationPass(ctx context.Context, app *navarchv1.Application, remote *cluster, cmp *comparison, terminate bool) (outcome, error) {
	op := &operation{e: e, app: app, state: app.Status.OperationState, remote: remote, cmp: cmp, terminate: terminate}
	return op.run(ctx)
}

// run runs the steps until one ends the pass, and returns that step's outcome; a failed
// attempt has been turned into a retry, SyncFail hooks or the end of the operation.
func (op *operation) run(ctx context.Context) (outcome, error) {
	log := ctrl.LoggerFrom(ctx).V(1)
	for _, s := range op.steps() {
		out, err := s.run(ctx)
		if err != nil {
			return outcome{}, err
		}
		if out.kind == kindFail {
			log.Info("Operation attempt failed", "step", s.name, "reason", out.message)
			if out, err = op.fail(ctx, out.message); err != nil {
				return outcome{}, err
			}
		}
		switch out.kind {
		case kindProceed:
			continue
		case kindWait:
			if out.message != "" {
				op.state.Message = truncate(out.message, 4096)
			}
			log.Info("Operation waits", "step", s.name, "for", out.reason.String(), "after", out.after)
		}
		return out, nil
	}
	return operationEnded(), nil // not reached: the last step ends the operation
}

// gateRetry holds a failed attempt's retry until nextRetryAt, on a timer, and then starts the
// new attempt. A termination does not wait.
func (op *operation) gateRetry(context.Context) (outcome, error) {
	if at := op.state.NextRetryAt; at != nil {
		if d := at.Sub(op.e.opts.Now()); d > 0 && !op.terminate {
			return waitTimer(waitRetry, "", d), nil
		}
		op.state.NextRetryAt = nil
	}
	if op.state.ID == "" { // recorded by a controller of an earlier version
		op.state.ID = attemptID(op.app, op.state)
	}
	return proceed(), nil
}

// selectResources finds the objects of the operation's commit: those of this pass's
// comparison, or, for an operation of another commit or source (an explicit revision, a
// rollback), those of a comparison of that one. A partial sync keeps the resources it names
// and runs no hooks; a sync without prune records the objects it leaves.
func (op *operation) selectResources(ctx context.Context) (outcome, error) {
	sync, revision := op.state.Operation.Sync, op.state.SyncResult.Revision
	op.opts = op.e.syncOptions(op.app)
	resources, hooks := op.cmp.resources, op.cmp.hooks
	if sources := sync.GetSources(); revision != op.cmp.commit || (sources != nil && !equality.Semantic.DeepEqual(sources, op.app.Spec.GetSources())) {
		if sources == nil {
			sources = op.app.Spec.GetSources()
		}
		revisions := op.state.SyncResult.Revisions
		if len(revisions) != len(sources) {
			revisions = source.SplitRevisions(revision, len(sources)) // resolved revisions hold no commas
		}
		if err := op.cmp.pol.checkSources(op.app, sources); err != nil {
			return failure(err.Error()), nil // the Project changed since the operation started
		}
		manifests, err := op.e.fetch(ctx, op.app, op.remote, op.cmp.pol, sources, revisions, false)
		if err != nil {
			return failuref("fetch revision %s: %v", revision, err), nil
		}
		desired, h, err := op.e.prepare(op.app, op.remote, manifests.Objects, op.opts)
		if err != nil {
			return failure(err.Error()), nil
		}
		op.cmp.pol.police(op.app, desired, h)
		resources, hooks = op.e.compare(ctx, op.app, op.remote, desired, op.cmp.ignore, op.opts).resources, h
		op.e.checkTakeovers(ctx, op.app, op.cmp.pol, resources)
	}
	for _, r := range resources {
		if r.prune {
			op.prune = append(op.prune, r)
		} else {
			op.apply = append(op.apply, r)
		}
	}
	if selected := sync.Resources; len(selected) > 0 {
		op.apply = slices.DeleteFunc(op.apply, func(r *resource) bool { return !selects(selected, r) })
		op.prune = slices.DeleteFunc(op.prune, func(r *resource) bool { return !selects(selected, r) })
		hooks = nil
	}
	if !sync.Prune {
		for _, r := range op.prune {
			t := &task{res: r, phase: navarchv1.SyncPhaseSync}
			if op.e.result(op.state, t) == nil {
				op.e.record(op.state, t, navarchv1.ResultPruneSkipped, "pruning is disabled for this sync")
			}
		}
		op.prune = nil
	}
	op.hooks = hooks
	return proceed(), nil
}

// planTasks orders the attempt's tasks.
func (op *operation) planTasks(context.Context) (outcome, error) {
	op.plan = buildPlan(op.app, op.apply, op.prune, op.hooks, op.state.ID, op.opts)
	return proceed(), nil
}

// terminateIfAsked ends the operation Failed "terminated" when the Application asks for it,
// deleting the hook instances still running.
func (op *operation) terminateIfAsked(ctx context.Context) (outcome, error) {
	if !op.terminate {
		return proceed(), nil
	}
	if err := op.e.terminateHooks(ctx, op.app, op.remote, op.plan.all); err != nil {
		return outcome{}, err
	}
	op.e.finish(op.app, navarchv1.OperationFailed, "terminated")
	return operationEnded(), nil
}

// runSyncFail runs the SyncFail hooks of an attempt that failed for good (state.failure), then
// ends the operation Failed. The hooks' watch events bring the passes in between.
func (op *operation) runSyncFail(ctx context.Context) (outcome, error) {
	msg := op.state.Failure
	if msg == "" {
		return proceed(), nil
	}
	for _, t := range op.plan.syncFail {
		if t.res.forbidden != nil {
			msg += fmt.Sprintf("; SyncFail hook not run: %v", t.res.forbidden)
			continue
		}
		phase, hookMsg, err := op.e.advanceHook(ctx, op.app, op.remote, t)
		if err != nil {
			return outcome{}, err
		}
		switch phase {
		case navarchv1.HookSucceeded:
		case navarchv1.HookFailed, navarchv1.HookError:
			op.e.recordHook(op.state, t, navarchv1.HookFailed, hookMsg)
			msg += fmt.Sprintf("; SyncFail hook %s %s failed: %s", t.res.ref.Kind, t.res.ref.Name, hookMsg)
		default:
			return waitEvent(waitHook, "running SyncFail hooks after: "+truncate(op.state.Failure, 3000)), nil
		}
	}
	op.state.Failure = ""
	if err := op.e.cleanupHooks(ctx, op.remote, op.plan.syncFail, false); err != nil {
		return outcome{}, err
	}
	op.e.finish(op.app, navarchv1.OperationFailed, msg)
	return operationEnded(), nil
}

// checkProject fails the attempt, before anything (even the namespace) is created, when the
// Project does not allow an object or a hook of the plan.
func (op *operation) checkProject(context.Context) (outcome, error) {
	var problems []string
	for _, t := range op.plan.all {
		switch {
		case t.prune || t.res.forbidden == nil || op.done(t):
		case t.isHook():
			problems = append(problems, fmt.Sprintf("%s hook %v", t.phase, t.res.forbidden))
		default:
			problems = append(problems, t.res.forbidden.Error())
		}
	}
	if len(problems) == 0 {
		return proceed(), nil
	}
	return op.refuse(problems), nil
}

// createNamespace creates the destination namespace with CreateNamespace=true, before the
// validation, so that the objects in it can be dry-run like the others. A namespace it creates
// is marked as this Application's and recorded in status.createdNamespace, so that deleting
// the Application deletes it too; one the source holds is left to the source, which tracks it.
func (op *operation) createNamespace(ctx context.Context) (outcome, error) {
	if !op.opts.on("CreateNamespace") || op.state.Operation.Sync.DryRun {
		return proceed(), nil
	}
	ns := op.app.Spec.Destination.Namespace
	needed := len(op.apply) == 0 // nothing compared tells whether it exists
	inSource := false
	for _, r := range op.apply {
		needed = needed || (r.missingNamespace && r.ref.Namespace == ns)
		inSource = inSource || (r.ref.Group == "" && r.ref.Kind == "Namespace" && r.ref.Name == ns)
	}
	if !needed {
		return proceed(), nil
	}
	createdBy := ""
	if !inSource {
		createdBy = types.NamespacedName{Namespace: op.app.Namespace, Name: op.app.Name}.String()
	}
	created, err := op.e.createNamespace(ctx, op.remote, ns, createdBy)
	if transient(err) {
		return outcome{}, err
	}
	if err != nil {
		return failure(err.Error()), nil
	}
	if created && createdBy != "" {
		op.app.Status.CreatedNamespace = ns
	}
	// The objects in it could not be dry-run before it existed: dry-run them now. So are
	// they when it existed after all (created meanwhile by someone else, or not yet seen by
	// the cache the comparison asked). In a namespace this sync created, the object applied
	// first when nothing has been applied yet is left out: if the server refuses it, its
	// apply fails before anything else is applied, which is what its dry run would have
	// found. That saves one request of each new Application's first sync.
	var first *resource
	if t := op.firstTask(); created && t != nil && !changedCluster(op.state) {
		first = t.res
	}
	for _, r := range op.apply {
		if !r.missingNamespace || r.ref.Namespace != ns {
			continue
		}
		if r == first {
			r.missingNamespace = false
			op.selfValidating = r
			continue
		}
		if err := op.e.revalidate(ctx, op.remote, r, ignoreKey(op.app.Spec.IgnoreDifferences)); err != nil {
			return outcome{}, err
		}
	}
	return proceed(), nil
}

// confirmNamespaces asks the API server about each namespace the comparison found missing
// for an object the plan has still to apply: the comparison asked the cluster's watch of its
// namespaces, which may not have seen one created a moment ago, and a sync must not be
// refused, nor an object applied without its dry run, on that account. The objects of a
// namespace that exists are dry-run now.
func (op *operation) confirmNamespaces(ctx context.Context, pending []*resource) error {
	live := &namespaceCheck{remote: op.remote, live: true}
	for _, r := range pending {
		if !r.missingNamespace || r.ref.Namespace == "" || !live.exists(ctx, r.ref.Namespace) {
			continue
		}
		if err := op.e.revalidate(ctx, op.remote, r, ignoreKey(op.app.Spec.IgnoreDifferences)); err != nil {
			return err
		}
	}
	return nil
}

// refuse fails the attempt over problems found before an apply: "nothing was applied" while
// the attempt has not changed the cluster, "stopped before applying the rest" once it has.
func (op *operation) refuse(problems []string) outcome {
	if changedCluster(op.state) {
		return failure("stopped before applying the rest: " + strings.Join(problems, "; "))
	}
	return failure("nothing was applied: " + strings.Join(problems, "; "))
}

// firstTask is the plan's first task this attempt has still to run, when it applies an object
// (not a prune, not a hook); nil otherwise.
func (op *operation) firstTask() *task {
	for _, t := range op.plan.all {
		if op.done(t) {
			continue
		}
		if t.prune || t.isHook() {
			return nil
		}
		return t
	}
	return nil
}

// validate checks what is left of the plan before any of it is applied, in every pass, so a
// plan that cannot succeed fails before anything more is applied.
func (op *operation) validate(ctx context.Context) (outcome, error) {
	var pending []*resource
	for _, t := range op.plan.all {
		if !t.prune && !t.isHook() && !op.done(t) {
			pending = append(pending, t.res)
		}
	}
	if err := op.confirmNamespaces(ctx, pending); err != nil {
		return outcome{}, err
	}
	problems := op.e.validate(op.app, op.apply, pending)
	problems = append(problems, op.e.validateHooks(ctx, op.app, op.remote, op.plan, op.apply)...)
	if len(problems) == 0 {
		return proceed(), nil
	}
	return op.refuse(problems), nil
}

// endDryRun ends a dry-run operation once the validation has passed.
func (op *operation) endDryRun(context.Context) (outcome, error) {
	if !op.state.Operation.Sync.DryRun {
		return proceed(), nil
	}
	op.e.finish(op.app, navarchv1.OperationSucceeded, "dry run: the server accepts every object")
	return operationEnded(), nil
}

// runGroups runs the plan's groups of (phase, wave) in order. Every task of a group starts;
// the next group starts once the group's hooks have completed and, unless it is the last
// group, its objects are healthy.
func (op *operation) runGroups(ctx context.Context) (outcome, error) {
	for gi, group := range op.plan.groups {
		hooksRunning := proceed()
		for _, t := range group {
			if op.done(t) {
				continue
			}
			out, err := op.runTask(ctx, t)
			switch {
			case err != nil:
				return outcome{}, err
			case out.kind == kindWait && out.reason == waitHook:
				hooksRunning = out // the group's other tasks start meanwhile
			case out.kind != kindProceed:
				return out, nil
			}
		}
		if hooksRunning.kind != kindProceed {
			return hooksRunning, nil
		}
		if gi < len(op.plan.groups)-1 {
			if out, err := op.waveHealth(ctx, group); err != nil || out.kind != kindProceed {
				return out, err
			}
		}
	}
	return proceed(), nil
}

// runTask starts or advances one task.
func (op *operation) runTask(ctx context.Context, t *task) (outcome, error) {
	switch {
	case t.prune:
		return op.pruneTask(ctx, t)
	case t.isHook():
		return op.hookTask(ctx, t)
	default:
		return op.applyTask(ctx, t)
	}
}

// done reports whether a task needs nothing more in this attempt: it has succeeded, or it is an
// object in sync that ApplyOutOfSyncOnly leaves alone.
func (op *operation) done(t *task) bool {
	return op.e.done(op.state, t) || op.skipsInSync(t)
}

// skipsInSync reports whether ApplyOutOfSyncOnly leaves t's object alone: it is in sync and
// this attempt has not applied it.
func (op *operation) skipsInSync(t *task) bool {
	return !t.prune && !t.isHook() && op.opts.on("ApplyOutOfSyncOnly") &&
		t.res.status == navarchv1.SyncStatusSynced && op.e.result(op.state, t) == nil
}

// hookTask creates a hook instance or checks on it; its watch events end the wait.
func (op *operation) hookTask(ctx context.Context, t *task) (outcome, error) {
	phase, msg, err := op.e.advanceHook(ctx, op.app, op.remote, t)
	if err != nil {
		return outcome{}, err
	}
	switch phase {
	case navarchv1.HookFailed, navarchv1.HookError:
		op.e.recordHook(op.state, t, navarchv1.HookFailed, msg)
		return failuref("%s hook %s %s failed: %s", t.phase, t.res.ref.Kind, t.res.ref.Name, msg), nil
	case navarchv1.HookSucceeded:
		return proceed(), nil
	}
	return waitEvent(waitHook, fmt.Sprintf("waiting for %s hook %s %s: %s", t.phase, t.res.ref.Kind, t.res.ref.Name, msg)), nil
}

// applyTask applies one object. A custom resource whose CRD this sync applied waits, on a
// timer, until the cluster serves its kind.
func (op *operation) applyTask(ctx context.Context, t *task) (outcome, error) {
	r := t.res
	if r.mapping == nil {
		m, err := op.remote.Mapping(r.gvk)
		if m == nil {
			return waitTimer(waitCRD, fmt.Sprintf("waiting for the CustomResourceDefinition of %s to be established (%v)", r.gvk.GroupKind().String(), err), crdWait), nil
		}
		r.mapping = m
	}
	desired := r.obj
	if r.live != nil && r.options.on("RespectIgnoreDifferences") {
		desired = desired.DeepCopy()
		if err := op.cmp.ignore.RespectLive(desired, r.live); err != nil {
			op.e.record(op.state, t, navarchv1.ResultSyncFailed, err.Error())
			return failuref("%s %s failed to apply: %v", r.ref.Kind, r.ref.Name, err), nil
		}
	}
	out, err := op.e.apply(ctx, op.remote, r, desired)
	if transient(err) {
		op.state.Message = fmt.Sprintf("%s %s: %v (will retry)", r.ref.Kind, r.ref.Name, err)
		return outcome{}, err
	}
	if err != nil && r == op.selfValidating {
		// Refused as its dry run would have been: the attempt fails as validate fails it.
		return op.refuse([]string{fmt.Sprintf("%s %s: %v", r.ref.Kind, r.ref.Name, err)}), nil
	}
	if err != nil {
		op.e.record(op.state, t, navarchv1.ResultSyncFailed, err.Error())
		return failuref("%s %s failed to apply: %v", r.ref.Kind, r.ref.Name, err), nil
	}
	before := ""
	if r.live != nil {
		before = r.live.GetResourceVersion()
	}
	op.remote.recordWrite(r.mapping, r.ref.Namespace, r.ref.Name, before, out)
	if desired == r.obj {
		// What the server returned is what the watch will deliver: remember it as in sync, so
		// the next comparison costs no dry run.
		op.e.dryRuns.put(op.remote.Name+"/"+r.key(), diff.Hash(r.obj), diff.Hash(out), ignoreKey(op.app.Spec.IgnoreDifferences), diff.Result{Equal: true})
	}
	op.e.record(op.state, t, navarchv1.ResultSynced, "applied")
	return proceed(), nil
}

// waveHealth checks a group's objects before the next group starts: the operation waits until
// each is healthy (watch events of the objects end the wait) and fails on a Degraded one.
func (op *operation) waveHealth(ctx context.Context, group []*task) (outcome, error) {
	waiting := func(msg string) string {
		return fmt.Sprintf("waiting for %s wave %d to become healthy: %s", group[0].phase, group[0].wave, msg)
	}
	for _, t := range group {
		if t.prune || t.isHook() {
			continue // pruned objects are going; hooks have completed
		}
		r := t.res
		if r.mapping == nil {
			return waitTimer(waitHealth, waiting(fmt.Sprintf("%s %s is not served yet", r.ref.Kind, r.ref.Name)), crdWait), nil
		}
		live, err := op.remote.Live(ctx, r.mapping, r.ref.Namespace, r.ref.Name)
		if err != nil {
			return outcome{}, err
		}
		if live == nil {
			return waitEvent(waitHealth, waiting(fmt.Sprintf("%s %s is not in the cluster yet", r.ref.Kind, r.ref.Name))), nil
		}
		h := health.Assess(live)
		if h == nil {
			continue
		}
		switch h.Status {
		case navarchv1.HealthHealthy, navarchv1.HealthSuspended:
		case navarchv1.HealthDegraded:
			return failuref("%s %s is Degraded: %s", r.ref.Kind, r.ref.Name, h.Message), nil
		default:
			return waitEvent(waitHealth, waiting(fmt.Sprintf("%s %s is %s: %s", r.ref.Kind, r.ref.Name, h.Status, h.Message))), nil
		}
	}
	return proceed(), nil
}

// succeed ends the operation Succeeded once every group has run.
func (op *operation) succeed(ctx context.Context) (outcome, error) {
	if err := op.e.cleanupHooks(ctx, op.remote, op.plan.all, true); err != nil {
		return outcome{}, err
	}
	op.recordSkipped()
	op.e.finish(op.app, navarchv1.OperationSucceeded, "successfully synced")
	return operationEnded(), nil
}

// recordSkipped adds the objects that ApplyOutOfSyncOnly left alone to the results, as
// `already in sync`, in plan order among the others.
func (op *operation) recordSkipped() {
	results := op.state.SyncResult.Resources
	ofPlan := make([]bool, len(results))
	var ordered []navarchv1.ResourceResult
	for _, t := range op.plan.all {
		if i := resultIndex(op.state, t); i >= 0 {
			ofPlan[i] = true
			ordered = append(ordered, results[i])
		} else if op.skipsInSync(t) {
			ordered = append(ordered, navarchv1.ResourceResult{
				ResourceRef: t.res.ref, Status: navarchv1.ResultSynced, Message: "already in sync", SyncPhase: t.phase, SyncWave: t.wave,
			})
		}
	}
	// Results of no task of the plan (prunes the sync left out) were recorded first.
	out := make([]navarchv1.ResourceResult, 0, len(results))
	for i, r := range results {
		if !ofPlan[i] {
			out = append(out, r)
		}
	}
	out = append(out, ordered...)
	op.state.SyncResult.Resources = out
}

// fail ends the current attempt with msg. If the retry strategy allows one more attempt, the
// operation waits for it until nextRetryAt, on a timer; otherwise the SyncFail hooks run and
// the operation ends Failed.
func (op *operation) fail(ctx context.Context, msg string) (outcome, error) {
	state := op.state
	if op.plan != nil {
		if err := op.e.cleanupHooks(ctx, op.remote, op.plan.all, false); err != nil {
			return outcome{}, err
		}
	}
	if d, ok := op.e.retryAfter(op.app); ok && !state.Operation.Sync.DryRun {
		next := metav1.NewTime(op.e.opts.Now().Add(d))
		state.RetryCount++
		state.NextRetryAt = &next
		state.ID = retryID(state.ID, state.RetryCount)
		state.SyncResult.Resources = nil
		setCondition(op.app, navarchv1.ApplicationSyncError, metav1.ConditionTrue, navarchv1.ReasonSyncFailed, msg)
		return waitTimer(waitRetry, fmt.Sprintf("retrying in %s (retry %d): %s", d.Round(time.Second), state.RetryCount, truncate(msg, 3500)), d), nil
	}
	if op.plan == nil || len(op.plan.syncFail) == 0 {
		op.e.finish(op.app, navarchv1.OperationFailed, msg)
		return operationEnded(), nil
	}
	state.Failure = truncate(msg, 4096)
	return op.runSyncFail(ctx)
}

// finish ends the operation; a success is added to the history.
func (e *Engine) finish(app *navarchv1.Application, phase navarchv1.OperationPhase, message string) {
	state := app.Status.OperationState
	now := metav1.NewTime(e.opts.Now())
	state.Phase, state.Message, state.FinishedAt, state.NextRetryAt = phase, truncate(message, 4096), &now, nil
	if phase != navarchv1.OperationSucceeded {
		setCondition(app, navarchv1.ApplicationSyncError, metav1.ConditionTrue, navarchv1.ReasonSyncFailed, state.Message)
		setReady(app)
		return
	}
	removeCondition(app, navarchv1.ApplicationSyncError)
	if !state.Operation.Sync.DryRun {
		e.addHistory(app, state, now)
	}
	setReady(app)
}

// namespaceKind is the kind of the namespaces that CreateNamespace creates.
var namespaceKind = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// createNamespace creates the destination namespace if it does not exist (CreateNamespace),
// and reports whether it did. A non-empty createdBy (`<app namespace>/<app name>`) is set as
// the namespace's AnnotationCreatedBy, in the same request: a namespace navarch created never
// exists unmarked, and one that existed before is never marked.
func (e *Engine) createNamespace(ctx context.Context, remote *cluster, name, createdBy string) (bool, error) {
	if name == "" {
		return false, nil
	}
	m, err := remote.Mapping(namespaceKind)
	if err != nil {
		return false, err
	}
	client := remote.Resource(m, "")
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if createdBy != "" {
		ns.SetAnnotations(map[string]string{navarchv1.AnnotationCreatedBy: createdBy})
	}
	_, err = client.Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	switch {
	case err == nil:
		return true, nil
	case isAlreadyExists(err):
		return false, nil
	}
	if _, getErr := client.Get(ctx, name, metav1.GetOptions{}); getErr == nil {
		return false, nil // not allowed to create namespaces, but this one exists
	}
	return false, fmt.Errorf("create namespace %s: %w", name, err)
}

// addHistory appends a successful sync to status.history, keeping revisionHistoryLimit entries.
func (e *Engine) addHistory(app *navarchv1.Application, state *navarchv1.OperationState, at metav1.Time) {
	var id int64
	if n := len(app.Status.History); n > 0 {
		id = app.Status.History[n-1].ID + 1
	}
	entry := navarchv1.RevisionHistory{
		ID:              id,
		Revision:        state.SyncResult.Revision,
		Revisions:       state.SyncResult.Revisions,
		DeployStartedAt: new(state.StartedAt),
		DeployedAt:      at,
		InitiatedBy:     state.Operation.InitiatedBy,
	}
	sources := state.Operation.Sync.GetSources()
	if sources == nil {
		sources = app.Spec.GetSources()
	}
	if len(state.Operation.Sync.Sources) > 0 || (state.Operation.Sync.Source == nil && app.Spec.HasMultipleSources()) {
		entry.Sources = sources
	} else {
		entry.Source = sources[0]
	}
	app.Status.History = append(app.Status.History, entry)
	limit := int64(10)
	if app.Spec.RevisionHistoryLimit != nil {
		limit = *app.Spec.RevisionHistoryLimit
	}
	if extra := int64(len(app.Status.History)) - limit; extra > 0 {
		app.Status.History = slices.Delete(app.Status.History, 0, int(extra))
	}
}

// selects reports whether a partial sync's resource list includes r.
func selects(list []navarchv1.SyncOperationResource, r *resource) bool {
	for _, s := range list {
		if s.Group == r.ref.Group && s.Kind == r.ref.Kind && s.Name == r.ref.Name && (s.Namespace == "" || s.Namespace == r.ref.Namespace) {
			return true
		}
	}
	return false
}
