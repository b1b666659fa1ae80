package engine

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

// Delete deletes the resources of an Application that is being deleted: every object of its
// inventory that still carries its tracking id, in reverse sync order. It reports how many
// are still there; the caller removes the finalizer at 0 (watch events call it again as
// objects go).
func (e *Engine) Delete(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote) (remaining int, err error) {
	appKey := types.NamespacedName{Namespace: app.Namespace, Name: app.Name}
	opts := e.syncOptions(app)
	var rs []*resource
	for _, inv := range app.Status.Resources {
		gvk := schema.GroupVersionKind{Group: inv.Group, Version: inv.Version, Kind: inv.Kind}
		r := &resource{gvk: gvk, ref: inv.ResourceRef}
		r.mapping, r.mappingErr = remote.Mapping(gvk)
		if r.mapping == nil {
			continue // the kind is gone, and its objects with it
		}
		live, err := remote.Live(ctx, r.mapping, inv.Namespace, inv.Name)
		if err != nil {
			return 0, err
		}
		if owner, ok := clustercache.TrackedBy(live); live == nil || !ok || owner != appKey {
			continue
		}
		r.live, r.wave = live, waveOf(r)
		r.options = opts.withAnnotation(live)
		rs = append(rs, r)
	}
	slices.SortFunc(rs, pruneOrder)
	for _, r := range rs {
		if r.options.off("Delete") {
			continue // Delete=false: the object outlives its Application
		}
		if r.live.GetDeletionTimestamp() == nil {
			if err := e.remove(ctx, remote, r, propagation(opts)); err != nil {
				return 0, fmt.Errorf("delete the resources of %s: %w", appKey, err)
			}
		}
		remaining++
	}
	return remaining, nil
}
