package clustercache

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	toolscache "k8s.io/client-go/tools/cache"
)

// watch is the cache of one resource type's managed objects on an apiserver. A reflector
// (client-go's list and watch, with its relists, retries and backoff) writes into it directly,
// and each change queues the Application that tracks the object, in the reflector's own
// goroutine. A shared informer would do the same with five more goroutines and a buffer of
// about 16 KB between them, per watched type: for a fleet of one Cluster per API server, about
// 100 KB a Cluster (BenchmarkClusterOnItsOwnAPIServer), for nothing navarch uses, since it
// reads objects only by key and has one handler that returns at once.
type watch struct {
	onEvent func(*cachedObject)
	pack    packer // used by the reflector's goroutine only

	mu sync.RWMutex
	// objects holds the entries themselves, not pointers to them: an entry allocated on its
	// own would be one more small object per managed object, made during a sync among its
	// garbage, whose page it keeps in use at rest.
	objects map[objectKey]cachedObject

	synced     chan struct{} // closed once the first list is in
	syncedOnce sync.Once
}

// startWatch starts watching the managed objects of gvr through resources until ctx ends.
func startWatch(ctx context.Context, gvr schema.GroupVersionResource, resources dynamic.ResourceInterface, onEvent func(*cachedObject)) *watch {
	w := &watch{onEvent: onEvent, objects: map[objectKey]cachedObject{}, synced: make(chan struct{})}
	runReflector(ctx, gvr, resources, LabelManaged+"=true", w)
	return w
}

// runReflector runs a client-go reflector until ctx ends: it lists and watches the objects of
// gvr that selector selects (all of them with ""), and writes them into store.
func runReflector(ctx context.Context, gvr schema.GroupVersionResource, resources dynamic.ResourceInterface, selector string, store toolscache.ReflectorStore) {
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return resources.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (apiwatch.Interface, error) {
			o.LabelSelector = selector
			return resources.Watch(ctx, o)
		},
	}
	r := toolscache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, store, toolscache.ReflectorOptions{
		Name:            "navarch " + gvr.String(),
		TypeDescription: gvr.String(),
	})
	go r.RunWithContext(ctx)
}

// objectKey finds a cached object: its namespace (empty for a cluster-scoped object) and
// name, which point into the object's block, so a key costs no allocation of its own.
type objectKey struct{ namespace, name string }

func (o *cachedObject) key() objectKey { return objectKey{o.namespace(), o.name()} }

// get returns the cached object namespace/name, if any.
func (w *watch) get(namespace, name string) (cachedObject, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	o, ok := w.objects[objectKey{namespace, name}]
	return o, ok
}

// Add and Update keep an object the watch reports and queue its Application.
func (w *watch) Add(obj any) error { return w.Update(obj) }

func (w *watch) Update(obj any) error {
	o, err := w.compact(obj)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.objects[o.key()] = *o
	w.mu.Unlock()
	w.onEvent(o)
	return nil
}

// Delete forgets an object the watch reports deleted and queues its Application.
func (w *watch) Delete(obj any) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	key := objectKey{m.GetNamespace(), m.GetName()}
	w.mu.Lock()
	o, ok := w.objects[key]
	delete(w.objects, key)
	w.mu.Unlock()
	if !ok {
		c, err := w.compact(obj)
		if err != nil {
			return err
		}
		o = *c
	}
	w.onEvent(&o)
	return nil
}

// Replace takes a whole list, the first one or a relist after the watch fell too far behind,
// and queues the Applications of the objects that changed, appeared or disappeared since the
// last: a relist of an unchanged fleet queues nothing.
func (w *watch) Replace(list []any, _ string) error {
	objects := make(map[objectKey]cachedObject, len(list))
	for _, obj := range list {
		o, err := w.compact(obj)
		if err != nil {
			return err
		}
		objects[o.key()] = *o
	}
	w.mu.Lock()
	before := w.objects
	w.objects = objects
	w.mu.Unlock()
	for key, o := range objects {
		if old, ok := before[key]; !ok || old.resourceVersion() != o.resourceVersion() {
			w.onEvent(&o)
		}
	}
	for key, old := range before {
		if _, ok := objects[key]; !ok {
			w.onEvent(&old)
		}
	}
	w.syncedOnce.Do(func() { close(w.synced) })
	return nil
}

// Resync has nothing to do: every change is handled as it comes.
func (w *watch) Resync() error { return nil }

// Transformer has the reflector compact the objects of a streamed list as they arrive, as
// Replace would, rather than hold them whole until the list ends.
func (w *watch) Transformer() toolscache.TransformFunc { return w.pack.compact }

func (w *watch) compact(obj any) (*cachedObject, error) {
	c, err := w.pack.compact(obj)
	if err != nil {
		return nil, err
	}
	o, ok := c.(*cachedObject)
	if !ok {
		return nil, fmt.Errorf("the watch handed over a %T", obj)
	}
	return o, nil
}
