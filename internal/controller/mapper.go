package controller

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// compiledKindsMapper answers the REST mappings of the kinds compiled into the binary (the
// scheme's: Kubernetes' built-in kinds and navarch.io's) from memory once it has looked each
// up, and asks the discovery-backed mapper for everything else.
//
// Every read of the manager's caches asks for the mapping of its kind, to learn whether the
// kind is namespaced, and the discovery-backed mapper answers by searching every API group
// the management cluster serves: with 10,000 Applications that search was a sixth of an idle
// controller's CPU. The scope and resource of a compiled kind do not change while the
// controller runs.
type compiledKindsMapper struct {
	meta.RESTMapper
	scheme *runtime.Scheme
	known  sync.Map // schema.GroupVersionKind → *meta.RESTMapping
}

// newMapperProvider returns the manager's MapperProvider: the discovery-backed mapper,
// answering the kinds of scheme from memory.
func newMapperProvider(scheme *runtime.Scheme) func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	return func(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
		m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
		if err != nil {
			return nil, err
		}
		return &compiledKindsMapper{RESTMapper: m, scheme: scheme}, nil
	}
}

// RESTMapping implements meta.RESTMapper.
func (m *compiledKindsMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 {
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	gvk := gk.WithVersion(versions[0])
	if mapping, ok := m.known.Load(gvk); ok {
		return mapping.(*meta.RESTMapping), nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err == nil && m.scheme.Recognizes(gvk) {
		m.known.Store(gvk, mapping)
	}
	return mapping, err
}
