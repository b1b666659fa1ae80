package engine

import (
	"context"
	"maps"
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
// and what the pass applied to it.
type cluster struct {
	Name string
	Cluster

	mu    sync.Mutex
	wrote map[wroteKey]wrote // see recordWrite and asWritten
}

// wrote is an object the pass applied: the server's answer, and the resourceVersion the
// object had before ("" if it did not exist or is unknown).
type wrote struct {
	obj    *unstructured.Unstructured
	before string
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

// recordWrite remembers the server's answer to the pass's apply of the object m, ns, name,
// which had resourceVersion before until then.
func (c *cluster) recordWrite(m *meta.RESTMapping, ns, name, before string, obj *unstructured.Unstructured) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wrote == nil {
		c.wrote = map[wroteKey]wrote{}
	}
	c.wrote[keyOf(m, ns, name)] = wrote{obj: obj, before: before}
}

// asWritten returns the cluster as the pass left it: Live answers with the objects the pass
// applied, which the watch caches have not necessarily seen yet, and with the caches for the
// rest (objects the pass deleted included: one may still be terminating). Where the cache
// already holds a version newer than the pass's write (neither the one the pass replaced nor
// its own), that version answers: someone changed the object since.
func (c *cluster) asWritten() *cluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &cluster{Name: c.Name, Cluster: writtenView{Cluster: c.Cluster, wrote: maps.Clone(c.wrote)}}
}

// writtenView is a Cluster whose Live answers as asWritten describes.
type writtenView struct {
	Cluster
	wrote map[wroteKey]wrote
}

func (v writtenView) Live(ctx context.Context, m *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error) {
	cached, err := v.Cluster.Live(ctx, m, ns, name)
	w, ok := v.wrote[keyOf(m, ns, name)]
	if !ok || err != nil {
		return cached, err
	}
	if cached != nil {
		if rv := cached.GetResourceVersion(); rv != w.before && rv != w.obj.GetResourceVersion() {
			return cached, nil
		}
	}
	return w.obj.DeepCopy(), nil
}
