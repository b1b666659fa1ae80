package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/compact"
)

// Each update of an Application reaches the manager's cache as a newly decoded object, with
// its own copies of the Application's name and UID, made among the garbage of the work that
// caused the update. The cache keeps the latest object, and the maps keyed by an
// Application's name or UID (the workqueues, the notifier's tracker, the engine's records)
// keep the copy of whichever object last stored them: small strings scattered over pages
// that otherwise hold garbage, each keeping its page in use. sharedNames gives every version of
// an Application the copies of the version the cache holds, and an Application met for the
// first time copies of its own, packed with other Applications' into blocks of their own.
// The same goes for the destination namespace, often the Application's own (10,000 distinct
// ones in the fleet benchmark, more than internal/compact's table keeps), and for the resource
// version, new with each update, packed into blocks of their own, which die once the versions
// in them are superseded. Strings that repeat across Applications (the namespace, destination
// clusters) are internal/compact's.
type sharedNames struct {
	// cached is the Application informer's indexer, once known. Without it (a cache spread
	// over several namespaces has one informer per namespace), Applications keep their own
	// copies.
	cached atomic.Pointer[toolscache.Indexer]

	mu       sync.Mutex
	names    compact.Strings // names, UIDs and destination namespaces, kept as long as their Application
	versions compact.Strings // resource versions, superseded by the next update
}

// useIndexer makes n share the strings of the Applications that idx holds.
func (n *sharedNames) useIndexer(idx toolscache.Indexer) { n.cached.Store(&idx) }

// shareAppNames gives names the indexer of the cache's Application informer, if it has one
// informer of Applications (not one per namespace).
func shareAppNames(ctx context.Context, c cache.Informers, names *sharedNames) error {
	inf, err := c.GetInformer(ctx, &navarchv1.Application{})
	if err != nil {
		return fmt.Errorf("get the informer of Applications: %w", err)
	}
	if shared, ok := inf.(toolscache.SharedIndexInformer); ok {
		names.useIndexer(shared.GetIndexer())
	}
	return nil
}

// share gives app, just decoded and read by no one else yet, the name, UID and destination
// namespace of the version of it that the cache holds, or packed copies of its own, and a packed
// copy of its resource version. It only reads the cache's object.
func (n *sharedNames) share(app *navarchv1.Application) {
	if n == nil {
		return
	}
	idx := n.cached.Load()
	if idx == nil || app.Name == "" {
		return
	}
	var held *navarchv1.Application
	if obj, ok, err := (*idx).GetByKey(app.Namespace + "/" + app.Name); err == nil && ok {
		if h, _ := obj.(*navarchv1.Application); h != nil && h.UID == app.UID {
			held = h
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	app.ResourceVersion = n.versions.Pack(app.ResourceVersion)
	dest := &app.Spec.Destination.Namespace
	if held == nil {
		app.Name, app.UID = n.names.Pack(app.Name), types.UID(n.names.Pack(string(app.UID)))
		*dest = n.names.Pack(*dest)
		return
	}
	app.Name, app.UID = held.Name, held.UID
	if *dest == held.Spec.Destination.Namespace {
		*dest = held.Spec.Destination.Namespace
	} else {
		*dest = n.names.Pack(*dest)
	}
}
