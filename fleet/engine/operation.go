package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/diff"
	"github.com/navarch-io/navarch/fleet/health"
)

// crdWait is how soon an operation waiting for a CRD looks again without an event: the
// RESTMapper learns new kinds by rediscovery, which no watch announces.
const crdWait = 2 * time.Second

// task is one step of a sync operation's plan: apply an object, run a hook instance, or
// prune an object.
type task struct {
	res   *resource
	phase navarchv1.SyncPhase
	wave  int64
	prune bool
}

func (t *task) isHook() bool { return t.res.hook != nil }

// phaseOrder is the order of the phases of a successful sync.
var phaseOrder = []navarchv1.SyncPhase{navarchv1.SyncPhasePreSync, navarchv1.SyncPhaseSync, navarchv1.SyncPhasePostSync}

// plan is an operation attempt's tasks: groups of (phase, wave) in order, and the SyncFail
// hooks that run if the attempt fails.
type plan struct {
	groups   [][]*task
	syncFail []*task
	all      []*task
}

// buildPlan orders the operation's tasks. Prune tasks run in the Sync phase in reverse wave
// order (the object of the highest wave first), or after every other Sync task with
// PruneLast; within a group prune tasks come first, then hooks and objects in kind order.
func buildPlan(app *navarchv1.Application, apply, prune, hooks []*resource, opID string, opts syncOptions) *plan {
	p := &plan{}
	var tasks []*task
	minWave, maxWave := int64(0), int64(0)
	for i, r := range apply {
		if i == 0 || r.wave < minWave {
			minWave = r.wave
		}
		if i == 0 || r.wave > maxWave {
			maxWave = r.wave
		}
		tasks = append(tasks, &task{res: r, phase: navarchv1.SyncPhaseSync, wave: r.wave})
	}
	for _, r := range prune {
		w := minWave + maxWave - r.wave
		if opts.on("PruneLast") || r.options.on("PruneLast") {
			w = maxWave + 1
		}
		tasks = append(tasks, &task{res: r, phase: navarchv1.SyncPhaseSync, wave: w, prune: true})
	}
	for _, h := range hooks {
		for _, phase := range h.hook.phases {
			t := &task{res: hookInstance(app, h, phase, opID), phase: phase, wave: h.wave}
			if phase == navarchv1.SyncPhaseSyncFail {
				p.syncFail = append(p.syncFail, t)
			} else {
				tasks = append(tasks, t)
			}
		}
	}
	slices.SortFunc(p.syncFail, func(a, b *task) int { return applyOrder(a.res, b.res) })
	slices.SortStableFunc(tasks, func(a, b *task) int {
		if c := slices.Index(phaseOrder, a.phase) - slices.Index(phaseOrder, b.phase); c != 0 {
			return c
		}
		if a.wave != b.wave {
			return int(a.wave - b.wave)
		}
		if a.prune != b.prune {
			if a.prune {
				return -1
			}
			return 1
		}
		if a.prune {
			return pruneOrder(a.res, b.res)
		}
		return applyOrder(a.res, b.res)
	})
	for i, t := range tasks {
		if i == 0 || t.phase != tasks[i-1].phase || t.wave != tasks[i-1].wave {
			p.groups = append(p.groups, nil)
		}
		p.groups[len(p.groups)-1] = append(p.groups[len(p.groups)-1], t)
	}
	p.all = append(slices.Clone(tasks), p.syncFail...)
	return p
}

// attemptID names an operation attempt: stable for the attempt, so a restarted controller
// finds the hook instances it created, and different for every attempt and operation.
func attemptID(app *navarchv1.Application, state *navarchv1.OperationState) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%s/%d/%d", app.UID, app.Name, state.StartedAt.UTC().Format(time.RFC3339Nano), state.RetryCount, len(app.Status.History)))
	return hex.EncodeToString(sum[:])[:5]
}

