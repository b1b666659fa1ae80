package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// unseenFor bounds how long a created Application may be missing from the cache before a pass
// creates it again, for an Application deleted before the cache saw it (a watch that restarts
// with a new list can miss both events). A cache normally catches up within seconds, but not
// always under load: at fleet scale, with 64 writes in flight, it still lacked 1,961 of 10,000
// Applications more than a minute after the pass that created them (bench/RESULTS.md).
const unseenFor = 10 * time.Minute

// unseenCreations remembers, per ApplicationSet, the Applications its passes created that the
// cache has not shown yet. A pass that runs before the cache catches up (the creations' own
// watch events queue it) would otherwise create them again, and report every refusal
// (AlreadyExists) as an error of the ApplicationSet.
type unseenCreations struct {
	mu sync.Mutex
	m  map[types.NamespacedName]map[string]time.Time // ApplicationSet → Application → created at
}

// add records names as created at at by a pass of set.
func (u *unseenCreations) add(set types.NamespacedName, names []string, at time.Time) {
	if len(names) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[types.NamespacedName]map[string]time.Time{}
	}
	created := u.m[set]
	if created == nil {
		created = map[string]time.Time{}
		u.m[set] = created
	}
	for _, name := range names {
		created[name] = at
	}
}

// awaited returns the Applications of set created less than unseenFor before now that cached
// (the cache's view) does not hold yet, and forgets the others.
func (u *unseenCreations) awaited(set types.NamespacedName, cached map[string]*navarchv1.Application, now time.Time) map[string]bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out map[string]bool
	for name, at := range u.m[set] {
		if _, seen := cached[name]; seen || now.Sub(at) >= unseenFor {
			delete(u.m[set], name)
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[name] = true
	}
	if len(u.m[set]) == 0 {
		delete(u.m, set)
	}
	return out
}

// forget drops what is known of a deleted ApplicationSet.
func (u *unseenCreations) forget(set types.NamespacedName) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, set)
}
