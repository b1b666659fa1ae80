package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

// Quiet implements clustercache.Quiet: a pass of the Application key names on remote ends at
// once when the engine says it would be quiet (engine.QuietAgain). It reads the cache's
// Application without a deep copy (the cache's maps and slices, shared), which only the engine's
// reads see, and without its status lists, which QuietAgain does not read: an idle fleet's
// passes are nearly all quiet, and decoding the lists would be most of their CPU.
func (r *ApplicationReconciler) Quiet(ctx context.Context, remote *clustercache.Remote, key types.NamespacedName) (time.Duration, bool) {
	app := &navarchv1.Application{}
	if err := r.Client.Get(ctx, key, app, client.UnsafeDisableDeepCopy, withoutStatusLists{}); err != nil {
		return 0, false
	}
	if !app.DeletionTimestamp.IsZero() || remote.Ready() != nil {
		return 0, false
	}
	if _, refresh := app.Annotations[navarchv1.AnnotationRefresh]; refresh {
		return 0, false
	}
	return r.Engine.QuietAgain(ctx, app, remote)
}