// runOperation advances the running operation as far as it can go now. It returns how soon to
// look again when it waits for something no watch announces.
func (e *Engine) runOperation(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote, cmp *comparison, commit string, terminate bool) (time.Duration, error) {
	state := app.Status.OperationState
	if state.ID == "" {
		state.ID = attemptID(app, state)
	}
	if state.NextRetryAt != nil {
		if wait := state.NextRetryAt.Sub(e.opts.Now()); wait > 0 && !terminate {
			return wait, nil
		}
		state.NextRetryAt = nil
	}
	sync := state.Operation.Sync
	resources, hooks := cmp.resources, cmp.hooks
	if state.SyncResult.Revision != commit || sync.Source != nil {
		// The operation syncs another commit or source than the one just compared (an
		// explicit revision, a rollback): compare that one.
		src := app.Spec.Source
		if sync.Source != nil {
			src = *sync.Source
		}
		manifests, err := e.opts.Source.Fetch(ctx, src, state.SyncResult.Revision, false)
		if err != nil {
			return 0, e.fail(ctx, app, remote, nil, fmt.Sprintf("fetch revision %s: %v", state.SyncResult.Revision, err))
		}
		opts := e.syncOptions(app)
		desired, h, err := e.prepare(app, remote, manifests.Objects, opts)
		if err != nil {
			return 0, e.fail(ctx, app, remote, nil, err.Error())
		}
		c := e.compare(ctx, app, remote, desired, cmp.ignore, opts)
		resources, hooks = c.resources, h
	}

	var apply, prune []*resource
	for _, r := range resources {
		if r.prune {
			prune = append(prune, r)
		} else {
			apply = append(apply, r)
		}
	}
	if selected := sync.Resources; len(selected) > 0 {
		// A partial sync runs no hooks.
		apply = slices.DeleteFunc(apply, func(r *resource) bool { return !selects(selected, r) })
		prune = slices.DeleteFunc(prune, func(r *resource) bool { return !selects(selected, r) })
		hooks = nil
	}
	if !sync.Prune {
		for _, r := range prune {
			if e.result(state, &task{res: r, phase: navarchv1.SyncPhaseSync}) == nil {
				e.record(state, &task{res: r, phase: navarchv1.SyncPhaseSync}, navarchv1.ResultPruneSkipped, "pruning is disabled for this sync")
			}
		}
		prune = nil
	}
	opts := e.syncOptions(app)
	p := buildPlan(app, apply, prune, hooks, state.ID, opts)

	if terminate {
		if err := e.terminateHooks(ctx, app, remote, p.all); err != nil {
			return 0, err
		}
		e.finish(app, navarchv1.OperationFailed, "terminated")
		return 0, nil
	}
	if state.Failure != "" {
		return e.runSyncFail(ctx, app, remote, p)
	}

	// The destination namespace comes first, so that the objects in it can be dry-run.
	needsNamespace := len(apply) == 0 // nothing compared tells whether it exists
	for _, r := range apply {
		needsNamespace = needsNamespace || (r.missingNamespace && r.ref.Namespace == app.Spec.Destination.Namespace)
	}
	if opts.on("CreateNamespace") && needsNamespace && !sync.DryRun {
		created, err := e.createNamespace(ctx, remote, app.Spec.Destination.Namespace)
		if transient(err) {
			return 0, err
		}
		if err != nil {
			return 0, e.fail(ctx, app, remote, p, err.Error())
		}
		if created {
			// The objects in it could not be dry-run before it existed: dry-run them now.
			for _, r := range apply {
				if !r.missingNamespace || r.ref.Namespace != app.Spec.Destination.Namespace {
					continue
				}
				if err := e.revalidate(ctx, remote, r, ignoreKey(app.Spec.IgnoreDifferences)); transient(err) {
					return 0, err
				}
			}
		}
	}

	// Every step checks what is left of the plan before applying any of it, so a plan that
	// cannot succeed fails before anything is applied.
	var pending []*resource
	for _, t := range p.all {
		if !t.prune && !t.isHook() && !e.done(state, t) {
			pending = append(pending, t.res)
		}
	}
	msg := e.validate(app, apply, pending)
	if hookMsg := e.validateHooks(ctx, app, remote, p, apply); hookMsg != "" {
		msg = strings.TrimPrefix(strings.Join([]string{msg, hookMsg}, "; "), "; ")
	}
	if msg != "" {
		msg = strings.TrimPrefix(msg, "nothing was applied: ")
		if !slices.ContainsFunc(state.SyncResult.Resources, applied) {
			msg = "nothing was applied: " + msg
		} else {
			msg = "stopped before applying the rest: " + msg
		}
		return 0, e.fail(ctx, app, remote, p, msg)
	}
	if sync.DryRun {
		e.finish(app, navarchv1.OperationSucceeded, "dry run: the server accepts every object")
		return 0, nil
	}
	for gi, group := range p.groups {
		running := ""
		for _, t := range group {
			if e.done(state, t) {
				continue
			}
			switch {
			case t.prune:
				if msg := e.pruneTask(ctx, app, remote, t, opts); msg != "" {
					if strings.HasPrefix(msg, "waiting") {
						state.Message = msg
						return 0, nil
					}
					return 0, e.fail(ctx, app, remote, p, msg)
				}
			case t.isHook():
				phase, msg, err := e.advanceHook(ctx, app, remote, t)
				if err != nil {
					return 0, err
				}
				switch phase {
				case navarchv1.HookFailed, navarchv1.HookError:
					e.recordHook(state, t, navarchv1.HookFailed, msg)
					return 0, e.fail(ctx, app, remote, p, fmt.Sprintf("%s hook %s %s failed: %s", t.phase, t.res.ref.Kind, t.res.ref.Name, msg))
				case navarchv1.HookSucceeded:
				default:
					running = fmt.Sprintf("waiting for %s hook %s %s: %s", t.phase, t.res.ref.Kind, t.res.ref.Name, msg)
				}
			case opts.on("ApplyOutOfSyncOnly") && t.res.status == navarchv1.SyncStatusSynced:
				e.record(state, t, navarchv1.ResultSynced, "already in sync")
			default:
				wait, err := e.applyTask(ctx, app, remote, t, cmp.ignore)
				if transient(err) {
					state.Message = fmt.Sprintf("%s %s: %v (will retry)", t.res.ref.Kind, t.res.ref.Name, err)
					return 0, err
				}
				if err != nil {
					e.record(state, t, navarchv1.ResultSyncFailed, err.Error())
					return 0, e.fail(ctx, app, remote, p, fmt.Sprintf("%s %s failed to apply: %v", t.res.ref.Kind, t.res.ref.Name, err))
				}
				if wait != "" {
					state.Message = wait
					return crdWait, nil
				}
			}
		}
		if running != "" {
			state.Message = running
			return 0, nil // hook instances report through watch events
		}
		if gi < len(p.groups)-1 {
			if msg, failed := e.waveHealth(ctx, remote, group); failed {
				return 0, e.fail(ctx, app, remote, p, msg)
			} else if msg != "" {
				state.Message = fmt.Sprintf("waiting for %s wave %d to become healthy: %s", group[0].phase, group[0].wave, msg)
				return 0, nil
			}
		}
	}
	if err := e.cleanupHooks(ctx, remote, p.all, true); err != nil {
		return 0, err
	}
	e.finish(app, navarchv1.OperationSucceeded, "successfully synced")
	return 0, nil
}

