package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/health"
)

// Hook delete policies.
const (
	policyBeforeHookCreation = "BeforeHookCreation"
	policyHookSucceeded      = "HookSucceeded"
	policyHookFailed         = "HookFailed"
)

// hookSpec is what a hook's annotations say: the phases it runs in and when its instances
// are deleted.
type hookSpec struct {
	phases   []navarchv1.SyncPhase
	policies []string
}

// isHook reports whether obj is a hook (navarch.io/hook, argocd.argoproj.io/hook or
// helm.sh/hook): hooks run during sync operations and are not part of the compared state.
func isHook(obj *unstructured.Unstructured) bool {
	return annotation(obj, navarchv1.AnnotationHook, navarchv1.ArgoAnnotationHook, "helm.sh/hook") != ""
}

// helmHookWeight orders Helm hooks of a phase, like a sync wave.
const helmHookWeight = "helm.sh/hook-weight"

// isHelmHook reports whether obj is a hook only by Helm's annotation: navarch's and Argo CD's
// hook annotations win over Helm's.
func isHelmHook(obj *unstructured.Unstructured) bool {
	return annotation(obj, "helm.sh/hook") != "" && annotation(obj, navarchv1.AnnotationHook, navarchv1.ArgoAnnotationHook) == ""
}

// helmHooks maps Helm's hook names onto sync phases; the others (delete, rollback, test
// hooks) have no counterpart in a sync and are skipped.
var helmHooks = map[string]navarchv1.SyncPhase{
	"pre-install": navarchv1.SyncPhasePreSync, "pre-upgrade": navarchv1.SyncPhasePreSync,
	"post-install": navarchv1.SyncPhasePostSync, "post-upgrade": navarchv1.SyncPhasePostSync,
}

var helmPolicies = map[string]string{
	"before-hook-creation": policyBeforeHookCreation, "hook-succeeded": policyHookSucceeded, "hook-failed": policyHookFailed,
}

// parseHook reads a hook's phases (a comma list; Skip means never applied, so no phases) and
// delete policies (default BeforeHookCreation).
func parseHook(obj *unstructured.Unstructured) *hookSpec {
	spec := &hookSpec{}
	add := func(p navarchv1.SyncPhase) {
		if !slices.Contains(spec.phases, p) {
			spec.phases = append(spec.phases, p)
		}
	}
	if v := annotation(obj, navarchv1.AnnotationHook, navarchv1.ArgoAnnotationHook); v != "" {
		for item := range strings.SplitSeq(v, ",") {
			switch p := navarchv1.SyncPhase(strings.TrimSpace(item)); p {
			case navarchv1.SyncPhasePreSync, navarchv1.SyncPhaseSync, navarchv1.SyncPhasePostSync, navarchv1.SyncPhaseSyncFail:
				add(p)
			case "Skip":
				return &hookSpec{}
			}
		}
	} else {
		for item := range strings.SplitSeq(annotation(obj, "helm.sh/hook"), ",") {
			if p, ok := helmHooks[strings.TrimSpace(item)]; ok {
				add(p)
			}
		}
	}
	if v := annotation(obj, navarchv1.AnnotationHookDeletePolicy, navarchv1.ArgoAnnotationHookDeletePolicy); v != "" {
		for item := range strings.SplitSeq(v, ",") {
			spec.policies = append(spec.policies, strings.TrimSpace(item))
		}
	} else if v := annotation(obj, "helm.sh/hook-delete-policy"); v != "" {
		for item := range strings.SplitSeq(v, ",") {
			if p, ok := helmPolicies[strings.TrimSpace(item)]; ok {
				spec.policies = append(spec.policies, p)
			}
		}
	}
	if len(spec.policies) == 0 {
		spec.policies = []string{policyBeforeHookCreation}
	}
	return spec
}

func (h *hookSpec) has(policy string) bool { return slices.Contains(h.policies, policy) }

// hookInstance returns the object a hook task creates in an operation attempt: a
// generateName hook gets a name unique to the attempt; every instance carries the attempt's
// id, the tracking id and the hook finalizer.
func hookInstance(app *navarchv1.Application, r *resource, phase navarchv1.SyncPhase, opID string) *resource {
	obj := r.obj.DeepCopy()
	if obj.GetName() == "" {
		name := obj.GetGenerateName() + opID
		if len(phase) > 0 && len(r.hook.phases) > 1 {
			name += "-" + strings.ToLower(string(phase))
		}
		obj.SetName(name)
		obj.SetGenerateName("")
	}
	// The instance of each phase is distinct, even under a fixed name.
	setAnnotation(obj, navarchv1.AnnotationOperation, opID+"."+strings.ToLower(string(phase)))
	setAnnotation(obj, navarchv1.AnnotationTrackingID, clustercache.TrackingID(types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, obj))
	if !slices.Contains(obj.GetFinalizers(), navarchv1.FinalizerHook) {
		obj.SetFinalizers(append(obj.GetFinalizers(), navarchv1.FinalizerHook))
	}
	inst := *r
	inst.obj = obj
	inst.ref = refOf(obj)
	return &inst
}

