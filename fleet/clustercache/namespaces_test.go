package clustercache

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/localcluster"
)

// On a real API server, a Cluster knows its namespaces from a watch: those there when it
// connected and those created since. An identity that may not list namespaces gets no watch:
// the answer stays unknown (the engine then asks the API server), and navarch does not try
// again for minutes.
func TestNamespacesAreKnownFromAWatch(t *testing.T) {
	api := localcluster.StartForTest(t, localcluster.Options{Name: "namespaces"})
	cache := New(t.Context(), Options{Handler: idle})
	r := connectCluster(t, cache, "namespaces", api.Kubeconfig())
	fixture.WaitFor(t, "the namespace watch to list", func() bool {
		_, known := r.NamespaceExists("default")
		return known
	})
	if exists, _ := r.NamespaceExists("default"); !exists {
		t.Error("namespace default: not known to exist")
	}
	if exists, _ := r.NamespaceExists("later"); exists {
		t.Fatal("namespace later exists before it was created")
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("later")
	if _, err := dynamic.NewForConfigOrDie(api.RESTConfig()).Resource(namespacesResource).Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.WaitFor(t, "the watch to deliver namespace later", func() bool {
		exists, known := r.NamespaceExists("later")
		return exists && known
	})

	kubeconfig, err := api.KubeconfigFor("no-namespaces")
	if err != nil {
		t.Fatal(err)
	}
	restricted := connectCluster(t, cache, "restricted", kubeconfig)
	if _, known := restricted.NamespaceExists("default"); known {
		t.Fatal("an identity that may not list namespaces knows them at once")
	}
	fixture.WaitFor(t, "the refused list to be noted", func() bool {
		restricted.api.mu.Lock()
		defer restricted.api.mu.Unlock()
		return !restricted.api.namespacesProbing && !restricted.api.namespacesRetry.IsZero()
	})
	restricted.api.mu.Lock()
	retryIn, watching := time.Until(restricted.api.namespacesRetry), restricted.api.namespaces != nil
	restricted.api.mu.Unlock()
	if _, known := restricted.NamespaceExists("default"); known || watching || retryIn < namespaceWatchRetryForbidden-time.Minute {
		t.Errorf("an identity that may not list namespaces: known %t, watching %t, next try in %s; want unknown, no watch, in about %s",
			known, watching, retryIn.Round(time.Second), namespaceWatchRetryForbidden)
	}
}

// The cache follows what its reflector hands over: a list replaces what it knew, an event
// adds or forgets one name, whether it comes as an object or as a name kept from a streamed
// list.
func TestTheNamespaceCacheFollowsItsReflector(t *testing.T) {
	n := newNamespaces()
	object := func(name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName(name)
		return u
	}
	has := func(want ...string) {
		t.Helper()
		if len(n.names) != len(want) {
			t.Errorf("%d names, want %v", len(n.names), want)
		}
		for _, name := range want {
			if _, ok := n.names[n.nameHash(name)]; !ok {
				t.Errorf("no namespace %s, want %v", name, want)
			}
		}
	}
	if err := n.Add(object("old")); err != nil {
		t.Fatal(err)
	}
	transform := n.Transformer()
	streamed, err := transform(object("b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Replace([]any{object("a"), streamed}, "7"); err != nil {
		t.Fatal(err)
	}
	has("a", "b")
	select {
	case <-n.synced:
	default:
		t.Error("not synced after a list")
	}
	if err := n.Update(object("c")); err != nil {
		t.Fatal(err)
	}
	if err := n.Delete(object("a")); err != nil {
		t.Fatal(err)
	}
	if err := n.Delete(namespaceName("b")); err != nil {
		t.Fatal(err)
	}
	has("c")
}