// revalidate dry-runs an object again, e.g. once its namespace exists, and records the outcome
// for validate. It returns only transient errors.
func (e *Engine) revalidate(ctx context.Context, remote *clustercache.Remote, r *resource, ignoreHash string) error {
	predicted, err := e.dryRun(ctx, remote, r)
	r.missingNamespace, r.dryRunErr = false, nil
	switch {
	case transient(err):
		return err
	case isMissingNamespace(err):
		r.missingNamespace = true
	case err != nil:
		r.dryRunErr = err
	case predicted.GetResourceVersion() == "":
		e.dryRuns.put(remote.Name+"/"+r.key(), diff.Hash(r.obj), absent, ignoreHash, diff.Result{})
	}
	return nil
}

// validateHooks dry-runs the hook instances this attempt has not created yet. Instances of
// kinds a CRD of the plan defines, or in namespaces the sync creates, are checked when they
// are created. Successes are cached like comparisons, so waiting steps cost no dry runs.
func (e *Engine) validateHooks(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote, p *plan, apply []*resource) string {
	var problems []string
	for _, t := range p.all {
		if !t.isHook() || e.result(app.Status.OperationState, t) != nil {
			continue
		}
		r := t.res
		if r.mapping == nil {
			if m, _ := remote.Mapping(r.gvk); m != nil {
				r.mapping = m
			} else {
				if !definesKind(apply, r.gvk.GroupKind()) {
					problems = append(problems, fmt.Sprintf("%s hook %s %s: the cluster has no kind %s in %s", t.phase, r.ref.Kind, r.ref.Name, r.gvk.Kind, r.gvk.GroupVersion().String()))
				}
				continue
			}
		}
		key, hash := remote.Name+"/hook/"+r.key(), diff.Hash(r.obj)
		if _, ok := e.dryRuns.get(key, hash, "", ""); ok {
			continue
		}
		if live, err := remote.Live(ctx, r.mapping, r.ref.Namespace, r.ref.Name); err != nil || live != nil {
			continue // an earlier instance exists and will be replaced: checked on creation
		}
		_, err := e.dryRun(ctx, remote, r)
		switch {
		case err == nil:
			e.dryRuns.put(key, hash, "", "", diff.Result{Equal: true})
		case isMissingNamespace(err) || transient(err):
		default:
			problems = append(problems, fmt.Sprintf("%s hook %s %s: %v", t.phase, r.ref.Kind, r.ref.Name, err))
		}
	}
	return strings.Join(problems, "; ")
}

