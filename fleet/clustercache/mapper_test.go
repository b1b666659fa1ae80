package clustercache

import (
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/localcluster"
)

// On a real API server: kinds map to their resources and scopes, an empty version means the
// group's preferred one, an unknown kind is a no-match error, and a CRD established after the
// first discovery is found by the Remote, which discovers again on a miss.
func TestMappingOnARealAPIServer(t *testing.T) {
	api := localcluster.StartForTest(t, localcluster.Options{Name: "mapper"})
	r := connectCluster(t, New(t.Context(), Options{Handler: idle}), "mapper", api.Kubeconfig())
	for _, c := range []struct {
		gvk      schema.GroupVersionKind
		resource schema.GroupVersionResource
		scope    meta.RESTScopeName
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, meta.RESTScopeNameNamespace},
		{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, meta.RESTScopeNameRoot},
		{schema.GroupVersionKind{Group: "apps", Kind: "Deployment"}, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, meta.RESTScopeNameNamespace},
		{schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, meta.RESTScopeNameRoot},
	} {
		m, err := r.Mapping(c.gvk)
		if err != nil {
			t.Errorf("Mapping(%s): %v", c.gvk, err)
			continue
		}
		if m.Resource != c.resource || m.Scope.Name() != c.scope || m.GroupVersionKind.Kind != c.gvk.Kind {
			t.Errorf("Mapping(%s) = %s %s (%s), want %s %s", c.gvk, m.Resource, m.Scope.Name(), m.GroupVersionKind, c.resource, c.scope)
		}
	}

	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	if _, err := r.Mapping(widget); !meta.IsNoMatchError(err) {
		t.Fatalf("Mapping of a kind the API server does not serve: %v, want a no-match error", err)
	}
	establishWidgetCRD(t, dynamic.NewForConfigOrDie(api.RESTConfig()))
	time.Sleep(2100 * time.Millisecond) // a miss discovers again at most every 2 seconds
	m, err := r.Mapping(widget)
	if err != nil {
		t.Fatalf("Mapping of a kind established after the first discovery: %v", err)
	}
	if want := (schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}); m.Resource != want || m.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("Mapping(%s) = %s %s, want %s Namespaced", widget, m.Resource, m.Scope.Name(), want)
	}
}

// establishWidgetCRD installs the CRD of example.com/v1 Widget and waits until it is
// established and served.
func establishWidgetCRD(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := widgets.Namespace("default").List(t.Context(), metav1.ListOptions{}); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("the Widget CRD is not served after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// BenchmarkKinds compares what the REST mapper keeps of a real API server's discovery
// (Kubernetes 1.37, no CRDs), once it has mapped a kind: client-go's discovery REST mapper
// over its memory cache, as navarch used before, against the mapper's table of kinds.
func BenchmarkKinds(b *testing.B) {
	api := localcluster.StartForTest(b, localcluster.Options{Name: "kinds"})
	disc := discovery.NewDiscoveryClientForConfigOrDie(api.RESTConfig())
	configMap := schema.GroupKind{Kind: "ConfigMap"}
	for b.Loop() {
		var deferred meta.RESTMapper
		clientGo := fixture.LiveHeap(func() {
			deferred = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
			if _, err := deferred.RESTMapping(configMap, "v1"); err != nil {
				b.Fatal(err)
			}
		})
		var table *mapper
		ours := fixture.LiveHeap(func() {
			table = newMapper(disc)
			if _, err := table.RESTMapping(configMap, "v1"); err != nil {
				b.Fatal(err)
			}
		})
		runtime.KeepAlive(deferred)
		runtime.KeepAlive(table)
		b.ReportMetric(float64(clientGo), "client-go-B")
		b.ReportMetric(float64(ours), "table-B")
		b.ReportMetric(float64(len(table.table.Load().kinds)), "kinds")
	}
}
