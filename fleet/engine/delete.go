package engine

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

// Delete deletes the resources of an Application that is being deleted: every object of its
// inventory that still carries its tracking id, in reverse sync order. It reports how many
// are still there; the caller removes the finalizer at 0 (watch events call it again as
// objects go). What the server says is gone counts as gone even while the watch cache, which
// may lag after the cluster was unreachable, still shows it.
func (e *Engine) Delete(ctx context.Context, app *navarchv1.Application, dest *clustercache.Remote) (remaining int, err error) {
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
	for _, r := range rs {
		if r.options.off("Delete") {
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
	return remaining, nil
}