func definesKind(rs []*resource, gk schema.GroupKind) bool {
	var objs []*unstructured.Unstructured
	for _, r := range rs {
		objs = append(objs, r.obj)
	}
	return crdScopes(objs)[gk] != ""
}

// applied reports whether a task result changed the cluster.
func applied(r navarchv1.ResourceResult) bool {
	return r.HookPhase != "" || (r.Status == navarchv1.ResultSynced && r.Message != "already in sync") || r.Status == navarchv1.ResultPruned
}

// pruneTask deletes an object that left Git, unless Prune=false (skipped) or Prune=confirm
// without confirmation (it returns a message starting with "waiting"). Any other non-empty
// return is a failure.
func (e *Engine) pruneTask(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote, t *task, opts syncOptions) string {
	state := app.Status.OperationState
	switch strings.ToLower(t.res.options["Prune"]) {
	case "false":
		e.record(state, t, navarchv1.ResultPruneSkipped, "Prune=false")
		return ""
	case "confirm":
		if _, ok := app.Annotations[navarchv1.AnnotationPruneConfirmed]; !ok {
			return fmt.Sprintf("waiting for confirmation to prune %s %s (Prune=confirm): annotate the Application with %s",
				t.res.ref.Kind, t.res.ref.Name, navarchv1.AnnotationPruneConfirmed)
		}
	}
	if err := e.remove(ctx, remote, t.res, propagation(opts)); err != nil {
		e.record(state, t, navarchv1.ResultSyncFailed, err.Error())
		return err.Error()
	}
	e.record(state, t, navarchv1.ResultPruned, "pruned")
	return ""
}

// fail ends the current attempt with msg: it schedules a retry if the retry strategy allows
// one, and otherwise runs the SyncFail hooks before the operation is marked Failed.
func (e *Engine) fail(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote, p *plan, msg string) error {
	state := app.Status.OperationState
	if p != nil {
		if err := e.cleanupHooks(ctx, remote, p.all, false); err != nil {
			return err
		}
	}
	if wait, ok := e.retryAfter(app); ok && !state.Operation.Sync.DryRun {
		next := metav1.NewTime(e.opts.Now().Add(wait))
		state.RetryCount++
		state.NextRetryAt = &next
		state.ID = ""
		state.SyncResult.Resources = nil
		state.Message = fmt.Sprintf("retrying in %s (retry %d): %s", wait.Round(time.Second), state.RetryCount, truncate(msg, 3500))
		setCondition(app, navarchv1.ApplicationSyncError, metav1.ConditionTrue, ReasonSyncFailed, msg)
		return nil
	}
	if p == nil || len(p.syncFail) == 0 {
		e.finish(app, navarchv1.OperationFailed, msg)
		return nil
	}
	state.Failure = truncate(msg, 4096)
	_, err := e.runSyncFail(ctx, app, remote, p)
	return err
}

