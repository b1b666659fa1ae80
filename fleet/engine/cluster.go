package engine

import (
	"context"

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

// cluster is a destination cluster with its name, which keys the dry-run cache and metrics.
type cluster struct {
	Name string
	Cluster
}

func clusterOf(remote *clustercache.Remote) *cluster {
	return &cluster{Name: remote.Name, Cluster: remote}
}
