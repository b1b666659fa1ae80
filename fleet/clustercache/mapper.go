package clustercache

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// mapper finds the resource of a kind from the API server's discovery, keeping only what a
// mapping needs: for each group/version/kind, its resource's name and whether it is
// namespaced. client-go's discovery REST mapper keeps each resource in half a dozen maps
// (plural, singular, by kind, by resource, scope) and the memory cache under it every
// discovery document: about 330 KB for a Kubernetes 1.37 API server, against about 40 KB
// here (BenchmarkKinds). A fleet of one Cluster per API server pays it once per Cluster.
//
// The table is read without a lock and replaced whole: it is discovered on first use and
// again when reset.
type mapper struct {
	discovery discovery.DiscoveryInterface

	table  atomic.Pointer[kindTable] // nil until discovered, and after a reset
	loadMu sync.Mutex                // one discovery at a time
}

// kindTable is what one discovery found.
type kindTable struct {
	kinds map[schema.GroupVersionKind]kindResource
	// preferred is each group's preferred version, for a kind asked for without a version.
	preferred map[string]string
}

// kindResource is the resource that serves a kind.
type kindResource struct {
	resource   string
	namespaced bool
}

func newMapper(d discovery.DiscoveryInterface) *mapper { return &mapper{discovery: d} }

// RESTMapping returns how to reach objects of kind gk at version (the group's preferred
// version when empty), discovering the API first if it has not been yet. A kind the API does
// not serve is a meta.NoKindMatchError.
func (m *mapper) RESTMapping(gk schema.GroupKind, version string) (*meta.RESTMapping, error) {
	t, err := m.discovered()
	if err != nil {
		return nil, err
	}
	if version == "" {
		version = t.preferred[gk.Group]
	}
	gvk := gk.WithVersion(version)
	r, ok := t.kinds[gvk]
	if !ok {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: []string{version}}
	}
	scope := meta.RESTScopeRoot
	if r.namespaced {
		scope = meta.RESTScopeNamespace
	}
	return &meta.RESTMapping{Resource: gvk.GroupVersion().WithResource(r.resource), GroupVersionKind: gvk, Scope: scope}, nil
}

// Reset forgets what was discovered: the next mapping discovers the API again.
func (m *mapper) Reset() { m.table.Store(nil) }

// discovered returns the table, discovering it when there is none.
func (m *mapper) discovered() (*kindTable, error) {
	if t := m.table.Load(); t != nil {
		return t, nil
	}
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	if t := m.table.Load(); t != nil {
		return t, nil // another caller discovered it meanwhile
	}
	groups, lists, err := discovery.ServerGroupsAndResources(m.discovery)
	if err != nil && len(lists) == 0 {
		// A partial answer (one aggregated API down) still maps every other kind.
		return nil, fmt.Errorf("discover the API: %w", err)
	}
	t := kindsOf(groups, lists)
	m.table.Store(t)
	return t, nil
}

// kindsOf builds the table of the discovered groups and resource lists, leaving out
// subresources (pods/log) and resources without a kind.
func kindsOf(groups []*metav1.APIGroup, lists []*metav1.APIResourceList) *kindTable {
	t := &kindTable{kinds: map[schema.GroupVersionKind]kindResource{}, preferred: make(map[string]string, len(groups))}
	for _, g := range groups {
		t.preferred[g.Name] = g.PreferredVersion.Version
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if r.Kind == "" || strings.Contains(r.Name, "/") {
				continue
			}
			gvk := gv.WithKind(r.Kind)
			if _, seen := t.kinds[gvk]; !seen {
				t.kinds[gvk] = kindResource{resource: r.Name, namespaced: r.Namespaced}
			}
		}
	}
	return t
}