// runSyncFail runs the SyncFail hooks of a failed attempt, then marks the operation Failed.
func (e *Engine) runSyncFail(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote, p *plan) (time.Duration, error) {
	state := app.Status.OperationState
	msg := state.Failure
	for _, t := range p.syncFail {
		phase, hookMsg, err := e.advanceHook(ctx, app, remote, t)
		if err != nil {
			return 0, err
		}
		switch phase {
		case navarchv1.HookSucceeded:
		case navarchv1.HookFailed, navarchv1.HookError:
			e.recordHook(state, t, navarchv1.HookFailed, hookMsg)
			msg += fmt.Sprintf("; SyncFail hook %s %s failed: %s", t.res.ref.Kind, t.res.ref.Name, hookMsg)
		default:
			state.Message = fmt.Sprintf("running SyncFail hooks after: %s", truncate(msg, 3000))
			return 0, nil
		}
	}
	state.Failure = ""
	if err := e.cleanupHooks(ctx, remote, p.syncFail, false); err != nil {
		return 0, err
	}
	e.finish(app, navarchv1.OperationFailed, msg)
	return 0, nil
}

// retryAfter returns how long to wait before the next retry of the running operation, if its
// retry strategy allows one more.
func (e *Engine) retryAfter(app *navarchv1.Application) (time.Duration, bool) {
	state := app.Status.OperationState
	strategy := state.Operation.Retry
	if strategy == nil && app.Spec.SyncPolicy != nil {
		strategy = app.Spec.SyncPolicy.Retry
	}
	if strategy == nil || (strategy.Limit >= 0 && state.RetryCount >= strategy.Limit) {
		return 0, false
	}
	return backoff(strategy.Backoff, state.RetryCount), true
}

// backoff is the wait before retry n+1 (n retries made): min(maxDuration, duration·factorⁿ),
// with the defaults 5s, 2 and 3m.
func backoff(b *navarchv1.Backoff, n int64) time.Duration {
	duration, factor, maxDuration := 5*time.Second, int64(2), 3*time.Minute
	if b != nil {
		if d, ok := parseDuration(b.Duration); ok {
			duration = d
		}
		if b.Factor != nil && *b.Factor >= 1 {
			factor = *b.Factor
		}
		if d, ok := parseDuration(b.MaxDuration); ok {
			maxDuration = d
		}
	}
	wait := duration
	for range n {
		if wait >= maxDuration {
			break
		}
		wait *= time.Duration(factor)
	}
	return min(wait, maxDuration)
}

// parseDuration reads `5s`, `1m30s` or a bare number of seconds.
func parseDuration(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, true
	}
	var secs float64
	if _, err := fmt.Sscanf(s, "%g", &secs); err == nil {
		return time.Duration(secs * float64(time.Second)), true
	}
	return 0, false
}

// result returns the recorded result of a task, if any.
func (e *Engine) result(state *navarchv1.OperationState, t *task) *navarchv1.ResourceResult {
	for i := range state.SyncResult.Resources {
		res := &state.SyncResult.Resources[i]
		if sameObject(res.ResourceRef, t.res.ref) && res.SyncPhase == t.phase && (res.HookType != "") == t.isHook() {
			return res
		}
	}
	return nil
}

// done reports whether a task has finished successfully in this attempt.
func (e *Engine) done(state *navarchv1.OperationState, t *task) bool {
	res := e.result(state, t)
	switch {
	case res == nil:
		return false
	case t.isHook():
		return res.HookPhase == navarchv1.HookSucceeded
	default:
		return res.Status != navarchv1.ResultSyncFailed
	}
}

