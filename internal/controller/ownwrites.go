package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ownWrites remembers each object as the controller's own last write left it. The informer
// cache may not have seen that write when the next pass starts, and the watches filter out
// status-only events, so a pass that trusted the cache could compare its result with a status
// older than its own write, find nothing to change and leave a stale status for good.
type ownWrites[T client.Object] struct {
	m sync.Map // types.NamespacedName → T
}

// store records obj as written.
func (w *ownWrites[T]) store(obj T) {
	c := obj.DeepCopyObject().(T)
	c.SetManagedFields(nil) // as in the cache, which strips them
	w.m.Store(client.ObjectKeyFromObject(obj), c)
}

// forget drops what is known of a deleted object.
func (w *ownWrites[T]) forget(key types.NamespacedName) { w.m.Delete(key) }

// get reads key from the cache into obj, or returns a copy of the last write when the cache has
// not caught up with it. The write is looked up before the cache is read: the informer drops it
// as soon as the cache holds it, which may happen during the read, and a lookup after the read
// would then find neither the write nor, in the older object the read returned, its effect.
func (w *ownWrites[T]) get(ctx context.Context, c client.Reader, key types.NamespacedName, obj T) (T, error) {
	last, remembered := w.m.Load(key)
	if err := c.Get(ctx, key, obj); err != nil {
		return obj, err
	}
	if remembered && w.lags(obj, last) {
		return last.(T).DeepCopyObject().(T), nil
	}
	return obj, nil
}

// seen tells w that the cache holds cached. The informer calls it for every update, status-only
// ones included, so the copy of a write is dropped once the cache has it. A sync's last write is
// followed by no full pass (the watch ignores status-only updates, and polls that find nothing
// changed end in the quiet check, quiet.go), so without the informer's call an idle fleet would
// keep every object twice.
func (w *ownWrites[T]) seen(cached T) {
	if last, ok := w.m.Load(client.ObjectKeyFromObject(cached)); ok {
		w.lags(cached, last)
	}
}

// lags tells whether cached is older than last, the remembered write of the same object. When
// it is not, the copy is dropped, unless a newer write replaced it meanwhile.
func (w *ownWrites[T]) lags(cached T, last any) bool {
	cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), last.(T).GetResourceVersion())
	switch {
	case err != nil:
		return false
	case cmp < 0:
		return true
	}
	w.m.CompareAndDelete(client.ObjectKeyFromObject(cached), last)
	return false
}

// handler is an event handler that queues nothing: it shows w each object the cache receives.
func (w *ownWrites[T]) handler() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if obj, ok := e.ObjectNew.(T); ok {
				w.seen(obj)
			}
		},
	}
}
