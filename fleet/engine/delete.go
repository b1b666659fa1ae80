package engine

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

// Delete deletes the resources of an Application that is being deleted: every object of its
// inventory that still carries its tracking id, in reverse sync order, and then the namespace
// it created (status.createdNamespace), if that may go. It reports how many are still there;
// the caller removes the finalizer at 0 (watch events call it again as objects go). What the
// server says is gone counts as gone even while the watch cache, which may lag after the
// cluster was unreachable, still shows it.
func (e *Engine) Delete(ctx context.Context, app *navarchv1.Application, dest *clustercache.Remote) (remaining int, err error) {
	e.Forget(types.NamespacedName{Namespace: app.Namespace, Name: app.Name})
	return e.deleteResources(ctx, app, clusterOf(dest))
}

func (e *Engine) deleteResources(ctx context.Context, app *navarchv1.Application, remote *cluster) (remaining int, err error) {
	appKey := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	opts := e.syncOptions(app)
	var rs []*resource
	if err := e.inventory(ctx, app, remote, opts, func(r *resource) { rs = append(rs, r) }); err != nil {
		return 0, err
	}
	slices.SortFunc(rs, pruneOrder)
	kept := map[string]bool{} // namespaces holding objects that outlive the Application
	for _, r := range rs {
		if r.options.off("Delete") {
			kept[r.ref.Namespace] = true
			continue // Delete=false: the object outlives its Application
		}
		gone := false
		if r.live.GetDeletionTimestamp() == nil {
			if gone, err = e.remove(ctx, remote, r, propagation(opts)); err != nil {
				return 0, fmt.Errorf("delete the resources of %s: %w", appKey, err)
			}
		} else {
			// Being deleted (foreground deletion, finalizers): ask the server whether it still is.
			live, err := e.get(ctx, remote, r)
			if err != nil {
				return 0, fmt.Errorf("delete the resources of %s: %w", appKey, err)
			}
			gone = live == nil || live.GetUID() != r.live.GetUID()
		}
		if !gone {
			remaining++
		}
	}
	if remaining > 0 || app.Status.CreatedNamespace == "" {
		// The created namespace goes last, once everything else is gone: deleting it first
		// would delete the objects in it without their propagation policy and order.
		return remaining, nil
	}
	gone, err := e.deleteCreatedNamespace(ctx, app, remote, opts, kept)
	if err != nil {
		return 0, fmt.Errorf("delete the namespace %s created for %s: %w", app.Status.CreatedNamespace, appKey, err)
	}
	if !gone {
		remaining++
	}
	return remaining, nil
}

// deleteCreatedNamespace deletes the namespace the Application created, unless
// keepCreatedNamespace says it stays, and reports whether it is gone (or stays: nothing to wait
// for). The live namespace is read from the server, and the deletion is conditional on its UID
// and resourceVersion, so a namespace that changes after it was checked (a user removing the
// mark) is checked again instead of deleted.
func (e *Engine) deleteCreatedNamespace(ctx context.Context, app *navarchv1.Application, remote *cluster, opts syncOptions, kept map[string]bool) (gone bool, err error) {
	name := app.Status.CreatedNamespace
	m, err := remote.Mapping(namespaceKind)
	if err != nil {
		return false, err
	}
	client := remote.Resource(m, "")
	live, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", name)
	if why := keepCreatedNamespace(types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, live, opts, kept); why != "" {
		log.V(1).Info("Leaving the created namespace in place", "reason", why)
		return true, nil
	}
	if err := e.releaseHooksIn(ctx, app, remote, name); err != nil {
		return false, err
	}
	if live.GetDeletionTimestamp() != nil {
		return false, nil // its objects are being deleted; its watch brings no event, the caller's requeue does
	}
	policy := propagation(opts)
	err = client.Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: new(live.GetUID()), ResourceVersion: new(live.GetResourceVersion())},
	})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		return false, nil // changed since it was read: check it again in the next pass
	case err != nil:
		return false, err
	}
	log.Info("Deleting the namespace created for the Application")
	return false, nil
}

// keepCreatedNamespace returns why the live namespace that app recorded as created must outlive
// it, or "" if it goes with it. It stays unless it still carries AnnotationCreatedBy naming app:
// navarch did not create this one, or a user gave it away. It also stays when it is a tracked
// resource (a Namespace in a source: deletion of the inventory decides), when it says
// Delete=false (opts are the Application's, as for its other resources), and when objects of
// app that say Delete=false are in it (kept), which would go with it.
func keepCreatedNamespace(app types.NamespacedName, live *unstructured.Unstructured, opts syncOptions, kept map[string]bool) string {
	switch {
	case live.GetAnnotations()[navarchv1.AnnotationCreatedBy] != app.String():
		return fmt.Sprintf("its annotation %s does not name this Application", navarchv1.AnnotationCreatedBy)
	case tracked(live):
		return "it is a resource of a source, deleted with that source's Application"
	case opts.withAnnotation(live).off("Delete"):
		return "it says Delete=false"
	case kept[live.GetName()]:
		return "it holds resources that say Delete=false"
	}
	return ""
}

func tracked(obj *unstructured.Unstructured) bool {
	_, ok := clustercache.TrackedBy(obj)
	return ok
}

// releaseHooksIn removes navarch's finalizer from the hook instances of the Application's last
// operation that are in namespace ns: the Application no longer follows them, and the
// finalizer would keep the namespace from ever being deleted.
func (e *Engine) releaseHooksIn(ctx context.Context, app *navarchv1.Application, remote *cluster, ns string) error {
	state := app.Status.OperationState
	if state == nil || state.SyncResult == nil {
		return nil
	}
	for _, res := range state.SyncResult.Resources {
		if res.HookType == "" || res.Namespace != ns {
			continue
		}
		gvk := schema.GroupVersionKind{Group: res.Group, Version: res.Version, Kind: res.Kind}
		m, err := remote.Mapping(gvk)
		if m == nil {
			if err != nil && !meta.IsNoMatchError(err) {
				return fmt.Errorf("look up kind %s: %w", gvk.Kind, err)
			}
			continue // the kind is gone, and its objects with it
		}
		r := &resource{gvk: gvk, ref: res.ResourceRef, mapping: m}
		live, err := e.get(ctx, remote, r)
		if err != nil {
			return err
		}
		if live != nil {
			if err := e.releaseHook(ctx, remote, r, live); err != nil {
				return err
			}
		}
	}
	return nil
}