// record stores the result of a task.
func (e *Engine) record(state *navarchv1.OperationState, t *task, code navarchv1.ResultCode, message string) {
	e.store(state, t, navarchv1.ResourceResult{
		ResourceRef: t.res.ref, Status: code, Message: truncate(message, 512), SyncPhase: t.phase, SyncWave: t.wave,
	})
}

// recordHook stores the state of a hook task.
func (e *Engine) recordHook(state *navarchv1.OperationState, t *task, phase navarchv1.HookPhase, message string) {
	code := navarchv1.ResultSynced
	if phase == navarchv1.HookFailed || phase == navarchv1.HookError {
		code = navarchv1.ResultSyncFailed
	}
	e.store(state, t, navarchv1.ResourceResult{
		ResourceRef: t.res.ref, Status: code, Message: truncate(message, 512), SyncPhase: t.phase, SyncWave: t.wave,
		HookType: string(t.phase), HookPhase: phase,
	})
}

func (e *Engine) store(state *navarchv1.OperationState, t *task, result navarchv1.ResourceResult) {
	if res := e.result(state, t); res != nil {
		*res = result
		return
	}
	state.SyncResult.Resources = append(state.SyncResult.Resources, result)
}

// finish ends the operation; a success is added to the history.
func (e *Engine) finish(app *navarchv1.Application, phase navarchv1.OperationPhase, message string) {
	state := app.Status.OperationState
	now := metav1.NewTime(e.opts.Now())
	state.Phase, state.Message, state.FinishedAt, state.NextRetryAt = phase, truncate(message, 4096), &now, nil
	if phase != navarchv1.OperationSucceeded {
		setCondition(app, navarchv1.ApplicationSyncError, metav1.ConditionTrue, ReasonSyncFailed, state.Message)
		setReady(app)
		return
	}
	removeCondition(app, navarchv1.ApplicationSyncError)
	if !state.Operation.Sync.DryRun {
		e.addHistory(app, state, now)
	}
	setReady(app)
}

// validate checks the pending tasks of a plan: every kind must be served by the cluster or
// defined by a CRD of the same sync, every namespace must exist or be created by the sync, and
// the server must accept every object in a dry run. It returns what is wrong, or "".
func (e *Engine) validate(app *navarchv1.Application, plan, pending []*resource) string {
	var objs []*unstructured.Unstructured
	createsNamespace := map[string]bool{}
	if e.syncOptions(app).on("CreateNamespace") {
		createsNamespace[app.Spec.Destination.Namespace] = true
	}
	for _, r := range plan {
		objs = append(objs, r.obj)
		if r.ref.Kind == "Namespace" && r.ref.Group == "" {
			createsNamespace[r.ref.Name] = true
		}
	}
	defined := crdScopes(objs)
	var problems []string
	for _, r := range pending {
		switch {
		case r.sharedWith != "" && r.options.on("FailOnSharedResource"):
			problems = append(problems, fmt.Sprintf("%s %s is already managed by Application %s (FailOnSharedResource=true)",
				r.ref.Kind, r.ref.Name, r.sharedWith))
		case r.mapping == nil && defined[r.gvk.GroupKind()] == "" && !r.options.on("SkipDryRunOnMissingResource"):
			problems = append(problems, fmt.Sprintf("%s %s: the cluster has no kind %s in %s, and no CustomResourceDefinition of this Application defines it",
				r.ref.Kind, r.ref.Name, r.gvk.Kind, r.gvk.GroupVersion().String()))
		case r.missingNamespace && !createsNamespace[r.ref.Namespace]:
			problems = append(problems, fmt.Sprintf("%s %s: namespace %q does not exist; add it to the source or set the sync option CreateNamespace=true",
				r.ref.Kind, r.ref.Name, r.ref.Namespace))
		case r.dryRunErr != nil:
			problems = append(problems, fmt.Sprintf("%s %s: %v", r.ref.Kind, r.ref.Name, r.dryRunErr))
		}
	}
	if len(problems) == 0 {
		return ""
	}
	return "nothing was applied: " + strings.Join(problems, "; ")
}

