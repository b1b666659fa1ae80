package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

// quietReads lends the Applications that Quiet reads (see lender), and quietRead is how it
// reads them: without a deep copy, nor the status lists.
var (
	quietReads lender[navarchv1.Application]
	quietRead  = []client.GetOption{client.UnsafeDisableDeepCopy, withoutStatusLists{}}
)

// Quiet implements clustercache.Quiet: a pass of the Application key names on remote ends at
// once when the engine says it would be quiet (engine.QuietAgain). It reads the cache's
// Application without a deep copy (the cache's maps and slices, shared), which only the engine's
// reads see, and without its status lists, which QuietAgain does not read: an idle fleet's
// passes are nearly all quiet, and decoding the lists would be most of their CPU. The engine
// keeps nothing of app itself, which is lent.
func (r *ApplicationReconciler) Quiet(ctx context.Context, remote *clustercache.Remote, key types.NamespacedName) (time.Duration, bool) {
	app := quietReads.get()
	defer quietReads.put(app)
	if err := r.Client.Get(ctx, key, app, quietRead...); err != nil {
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