// hookOutcome says whether a live hook instance has finished: a Job or Pod must succeed;
// other kinds are done once healthy (or at once, without a health assessment). An instance
// deleted before it finished has failed.
func hookOutcome(live *unstructured.Unstructured) (navarchv1.HookPhase, string) {
	deleted := live.GetDeletionTimestamp() != nil
	core := live.GroupVersionKind().Group == ""
	switch {
	case live.GetKind() == "Pod" && core:
		phase, _, _ := unstructured.NestedString(live.Object, "status", "phase")
		switch {
		case phase == "Succeeded":
			return navarchv1.HookSucceeded, "pod succeeded"
		case phase == "Failed":
			return navarchv1.HookFailed, healthMessage(health.Assess(live), "pod failed")
		case deleted:
			return navarchv1.HookFailed, "deleted before it finished"
		}
		return navarchv1.HookRunning, "pod " + strings.ToLower(phase)
	case live.GetKind() == "Job" && live.GroupVersionKind().Group == "batch":
		conditions, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
		for _, c := range conditions {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			switch m["type"] {
			case "Complete":
				return navarchv1.HookSucceeded, "job completed"
			case "Failed":
				msg, _ := m["message"].(string)
				return navarchv1.HookFailed, strings.TrimSpace("job failed: " + msg)
			}
		}
		if deleted {
			return navarchv1.HookFailed, "deleted before it finished"
		}
		return navarchv1.HookRunning, "job running"
	}
	h := health.Assess(live)
	switch {
	case h == nil || h.Status == navarchv1.HealthHealthy:
		return navarchv1.HookSucceeded, "created"
	case deleted:
		return navarchv1.HookFailed, "deleted before it finished"
	case h.Status == navarchv1.HealthDegraded:
		return navarchv1.HookFailed, healthMessage(h, "degraded")
	default:
		return navarchv1.HookRunning, healthMessage(h, string(h.Status))
	}
}

func healthMessage(h *navarchv1.HealthStatus, fallback string) string {
	if h == nil || h.Message == "" {
		return fallback
	}
	return h.Message
}

// advanceHook starts a hook task or checks on its instance. It returns the hook's phase
// after this step; Failed comes with the reason.
func (e *Engine) advanceHook(ctx context.Context, app *navarchv1.Application, remote *cluster, t *task) (navarchv1.HookPhase, string, error) {
	state := app.Status.OperationState
	r := t.res
	if r.mapping == nil {
		m, err := remote.Mapping(r.gvk)
		if m == nil {
			return navarchv1.HookFailed, fmt.Sprintf("the cluster has no kind %s: %v", r.gvk.String(), err), nil
		}
		r.mapping = m
	}
	live, err := remote.Live(ctx, r.mapping, r.ref.Namespace, r.ref.Name)
	if err != nil {
		return "", "", err
	}
	result := e.result(state, t)
	if result == nil || result.HookPhase == "" || result.HookPhase == navarchv1.HookPending {
		if live == nil {
			// The watch may lag behind a create made just before a restart: ask the server.
			if live, err = e.get(ctx, remote, r); err != nil {
				return "", "", err
			}
		}
		switch {
		case live != nil && live.GetAnnotations()[navarchv1.AnnotationOperation] == r.obj.GetAnnotations()[navarchv1.AnnotationOperation]:
			// Created by this attempt before a restart: never run a hook twice. It may have
			// finished meanwhile, and then no event will come for it: look at it now.
			e.recordHook(state, t, navarchv1.HookRunning, "running")
			return e.hookProgress(ctx, remote, state, t, live)
		case live != nil && live.GetDeletionTimestamp() != nil:
			return navarchv1.HookPending, "waiting for the previous instance to be deleted", nil
		case live != nil && !r.hook.has(policyBeforeHookCreation):
			return navarchv1.HookFailed, fmt.Sprintf("%s %s exists from an earlier operation; give the hook the BeforeHookCreation delete policy", r.ref.Kind, r.ref.Name), nil
		case live != nil && !ownHookInstance(app, live):
			return navarchv1.HookFailed, fmt.Sprintf("%s %s exists and is not an earlier instance of this Application's hook; navarch does not delete it", r.ref.Kind, r.ref.Name), nil
		case live != nil:
			if err := e.deleteHook(ctx, remote, r, live); err != nil {
				return "", "", err
			}
			return navarchv1.HookPending, "deleting the previous instance (BeforeHookCreation)", nil
		default:
			if _, err := e.patch(ctx, remote, r, r.obj, false); err != nil {
				if transient(err) {
					return "", "", err
				}
				return navarchv1.HookFailed, err.Error(), nil
			}
		}
		e.recordHook(state, t, navarchv1.HookRunning, "running")
		return navarchv1.HookRunning, "running", nil
	}
	if result.HookPhase != navarchv1.HookRunning {
		return result.HookPhase, result.Message, nil
	}
	if live == nil {
		if live, err = e.get(ctx, remote, r); err != nil {
			return "", "", err
		}
		if live == nil {
			return navarchv1.HookFailed, "the hook was deleted before it finished", nil
		}
	}
	return e.hookProgress(ctx, remote, state, t, live)
}

