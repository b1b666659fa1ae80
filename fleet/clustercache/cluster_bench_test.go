package clustercache_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	_ "sigs.k8s.io/controller-runtime/pkg/controller" // sets controller-runtime's work-queue metrics provider, as in navarch controller

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/localcluster"
)

// BenchmarkClusterOnItsOwnAPIServer measures what a Cluster that shares nothing with another
// costs the controller at rest: its clients and connection, discovery, REST mapper and queue,
// and the watches of the three kinds the fleet benchmark manages (ConfigMaps,
// Services, Secrets), none of which holds an object yet. The fleet benchmark registers 20
// Clusters on each of its 5 API servers with the same credentials, so they share all of this
// but the queue; in a fleet of one Cluster per API server, each pays it. Here each of 20
// Clusters reaches one real API server with a client certificate of its own (a member of
// system:masters), which keeps the Clusters apart, down to their TLS connections, as distinct
// API servers would.
//
// Reported per Cluster: heap-B (the live heap after a collection), stack-B (goroutine stacks)
// and goroutines. controller-runtime's work-queue metrics are on, as in navarch controller (see
// the import).
func BenchmarkClusterOnItsOwnAPIServer(b *testing.B) {
	const clusters = 20
	api := localcluster.StartForTest(b, localcluster.Options{Name: "clusters"})
	kinds := []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Service"}, {Version: "v1", Kind: "Secret"},
	}
	kubeconfigs := make([][]byte, clusters)
	for i := range kubeconfigs {
		var err error
		if kubeconfigs[i], err = api.KubeconfigFor(fmt.Sprintf("cluster-%02d", i), "system:masters"); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		ctx, cancel := context.WithCancel(b.Context())
		cache := clustercache.New(ctx, clustercache.Options{
			Handler: func(context.Context, *clustercache.Remote, types.NamespacedName) (time.Duration, error) {
				return 0, nil
			},
		})
		remotes := make([]*clustercache.Remote, clusters)
		var stacks runtime.MemStats
		runtime.ReadMemStats(&stacks)
		stackBefore, goroutinesBefore := stacks.StackInuse, runtime.NumGoroutine()
		heap := fixture.LiveHeap(func() {
			for i := range remotes {
				r, err := cache.Connect(&navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%02d", i)}}, kubeconfigs[i])
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Probe(ctx); err != nil {
					b.Fatal(err)
				}
				for _, gvk := range kinds {
					m, err := r.Mapping(gvk)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := r.Live(ctx, m, "default", "absent"); err != nil {
						b.Fatal(err)
					}
				}
				remotes[i] = r
			}
			time.Sleep(2 * time.Second) // the watches' first list is in; let their streams settle
		})
		runtime.ReadMemStats(&stacks)
		b.ReportMetric(float64(heap)/clusters, "heap-B/cluster")
		b.ReportMetric(float64(int64(stacks.StackInuse)-int64(stackBefore))/clusters, "stack-B/cluster")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutinesBefore)/clusters, "goroutines/cluster")
		runtime.KeepAlive(remotes)
		cancel()
	}
}
