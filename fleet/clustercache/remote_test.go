package clustercache

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/navarch-io/navarch/internal/fixture"
)

// A Cluster runs up to Workers Applications at once, each queued Application once, and once
// its queue is empty it keeps no goroutine.
func TestWorkersStartWithAPassAndEndWithIt(t *testing.T) {
	const workers, apps = 3, 12
	var mu sync.Mutex
	running, most := 0, 0
	release := make(chan struct{})
	ran := make(chan types.NamespacedName, apps)
	cache := New(t.Context(), Options{
		InCluster: &rest.Config{Host: "https://127.0.0.1:1"},
		Workers:   workers,
		Handler: func(_ context.Context, _ *Remote, app types.NamespacedName) (time.Duration, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			<-release
			mu.Lock()
			running--
			mu.Unlock()
			ran <- app
			return 0, nil
		},
	})
	east := connectCluster(t, cache, "east", kubeconfigFor("east", "t0ken"))
	// Earlier tests' Remotes end with their contexts; their goroutines may still be returning.
	fixture.WaitFor(t, "no worker", func() bool { return goroutinesIn(t, "clustercache.(*queue).work") == 0 })
	for i := range apps {
		east.Enqueue(types.NamespacedName{Namespace: "apps", Name: fmt.Sprintf("a%d", i)})
	}
	fixture.WaitFor(t, "all workers busy", func() bool { return passGoroutines(t, "pass") == workers })
	if got := queueDepth(t, "east"); got != apps-workers {
		t.Errorf("navarch_cluster_queue_depth{cluster=east} is %v with %d Applications queued and %d running, want %d", got, apps, workers, apps-workers)
	}
	close(release)
	seen := map[types.NamespacedName]bool{}
	for range apps {
		select {
		case app := <-ran:
			if seen[app] {
				t.Errorf("%s ran twice", app)
			}
			seen[app] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d queued Applications ran", len(seen), apps)
		}
	}
	fixture.WaitFor(t, "the workers to end", func() bool { return goroutinesIn(t, "clustercache.(*queue).work") == 0 })
	if got := passGoroutines(t, "pass") + goroutinesIn(t, "clustercache.(*queue).fire"); got != 0 {
		t.Errorf("%d goroutines of the queue at rest, want none", got)
	}
	if got := queueDepth(t, "east"); got != 0 {
		t.Errorf("navarch_cluster_queue_depth{cluster=east} is %v at rest, want 0", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if most != workers {
		t.Errorf("at most %d Applications ran at once, want %d (Workers)", most, workers)
	}
}

// passGoroutines counts the goroutines running the Remote method fn.
func passGoroutines(t *testing.T, fn string) int {
	t.Helper()
	return goroutinesIn(t, "clustercache.(*Remote)."+fn)
}

// goroutinesIn counts the goroutines with fn on their stack.
func goroutinesIn(t *testing.T, fn string) int {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, fn+"(") {
			n++
		}
	}
	return n
}

// queueDepth reads navarch_cluster_queue_depth of cluster from the registry the controller's
// metrics endpoint serves.
func queueDepth(t *testing.T, cluster string) float64 {
	t.Helper()
	m := fixture.Metrics(t, "navarch_cluster_queue_depth", map[string]string{"cluster": cluster})
	if len(m) == 0 {
		t.Fatalf("navarch_cluster_queue_depth{cluster=%q} is not served", cluster)
	}
	return m[0].GetGauge().GetValue()
}
