package clustercache

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// These Remotes never reach their cluster: connecting builds clients without a request, and
// the events are handed to the apiserver as its informers would.

func kubeconfigFor(contextName, token string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: %[1]s, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: %[1]s, user: {token: %[2]s}}]
contexts: [{name: %[1]s, context: {cluster: %[1]s, user: %[1]s}}]
current-context: %[1]s
`, contextName, token)
}

// idle is a Handler with nothing to do.
func idle(context.Context, *Remote, types.NamespacedName) (time.Duration, error) { return 0, nil }

// connectCluster connects Cluster name with kubeconfig, failing the test if it cannot.
func connectCluster(t *testing.T, cache *Cache, name string, kubeconfig []byte) *Remote {
	t.Helper()
	r, err := cache.Connect(&navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, kubeconfig)
	if err != nil {
		t.Fatalf("Connect %s: %v", name, err)
	}
	return r
}

// trackedConfigMap is a managed object as a watch hands it to its apiserver: ConfigMap
// ns/settings, tracked by app, through the caches' transform.
func trackedConfigMap(app types.NamespacedName, ns string) *cachedObject {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName("settings")
	u.SetAnnotations(map[string]string{navarchv1.AnnotationTrackingID: TrackingID(app, u)})
	o, err := new(packer).compact(u)
	if err != nil {
		panic(err)
	}
	return o.(*cachedObject)
}

// Clusters registered with the same server and credentials share one apiserver (clients,
// discovery, watches); an event of a managed object queues its Application only on the
// Cluster that last queued it; a different identity on the same server gets its own; and the
// shared watches stop with the last Cluster that uses them.
func TestClustersOfOneServerAndIdentityShareItsWatchesAndEachEventQueuesOneCluster(t *testing.T) {
	type run struct {
		cluster string
		app     types.NamespacedName
	}
	runs := make(chan run, 16)
	cache := New(t.Context(), Options{
		InCluster: &rest.Config{Host: "https://127.0.0.1:1"},
		Workers:   1,
		Handler: func(_ context.Context, r *Remote, app types.NamespacedName) (time.Duration, error) {
			runs <- run{r.Name, app}
			return 0, nil
		},
	})
	connect := func(name string, kubeconfig []byte) *Remote { return connectCluster(t, cache, name, kubeconfig) }
	next := func() run {
		t.Helper()
		select {
		case got := <-runs:
			return got
		case <-time.After(5 * time.Second):
			t.Fatal("nothing ran")
			return run{}
		}
	}
	nothingMore := func() {
		t.Helper()
		select {
		case got := <-runs:
			t.Fatalf("%s ran on %s, want nothing", got.app, got.cluster)
		case <-time.After(200 * time.Millisecond):
		}
	}

	// Two contexts of one cluster with one token (as `navarch cluster add --name` makes), and
	// a third with another token.
	teamA, teamB := connect("team-a", kubeconfigFor("a", "t0ken")), connect("team-b", kubeconfigFor("b", "t0ken"))
	other := connect("other", kubeconfigFor("o", "another-token"))
	if teamA.api != teamB.api {
		t.Fatal("team-a and team-b reach one server as one identity but do not share its apiserver")
	}
	if other.api == teamA.api {
		t.Fatal("other presents another token but shares team-a's apiserver")
	}

	appA := types.NamespacedName{Namespace: "apps", Name: "a"}
	appB := types.NamespacedName{Namespace: "apps", Name: "b"}
	teamA.Enqueue(appA)
	teamB.Enqueue(appB)
	for range 2 {
		if got := next(); (got.app == appA) != (got.cluster == "team-a") {
			t.Fatalf("%s ran on %s", got.app, got.cluster)
		}
	}

	// An event queues its Application once, on its own Cluster.
	teamA.api.onEvent(trackedConfigMap(appB, "b"))
	if got := next(); got != (run{"team-b", appB}) {
		t.Fatalf("the event of b's object ran %s on %s, want b on team-b", got.app, got.cluster)
	}
	teamA.api.onEvent(trackedConfigMap(appA, "a"))
	if got := next(); got != (run{"team-a", appA}) {
		t.Fatalf("the event of a's object ran %s on %s, want a on team-a", got.app, got.cluster)
	}
	nothingMore()

	// An Application moved to another Cluster of the server takes its events along; an
	// object whose Application no Cluster queued, or was deleted, queues nothing.
	teamB.Enqueue(appA)
	next()
	teamA.api.onEvent(trackedConfigMap(appA, "a"))
	if got := next(); got != (run{"team-b", appA}) {
		t.Fatalf("after the move, a's event ran %s on %s, want a on team-b", got.app, got.cluster)
	}
	teamA.api.onEvent(trackedConfigMap(types.NamespacedName{Namespace: "apps", Name: "unknown"}, "x"))
	cache.Forget(appB)
	teamA.api.onEvent(trackedConfigMap(appB, "b"))
	nothingMore()

	// The shared watches outlive team-b and stop with team-a, the last Cluster using them.
	api := teamA.api
	cache.Remove("team-b")
	if api.ctx.Err() != nil {
		t.Fatal("removing team-b stopped the watches team-a still uses")
	}
	teamA.api.onEvent(trackedConfigMap(appA, "a"))
	nothingMore() // a was team-b's, which is gone
	cache.Remove("team-a")
	if api.ctx.Err() == nil {
		t.Fatal("the watches still run after the last Cluster using them was removed")
	}
	if other.api.ctx.Err() != nil {
		t.Fatal("removing team-a and team-b stopped other's watches")
	}
	if _, shared := cache.apis[api.key]; shared {
		t.Fatal("the cache still holds the stopped apiserver")
	}
}

// A configuration with code in it (a proxy function) cannot be compared and is never shared.
func TestAConfigurationWithAProxyFunctionIsNotShared(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", BearerToken: "t"}
	if apiserverKey(cfg, "1") != apiserverKey(rest.CopyConfig(cfg), "2") {
		t.Error("two equal configurations have different keys")
	}
	proxied := rest.CopyConfig(cfg)
	proxied.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	if apiserverKey(proxied, "1") == apiserverKey(proxied, "2") {
		t.Error("a configuration with a proxy function is shared")
	}
}

// Connecting again with the bytes a Remote was built from keeps it (a probe of an unchanged
// Cluster); a new server override or a new kubeconfig replaces it, and a kubeconfig that no
// longer parses is reported rather than kept.
func TestConnectKeepsTheRemoteOfUnchangedBytesAndReplacesAChangedOne(t *testing.T) {
	cache := New(t.Context(), Options{Workers: 1, Handler: idle})
	cluster := &navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "east"}}
	connect := func(kubeconfig []byte) *Remote {
		t.Helper()
		r, err := cache.Connect(cluster, kubeconfig)
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		return r
	}
	first := connect(kubeconfigFor("east", "t0ken"))
	if again := connect(kubeconfigFor("east", "t0ken")); again != first {
		t.Fatal("connecting with unchanged bytes replaced the Remote")
	}
	if first.ctx.Err() != nil {
		t.Fatal("connecting with unchanged bytes stopped the Remote")
	}

	cluster.Spec.Server = "https://127.0.0.1:2"
	moved := connect(kubeconfigFor("east", "t0ken"))
	if moved == first || moved.Config.Host != "https://127.0.0.1:2" {
		t.Fatalf("a new spec.server kept the Remote of %s", moved.Config.Host)
	}
	if first.ctx.Err() == nil {
		t.Fatal("the replaced Remote still runs")
	}
	rotated := connect(kubeconfigFor("east", "n3w-token"))
	if rotated == moved || rotated.Config.BearerToken != "n3w-token" {
		t.Fatal("a rotated token kept the old Remote")
	}
	var cfgErr *ConfigError
	if _, err := cache.Connect(cluster, []byte("clusters: [")); !errors.As(err, &cfgErr) {
		t.Fatalf("a kubeconfig that does not parse: got %v, want a ConfigError", err)
	}
}

// Clusters that share an apiserver share its slots: however many workers each has, no more
// than APIServerWorkers Applications run on the apiserver at once; a Cluster reaching the same
// server as another identity has slots of its own.
func TestClustersOfOneApiserverShareItsSlots(t *testing.T) {
	const slots = 3
	var mu sync.Mutex
	running := map[string]int{} // by apiserver key
	most := 0
	release := make(chan struct{})
	ran := make(chan string, 16)
	cache := New(t.Context(), Options{
		InCluster:        &rest.Config{Host: "https://127.0.0.1:1"},
		Workers:          4,
		APIServerWorkers: slots,
		Handler: func(_ context.Context, r *Remote, _ types.NamespacedName) (time.Duration, error) {
			mu.Lock()
			running[r.api.key]++
			if r.Name != "other" {
				most = max(most, running[r.api.key])
			}
			mu.Unlock()
			ran <- r.Name
			<-release
			mu.Lock()
			running[r.api.key]--
			mu.Unlock()
			return 0, nil
		},
	})
	connect := func(name string, kubeconfig []byte) *Remote { return connectCluster(t, cache, name, kubeconfig) }
	teamA, teamB := connect("team-a", kubeconfigFor("a", "t0ken")), connect("team-b", kubeconfigFor("b", "t0ken"))
	for i := range 4 {
		teamA.Enqueue(types.NamespacedName{Namespace: "apps", Name: fmt.Sprintf("a%d", i)})
		teamB.Enqueue(types.NamespacedName{Namespace: "apps", Name: fmt.Sprintf("b%d", i)})
	}
	for range slots {
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatal("fewer Applications than slots started")
		}
	}
	select {
	case name := <-ran:
		t.Fatalf("an Application of %s started while all %d slots of its apiserver were taken", name, slots)
	case <-time.After(300 * time.Millisecond):
	}

	other := connect("other", kubeconfigFor("o", "another-token"))
	other.Enqueue(types.NamespacedName{Namespace: "apps", Name: "o"})
	select {
	case name := <-ran:
		if name != "other" {
			t.Fatalf("%s started while its apiserver's slots were taken", name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("another identity's Cluster waited for the slots of team-a's apiserver")
	}

	close(release)
	for range 8 - slots {
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatal("the queued Applications did not all run once slots were free")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most != slots {
		t.Errorf("at most %d Applications ran at once on the shared apiserver, want %d", most, slots)
	}
}
