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

// latest returns cached, or a copy of the last write when the cache has not caught up with it.
func (w *ownWrites[T]) latest(cached T) T {
	if mine, newer := w.seen(cached); newer {
		return mine.DeepCopyObject().(T)
	}
	return cached
}

// seen tells w that the cache holds cached. Once the cache has caught up with the last write,
// the copy is dropped (unless a newer write replaced it meanwhile); otherwise seen returns it.
// Full passes call it, and so does the informer for every update, status-only ones included.
// A sync's last write is followed by no full pass: the watch ignores status-only updates, and
// polls that find nothing changed end in the quiet check (quiet.go) without reading the copy.
// Without the informer's call an idle fleet would keep every object twice; with it, only a
// copy stored after the informer delivered its write stays, until the next full pass.
func (w *ownWrites[T]) seen(cached T) (mine T, newer bool) {
	key := client.ObjectKeyFromObject(cached)
	last, ok := w.m.Load(key)
	if !ok {
		return mine, false
	}
	mine = last.(T)
	cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), mine.GetResourceVersion())
	switch {
	case err != nil:
		return mine, false
	case cmp < 0:
		return mine, true
	}
	w.m.CompareAndDelete(key, last)
	return mine, false
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
