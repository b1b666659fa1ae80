package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

// informedApps holds the Applications of the manager's informer by key: the informer's own
// objects, shared and never changed, so that a worker can look at an Application without
// copying it. It is told of each change just after the informer's store, by its own event
// handler, so it may lag the store briefly; Quiet tolerates that (see there).
type informedApps struct {
	mu sync.RWMutex
	m  map[types.NamespacedName]*navarchv1.Application
}

// get returns the Application key names, read only, or nil.
func (x *informedApps) get(key types.NamespacedName) *navarchv1.Application {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.m[key]
}

func (x *informedApps) put(obj any) {
	app, ok := obj.(*navarchv1.Application)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = map[types.NamespacedName]*navarchv1.Application{}
	}
	x.m[types.NamespacedName{Namespace: app.Namespace, Name: app.Name}] = app
}

// OnAdd implements toolscache.ResourceEventHandler.
func (x *informedApps) OnAdd(obj any, _ bool) { x.put(obj) }

// OnUpdate implements toolscache.ResourceEventHandler.
func (x *informedApps) OnUpdate(_, obj any) { x.put(obj) }

// OnDelete implements toolscache.ResourceEventHandler.
func (x *informedApps) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	app, ok := obj.(*navarchv1.Application)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.m, types.NamespacedName{Namespace: app.Namespace, Name: app.Name})
}

// Quiet implements clustercache.Quiet: a pass of the Application key names on remote ends at
// once when the engine says it would be quiet (engine.QuietAgain), looking at the informer's
// object rather than a copy.
//
// That object may be a moment older than the informer's store. A change the router acts on
// (spec, annotations, deletion) queues the Application again, and that request makes its next
// pass a full one; a status-only change is seen by the pass after the next poll at the latest.
func (r *ApplicationReconciler) Quiet(ctx context.Context, remote *clustercache.Remote, key types.NamespacedName) (time.Duration, bool) {
	app := r.informed.get(key)
	if app == nil || !app.DeletionTimestamp.IsZero() || remote.Ready() != nil {
		return 0, false
	}
	if _, refresh := app.Annotations[navarchv1.AnnotationRefresh]; refresh {
		return 0, false
	}
	return r.Engine.QuietAgain(ctx, app, remote)
}