// hookProgress reads the outcome of a running hook instance; once it has finished, it records
// the outcome first and then lets the instance go.
func (e *Engine) hookProgress(ctx context.Context, remote *cluster, state *navarchv1.OperationState, t *task, live *unstructured.Unstructured) (navarchv1.HookPhase, string, error) {
	phase, msg := hookOutcome(live)
	if phase == navarchv1.HookRunning {
		return phase, msg, nil
	}
	e.recordHook(state, t, phase, msg)
	if err := e.releaseHook(ctx, remote, t.res, live); err != nil {
		return "", "", err
	}
	return phase, msg, nil
}

// releaseHook removes navarch's finalizer from a finished hook instance.
func (e *Engine) releaseHook(ctx context.Context, remote *cluster, r *resource, live *unstructured.Unstructured) error {
	finalizers := live.GetFinalizers()
	i := slices.Index(finalizers, navarchv1.FinalizerHook)
	if i < 0 {
		return nil
	}
	patch := fmt.Appendf(nil, `[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`, i, navarchv1.FinalizerHook, i)
	_, err := remote.Resource(r.mapping, r.ref.Namespace).Patch(ctx, r.ref.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if apierrors.IsInvalid(err) {
		// The finalizer moved meanwhile: read the object again next time.
		return fmt.Errorf("release hook %s %s: %w", r.ref.Kind, r.ref.Name, err)
	}
	return err
}

// deleteHook deletes a hook instance, finalizer first.
func (e *Engine) deleteHook(ctx context.Context, remote *cluster, r *resource, live *unstructured.Unstructured) error {
	if err := e.releaseHook(ctx, remote, r, live); err != nil {
		return err
	}
	_, err := e.deleteLive(ctx, remote, r, live, metav1.DeletePropagationBackground) // the Job's pods go too
	return err
}

// cleanupHooks deletes the instances of this attempt whose delete policy matches how the
// operation ended (HookSucceeded after success, HookFailed after failure) and releases the
// others from navarch's finalizer.
func (e *Engine) cleanupHooks(ctx context.Context, remote *cluster, tasks []*task, succeeded bool) error {
	policy := policyHookFailed
	if succeeded {
		policy = policyHookSucceeded
	}
	for _, t := range tasks {
		if t.res.hook == nil || t.res.mapping == nil {
			continue
		}
		live, err := e.get(ctx, remote, t.res)
		if err != nil {
			return err
		}
		if live == nil || live.GetAnnotations()[navarchv1.AnnotationOperation] != t.res.obj.GetAnnotations()[navarchv1.AnnotationOperation] {
			continue
		}
		if t.res.hook.has(policy) {
			if err := e.deleteHook(ctx, remote, t.res, live); err != nil {
				return err
			}
		} else if err := e.releaseHook(ctx, remote, t.res, live); err != nil {
			return err // instances that stay must not keep navarch's finalizer
		}
	}
	return nil
}

// terminateHooks deletes the instances of hooks still running.
func (e *Engine) terminateHooks(ctx context.Context, app *navarchv1.Application, remote *cluster, tasks []*task) error {
	for _, t := range tasks {
		res := e.result(app.Status.OperationState, t)
		if t.res.hook == nil || res == nil || res.HookPhase != navarchv1.HookRunning || t.res.mapping == nil {
			continue
		}
		live, err := e.get(ctx, remote, t.res)
		if err != nil {
			return err
		}
		if live != nil {
			if err := e.deleteHook(ctx, remote, t.res, live); err != nil {
				return err
			}
		}
		e.recordHook(app.Status.OperationState, t, navarchv1.HookTerminating, "terminated")
	}
	return nil
}

// ownHookInstance reports whether live, which stands where a hook is to be created, is an
// earlier instance of one of app's hooks, which BeforeHookCreation may delete: tracked by app,
// or (created before hook instances were tracked) an untracked navarch hook instance.
func ownHookInstance(app *navarchv1.Application, live *unstructured.Unstructured) bool {
	owner, tracked := clustercache.TrackedBy(live)
	if tracked {
		return owner == types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	}
	_, hook := live.GetAnnotations()[navarchv1.AnnotationOperation]
	return hook
}
