package clustercache

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

var namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// namespaces knows which namespaces an apiserver has: their names, kept up to date by a
// reflector over all of them. A comparison of objects nobody manages yet asks it whether their
// namespace exists, where it would otherwise ask the API server: one request per new
// Application, 10,000 in the fleet benchmark's sync. Like the watch caches of managed objects,
// it may lag the API server by a watch event; the engine asks the API server itself before it
// refuses a sync over a missing namespace.
//
// It keeps a 64-bit hash of each name, not the name: 8 bytes a namespace in place of a string's
// 16 and its bytes, which were decoded from a watch event among the garbage of a sync and kept a
// page of small objects in use (20,000 namespaces on each API server of the fleet benchmark, the
// bare loop's and navarch's, 100,000 in all). Two names sharing a hash (below one chance in
// 10¹⁰ among 20,000 names) make a missing namespace look present, and the dry run that follows
// finds it missing, as it would a namespace deleted a moment before; or, once one of the two is
// deleted, a present one look missing, and the engine asks the API server before it refuses a
// sync over it.
type namespaces struct {
	mu    sync.RWMutex
	seed  maphash.Seed
	names map[uint64]struct{} // by nameHash

	synced     chan struct{} // closed once the first list is in
	syncedOnce sync.Once
}

// namespaceWatchRetry is how long an apiserver whose namespaces could not be listed is asked
// directly before navarch tries to watch them again: soon after a failure, later when the
// identity is not allowed to (its RBAC may change, but rarely).
const (
	namespaceWatchRetry          = 30 * time.Second
	namespaceWatchRetryForbidden = 10 * time.Minute
)

// NamespaceExists tells whether the namespace name exists, as the cluster's watch of its
// namespaces last saw it. known is false while there is no synced watch to ask (the first
// moments after connecting, or an identity that may not list namespaces): the caller must ask
// the API server.
func (r *Remote) NamespaceExists(name string) (exists, known bool) {
	n := r.api.namespaceCache()
	if n == nil {
		return false, false
	}
	select {
	case <-n.synced:
	default:
		return false, false
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	_, exists = n.names[n.nameHash(name)]
	return exists, true
}

func (n *namespaces) nameHash(name string) uint64 { return maphash.String(n.seed, name) }

// namespaceCache returns the apiserver's namespace watch, starting it on first use once a
// list of one namespace shows the identity may list them. Until then, and for a while after
// a failed list (namespaceWatchRetry), it returns nil without waiting.
func (a *apiserver) namespaceCache() *namespaces {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.namespaces != nil || a.namespacesProbing || time.Now().Before(a.namespacesRetry) {
		return a.namespaces
	}
	a.namespacesProbing = true
	go a.probeNamespaces()
	return nil
}

// probeNamespaces lists one namespace and starts the watch of all of them if that works.
func (a *apiserver) probeNamespaces() {
	_, err := a.dynamic.Resource(namespacesResource).List(a.ctx, metav1.ListOptions{Limit: 1})
	a.mu.Lock()
	defer a.mu.Unlock()
	a.namespacesProbing = false
	if err != nil {
		retry := namespaceWatchRetry
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			retry = namespaceWatchRetryForbidden
		}
		a.namespacesRetry = time.Now().Add(retry)
		a.log.V(1).Info("Cannot watch namespaces; looking each one up instead", "error", err.Error(), "retryIn", retry.String())
		return
	}
	a.namespaces = startNamespaces(a.ctx, a)
	a.log.V(1).Info("Watching namespaces")
}

// startNamespaces starts the reflector of all namespaces of a, which runs until ctx ends.
func startNamespaces(ctx context.Context, a *apiserver) *namespaces {
	n := newNamespaces()
	runReflector(ctx, namespacesResource, a.streams.Resource(namespacesResource), "", n)
	return n
}

func newNamespaces() *namespaces {
	return &namespaces{seed: maphash.MakeSeed(), names: map[uint64]struct{}{}, synced: make(chan struct{})}
}

// namespaceName is a namespace as the cache keeps it, during a streamed list too.
type namespaceName string

// GetObjectMeta gives the reflector's key function what it reads.
func (n namespaceName) GetObjectMeta() metav1.Object { return &metav1.ObjectMeta{Name: string(n)} }

func nameOf(obj any) (namespaceName, error) {
	if n, ok := obj.(namespaceName); ok {
		return n, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", fmt.Errorf("the namespace watch handed over a %T: %w", obj, err)
	}
	return namespaceName(m.GetName()), nil
}

// Add and Update record a namespace; Delete forgets it.
func (n *namespaces) Add(obj any) error    { return n.set(obj, true) }
func (n *namespaces) Update(obj any) error { return n.set(obj, true) }
func (n *namespaces) Delete(obj any) error { return n.set(obj, false) }

func (n *namespaces) set(obj any, exists bool) error {
	name, err := nameOf(obj)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if exists {
		n.names[n.nameHash(string(name))] = struct{}{}
	} else {
		delete(n.names, n.nameHash(string(name)))
	}
	return nil
}

// Replace takes a whole list: the first one, or a relist.
func (n *namespaces) Replace(list []any, _ string) error {
	names := make(map[uint64]struct{}, len(list))
	for _, obj := range list {
		name, err := nameOf(obj)
		if err != nil {
			return err
		}
		names[n.nameHash(string(name))] = struct{}{}
	}
	n.mu.Lock()
	n.names = names
	n.mu.Unlock()
	n.syncedOnce.Do(func() { close(n.synced) })
	return nil
}

// Resync has nothing to do.
func (n *namespaces) Resync() error { return nil }

// Transformer has a streamed list keep only the names as they arrive.
func (n *namespaces) Transformer() toolscache.TransformFunc {
	return func(obj any) (any, error) { return nameOf(obj) }
}
