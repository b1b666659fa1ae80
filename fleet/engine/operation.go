package engine

import (
	"context"
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

// runOperation advances the running operation as far as it can go now. It returns how soon to
// look again when it waits for something no watch announces.
func (e *Engine) runOperation(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote, cmp *comparison, commit string) (time.Duration, error) {
	state := app.Status.OperationState
	rev := state.SyncResult.Revision
	resources := cmp.resources
	if rev != commit {
		// The operation syncs another commit than the one just compared (an explicit
		// revision): compare that one.
		op := state.Operation.Sync
		src := app.Spec.Source
		manifests, err := e.opts.Source.Fetch(ctx, src, rev, false)
		if err != nil {
			e.finish(app, navarchv1.OperationFailed, fmt.Sprintf("fetch revision %s: %v", op.Revision, err))
			return 0, nil
		}
		opts := e.syncOptions(app)
		desired, err := e.prepare(app, remote, manifests.Objects, opts)
		if err != nil {
			e.finish(app, navarchv1.OperationFailed, err.Error())
			return 0, nil
		}
		ig, _ := compileIgnore(app)
		resources = e.compare(ctx, app, remote, desired, ig, opts).resources
	}

	var apply, prune []*resource
	for _, r := range resources {
		if r.prune {
			prune = append(prune, r)
		} else {
			apply = append(apply, r)
		}
	}
	if selected := state.Operation.Sync.Resources; len(selected) > 0 {
		apply = slices.DeleteFunc(apply, func(r *resource) bool { return !selects(selected, r) })
		prune = slices.DeleteFunc(prune, func(r *resource) bool { return !selects(selected, r) })
	}

	// Every step checks what is left of the plan before applying any of it, so a plan that
	// cannot succeed fails before anything is applied.
	var pending []*resource
	for _, r := range apply {
		if !e.done(state, r) {
			pending = append(pending, r)
		}
	}
	if msg := e.validate(app, apply, pending); msg != "" {
		e.finish(app, navarchv1.OperationFailed, msg)
		return 0, nil
	}
	if state.Operation.Sync.DryRun {
		e.finish(app, navarchv1.OperationSucceeded, "dry run: the server accepts every object")
		return 0, nil
	}

	opts := e.syncOptions(app)
	if opts.on("CreateNamespace") {
		if err := e.createNamespace(ctx, remote, app.Spec.Destination.Namespace); err != nil {
			e.finish(app, navarchv1.OperationFailed, err.Error())
			return 0, nil
		}
	}

	groups := waves(apply)
	for i, wave := range groups {
		for _, r := range wave {
			if e.done(state, r) {
				continue
			}
			if opts.on("ApplyOutOfSyncOnly") && r.status == navarchv1.SyncStatusSynced {
				e.record(state, r, navarchv1.ResultSynced, "already in sync")
				continue
			}
			wait, err := e.applyTask(ctx, app, remote, r)
			if transient(err) {
				state.Message = fmt.Sprintf("%s %s: %v (will retry)", r.ref.Kind, r.ref.Name, err)
				return 0, err
			}
			if err != nil {
				e.record(state, r, navarchv1.ResultSyncFailed, err.Error())
				e.finish(app, navarchv1.OperationFailed, fmt.Sprintf("%s %s failed to apply: %v", r.ref.Kind, r.ref.Name, err))
				return 0, nil
			}
			if wait != "" {
				state.Message = wait
				return crdWait, nil
			}
		}
		if i < len(groups)-1 {
			if msg, failed := e.waveHealth(ctx, remote, wave); failed {
				e.finish(app, navarchv1.OperationFailed, msg)
				return 0, nil
			} else if msg != "" {
				state.Message = fmt.Sprintf("waiting for wave %d to become healthy: %s", wave[0].wave, msg)
				return 0, nil
			}
		}
	}

	if state.Operation.Sync.Prune {
		slices.SortFunc(prune, pruneOrder)
		for _, r := range prune {
			if e.done(state, r) {
				continue
			}
			if r.options.off("Prune") || r.options["Prune"] == "false" {
				e.record(state, r, navarchv1.ResultPruneSkipped, "Prune=false")
				continue
			}
			if err := e.remove(ctx, remote, r, propagation(opts)); err != nil {
				e.record(state, r, navarchv1.ResultSyncFailed, err.Error())
				e.finish(app, navarchv1.OperationFailed, err.Error())
				return 0, nil
			}
			e.record(state, r, navarchv1.ResultPruned, "pruned")
		}
	} else {
		for _, r := range prune {
			if !e.done(state, r) {
				e.record(state, r, navarchv1.ResultPruneSkipped, "pruning is disabled for this sync")
			}
		}
	}
	e.finish(app, navarchv1.OperationSucceeded, "successfully synced")
	return 0, nil
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
func (e *Engine) applyTask(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote, r *resource) (string, error) {
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
		ig, err := compileIgnore(app)
		if err != nil {
			return "", &PermanentError{err}
		}
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
	e.record(app.Status.OperationState, r, navarchv1.ResultSynced, "applied")
	return "", nil
}

// waveHealth checks a wave's resources before the next wave starts. It returns why the wave
// is not healthy yet, or with failed=true why it failed.
func (e *Engine) waveHealth(ctx context.Context, remote *clustercache.Remote, wave []*resource) (msg string, failed bool) {
	for _, r := range wave {
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

// createNamespace creates the destination namespace if it does not exist (CreateNamespace).
func (e *Engine) createNamespace(ctx context.Context, remote *clustercache.Remote, name string) error {
	if name == "" {
		return nil
	}
	m, err := remote.Mapping(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	if err != nil {
		return err
	}
	client := remote.Resource(m, "")
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	_, err = client.Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager})
	if err == nil || isAlreadyExists(err) {
		return nil
	}
	if _, getErr := client.Get(ctx, name, metav1.GetOptions{}); getErr == nil {
		return nil // not allowed to create namespaces, but this one exists
	}
	return fmt.Errorf("create namespace %s: %w", name, err)
}

// done reports whether the operation already ran r's task.
func (e *Engine) done(state *navarchv1.OperationState, r *resource) bool {
	for _, res := range state.SyncResult.Resources {
		if sameObject(res.ResourceRef, r.ref) && res.Status != navarchv1.ResultSyncFailed {
			return true
		}
	}
	return false
}

// record stores the result of r's task in the operation state.
func (e *Engine) record(state *navarchv1.OperationState, r *resource, code navarchv1.ResultCode, message string) {
	result := navarchv1.ResourceResult{
		ResourceRef: r.ref,
		Status:      code,
		Message:     truncate(message, 512),
		SyncPhase:   navarchv1.SyncPhaseSync,
		SyncWave:    r.wave,
	}
	for i, res := range state.SyncResult.Resources {
		if sameObject(res.ResourceRef, r.ref) {
			state.SyncResult.Resources[i] = result
			return
		}
	}
	state.SyncResult.Resources = append(state.SyncResult.Resources, result)
}

// finish ends the operation; a success is added to the history.
func (e *Engine) finish(app *navarchv1.Application, phase navarchv1.OperationPhase, message string) {
	state := app.Status.OperationState
	now := metav1.NewTime(e.opts.Now())
	state.Phase, state.Message, state.FinishedAt = phase, truncate(message, 4096), &now
	if phase != navarchv1.OperationSucceeded {
		setCondition(app, navarchv1.ApplicationSyncError, metav1.ConditionTrue, "SyncFailed", state.Message)
		setReady(app)
		return
	}
	removeCondition(app, navarchv1.ApplicationSyncError)
	if !state.Operation.Sync.DryRun {
		e.addHistory(app, state, now)
	}
	setReady(app)
}

// addHistory appends a successful sync to status.history, keeping revisionHistoryLimit entries.
func (e *Engine) addHistory(app *navarchv1.Application, state *navarchv1.OperationState, at metav1.Time) {
	var id int64
	if n := len(app.Status.History); n > 0 {
		id = app.Status.History[n-1].ID + 1
	}
	app.Status.History = append(app.Status.History, navarchv1.RevisionHistory{
		ID:              id,
		Revision:        state.SyncResult.Revision,
		Source:          app.Spec.Source,
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
