package engine

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/render"
)

// Cluster is what the engine uses of a destination cluster: *clustercache.Remote in the
// controller; the unit tests give the engine an in-memory one.
type Cluster interface {
	// Mapping returns how to reach objects of kind gvk, or an error when the cluster does not
	// serve the kind (yet).
	Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error)
	// Resource returns a client for the objects of mapping m in namespace ns.
	Resource(m *meta.RESTMapping, ns string) dynamic.ResourceInterface
	// Live returns the managed object of mapping m named ns/name from the watch cache, or nil.
	// Watch events of managed objects requeue the Application that tracks them.
	Live(ctx context.Context, m *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error)
	// Capabilities describe the cluster to Helm charts: its version and APIs.
	Capabilities() (render.Capabilities, error)
}

var _ Cluster = (*clustercache.Remote)(nil)

// cluster is a destination cluster with its name, which keys the dry-run cache and metrics,
// and what the pass wrote to it.
type cluster struct {
	Name string
	Cluster

	mu sync.Mutex
	// wrote holds each object the pass applied, as the server returned it. Only the view
	// asWritten returns reads it.
	wrote map[wroteKey]*unstructured.Unstructured
	// written makes Live answer from wrote before the watch cache.
	written bool
}

type wroteKey struct {
	resource        schema.GroupVersionResource
	namespace, name string
}

func clusterOf(remote *clustercache.Remote) *cluster {
	return &cluster{Name: remote.Name, Cluster: remote}
}

func keyOf(m *meta.RESTMapping, ns, name string) wroteKey {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	return wroteKey{m.Resource, ns, name}
}

// recordWrite remembers the server's answer to the pass's apply of the object m, ns, name.
func (c *cluster) recordWrite(m *meta.RESTMapping, ns, name string, obj *unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wrote == nil {
		c.wrote = map[wroteKey]*unstructured.Unstructured{}
	}
	c.wrote[keyOf(m, ns, name)] = obj
}

// asWritten returns the cluster as the pass left it: Live answers with the objects the pass
// applied, which the watch caches have not necessarily seen yet, and with the caches for the
// rest (objects the pass deleted included: one may still be terminating). The writes stand for
// the moment after the pass; a change made since comes as a watch event, which queues the
// next pass.
func (c *cluster) asWritten() *cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &cluster{Name: c.Name, Cluster: c.Cluster, wrote: c.wrote, written: true}
}

// Live returns the managed object m, ns, name: from the watch cache, or, in the view of
// asWritten, as the pass wrote it.
func (c *cluster) Live(ctx context.Context, m *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error) {
	if c.written {
		c.mu.Lock()
		obj, ok := c.wrote[keyOf(m, ns, name)]
		c.mu.Unlock()
		if ok {
			return obj.DeepCopy(), nil
		}
	}
	return c.Cluster.Live(ctx, m, ns, name)
}
