package engine

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// FieldManager is the server-side apply field manager of everything navarch applies.
const FieldManager = "navarch"

// dryRun server-side applies r's desired object with dryRun=All and returns what the object
// would become.
func (e *Engine) dryRun(ctx context.Context, remote *cluster, r *resource) (*unstructured.Unstructured, error) {
	dryRuns.WithLabelValues(remote.Name).Inc()
	return e.patch(ctx, remote, r, r.obj, true)
}

// apply server-side applies r's desired object, or replaces it with Replace=true.
func (e *Engine) apply(ctx context.Context, remote *cluster, r *resource, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	var err error
	if r.options.on("Replace") {
		out, err = e.replace(ctx, remote, r, desired)
	} else {
		out, err = e.patch(ctx, remote, r, desired, false)
	}
	if err != nil && r.options.on("Force") && r.live != nil && (apierrors.IsInvalid(err) || apierrors.IsConflict(err)) {
		// Force=true: an object the server refuses to change (an immutable field) is
		// deleted and created again, like `kubectl apply --force`.
		if _, err := e.remove(ctx, remote, r, metav1.DeletePropagationForeground); err != nil {
			return nil, err
		}
		out, err = remote.Resource(r.mapping, r.ref.Namespace).Create(ctx, desired, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			// The old object is still being deleted: a plain error, so the step is retried.
			return nil, fmt.Errorf("%s %s is being replaced (Force=true): the old object is not gone yet", r.ref.Kind, r.ref.Name)
		}
	}
	return out, err
}

func (e *Engine) patch(ctx context.Context, remote *cluster, r *resource, obj *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: FieldManager, Force: new(true), FieldValidation: "Strict"}
	if r.options.off("Validate") {
		opts.FieldValidation = "Ignore"
	}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return remote.Resource(r.mapping, r.ref.Namespace).Patch(ctx, r.ref.Name, types.ApplyPatchType, data, opts)
}

// replace creates the object or overwrites it entirely (`kubectl replace`).
func (e *Engine) replace(ctx context.Context, remote *cluster, r *resource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	client := remote.Resource(r.mapping, r.ref.Namespace)
	validation := "Strict"
	if r.options.off("Validate") {
		validation = "Ignore"
	}
	live, err := client.Get(ctx, r.ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return client.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager, FieldValidation: validation})
	}
	if err != nil {
		return nil, err
	}
	obj = obj.DeepCopy()
	obj.SetResourceVersion(live.GetResourceVersion())
	return client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: FieldManager, FieldValidation: validation})
}

// remove deletes a live object with the given propagation policy; an object already gone, or
// replaced by another of the same name, is not an error. gone reports that the server no
// longer has the object, which the watch cache may not show yet.
func (e *Engine) remove(ctx context.Context, remote *cluster, r *resource, policy metav1.DeletionPropagation) (gone bool, err error) {
	return e.deleteLive(ctx, remote, r, r.live, policy)
}

// deleteLive deletes live, the object r names, if it is still the same object (UID). gone
// reports that it no longer exists.
func (e *Engine) deleteLive(ctx context.Context, remote *cluster, r *resource, live *unstructured.Unstructured, policy metav1.DeletionPropagation) (gone bool, err error) {
	err = remote.Resource(r.mapping, r.ref.Namespace).Delete(ctx, r.ref.Name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: new(live.GetUID())},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete %s %s: %w", r.ref.Kind, r.ref.Name, err)
	}
	e.dryRuns.forget(remote.Name + "/" + r.key())
	return false, nil
}

// propagation returns the PrunePropagationPolicy option; foreground by default.
func propagation(opts syncOptions) metav1.DeletionPropagation {
	switch opts["PrunePropagationPolicy"] {
	case "background":
		return metav1.DeletePropagationBackground
	case "orphan":
		return metav1.DeletePropagationOrphan
	default:
		return metav1.DeletePropagationForeground
	}
}