// applyTask applies one resource. It returns a non-empty wait message when the resource
// cannot be applied yet: its kind's CRD is not established.
func (e *Engine) applyTask(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote, t *task, ig *diff.Ignore) (string, error) {
	r := t.res
	if r.mapping == nil {
		m, err := remote.Mapping(r.gvk)
		if m == nil {
			// Not served yet (err says why): the CRD applied earlier is not established.
			return fmt.Sprintf("waiting for the CustomResourceDefinition of %s to be established (%v)", r.gvk.GroupKind().String(), err), nil
		}
		r.mapping = m
	}
	desired := r.obj
	if r.live != nil && r.options.on("RespectIgnoreDifferences") {
		desired = desired.DeepCopy()
		if err := ig.RespectLive(desired, r.live); err != nil {
			return "", &PermanentError{err}
		}
	}
	out, err := e.apply(ctx, remote, r, desired)
	if err != nil {
		return "", err
	}
	if desired == r.obj {
		// What the server returned is what the watch will deliver: remember it as in sync, so
		// the next comparison costs no dry run.
		e.dryRuns.put(remote.Name+"/"+r.key(), diff.Hash(r.obj), diff.Hash(out), ignoreKey(app.Spec.IgnoreDifferences), diff.Result{Equal: true})
	}
	e.record(app.Status.OperationState, t, navarchv1.ResultSynced, "applied")
	return "", nil
}

// waveHealth checks a wave's resources before the next wave starts. It returns why the wave
// is not healthy yet, or with failed=true why it failed.
func (e *Engine) waveHealth(ctx context.Context, remote *clustercache.Remote, wave []*task) (msg string, failed bool) {
	for _, t := range wave {
		if t.prune || t.isHook() {
			continue // pruned objects are going; hooks have completed
		}
		r := t.res
		if r.mapping == nil {
			return fmt.Sprintf("%s %s is not served yet", r.ref.Kind, r.ref.Name), false
		}
		live, err := remote.Live(ctx, r.mapping, r.ref.Namespace, r.ref.Name)
		if err != nil {
			return err.Error(), false
		}
		if live == nil {
			return fmt.Sprintf("%s %s is not in the cluster yet", r.ref.Kind, r.ref.Name), false
		}
		h := health.Assess(live)
		if h == nil {
			continue
		}
		switch h.Status {
		case navarchv1.HealthHealthy, navarchv1.HealthSuspended:
		case navarchv1.HealthDegraded:
			return fmt.Sprintf("%s %s is Degraded: %s", r.ref.Kind, r.ref.Name, h.Message), true
		default:
			return fmt.Sprintf("%s %s is %s: %s", r.ref.Kind, r.ref.Name, h.Status, h.Message), false
		}
	}
	return "", false
}

// createNamespace creates the destination namespace if it does not exist (CreateNamespace),
// and reports whether it did.
func (e *Engine) createNamespace(ctx context.Context, remote *clustercache.Remote, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	m, err := remote.Mapping(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	if err != nil {
		return false, err
	}
	client := remote.Resource(m, "")
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
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
	source := app.Spec.Source
	if state.Operation.Sync.Source != nil {
		source = *state.Operation.Sync.Source
	}
	app.Status.History = append(app.Status.History, navarchv1.RevisionHistory{
		ID:              id,
		Revision:        state.SyncResult.Revision,
		Source:          source,
		DeployStartedAt: new(state.StartedAt),
		DeployedAt:      at,
		InitiatedBy:     state.Operation.InitiatedBy,
	})
	limit := int64(10)
	if app.Spec.RevisionHistoryLimit != nil {
		limit = *app.Spec.RevisionHistoryLimit
	}
	if extra := int64(len(app.Status.History)) - limit; extra > 0 {
		app.Status.History = slices.Delete(app.Status.History, 0, int(extra))
	}
}

func sameObject(a, b navarchv1.ResourceRef) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
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
