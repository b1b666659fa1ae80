package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Each update of an Application reaches the manager's cache as a newly decoded object, with
// its own copies of the Application's name and UID, made among the garbage of the work that
// caused the update. The cache keeps the latest object, and the maps keyed by an
// Application's name or UID (the workqueues, the notifier's tracker, the engine's records)
// keep the copy of whichever object last stored them: small strings scattered over pages
// that otherwise hold garbage, each keeping its page in use. sharedNames gives every version of
// an Application the copies of the version the cache holds, and an Application met for the
// first time copies of its own, packed with other Applications' into blocks of their own.
// Strings that repeat across Applications (namespaces, destinations) are internal/compact's.
type sharedNames struct {
	// cached is the Application informer's indexer, once known. Without it (a cache spread
	// over several namespaces has one informer per namespace), Applications keep their own
	// copies.
	cached atomic.Pointer[toolscache.Indexer]

	mu    sync.Mutex
	block []byte // the block being filled: strings are appended, never changed
}

// namesBlock is the size of sharedNames' blocks: about a hundred Applications' names and UIDs.
const namesBlock = 4 << 10

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

// share gives app, just decoded and read by no one else yet, the name and UID of the version
// of it that the cache holds, or packed copies of its own. It only reads the cache's object.
func (n *sharedNames) share(app *navarchv1.Application) {
	if n == nil {
		return
	}
	idx := n.cached.Load()
	if idx == nil || app.Name == "" {
		return
	}
	if obj, ok, err := (*idx).GetByKey(app.Namespace + "/" + app.Name); err == nil && ok {
		if held, _ := obj.(*navarchv1.Application); held != nil && held.UID == app.UID {
			app.Name, app.UID = held.Name, held.UID
			return
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	app.Name, app.UID = n.pack(app.Name), types.UID(n.pack(string(app.UID)))
}

// pack returns a copy of s in n's current block, starting a new block when it is full.
func (n *sharedNames) pack(s string) string {
	if s == "" {
		return s
	}
	if len(n.block)+len(s) > cap(n.block) {
		n.block = make([]byte, 0, max(namesBlock, len(s)))
	}
	start := len(n.block)
	n.block = append(n.block, s...)
	return unsafe.String(&n.block[start], len(s))
}
