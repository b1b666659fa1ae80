package controller

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	last, ok := w.m.Load(client.ObjectKeyFromObject(cached))
	if !ok {
		return cached
	}
	mine := last.(T)
	cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), mine.GetResourceVersion())
	if err == nil && cmp < 0 {
		return mine.DeepCopyObject().(T)
	}
	if err == nil {
		// The cache has caught up: the copy is no longer needed (unless a newer write replaced
		// it meanwhile). An idle fleet thus keeps one copy of each object, the cache's.
		w.m.CompareAndDelete(client.ObjectKeyFromObject(cached), last)
	}
	return cached
}
