package clustercache_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

// The Remotes of these tests never reach their cluster: connecting builds clients without a
// request, and the handler stands for a sync in progress.

// Release returns only once the worker running an Application has returned, and nothing runs
// on the cluster afterwards, though more Applications were queued.
func TestReleaseWaitsForTheWorkersAndRunsNothingAfter(t *testing.T) {
	started, finish := make(chan struct{}), make(chan struct{})
	var running, after atomic.Int32
	var released atomic.Bool
	cache := clustercache.New(t.Context(), clustercache.Options{
		InCluster: &rest.Config{Host: "https://127.0.0.1:1"},
		Workers:   1,
		Handler: func(ctx context.Context, _ *clustercache.Remote, _ types.NamespacedName) (time.Duration, error) {
			if released.Load() {
				after.Add(1)
			}
			running.Add(1)
			defer running.Add(-1)
			close(started)
			<-finish // a sync does not notice the cancellation at once
			return 0, ctx.Err()
		},
	})
	remote, err := cache.InCluster()
	if err != nil {
		t.Fatal(err)
	}
	remote.Enqueue(types.NamespacedName{Namespace: "a", Name: "first"})
	<-started
	remote.Enqueue(types.NamespacedName{Namespace: "a", Name: "second"})

	// While the worker runs, Release waits; it gives up when its context ends.
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := cache.Release(short, navarchv1.InClusterName); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Release with a worker still running: %v, want the context's deadline", err)
	}
	if running.Load() != 1 {
		t.Fatalf("%d workers running, want 1", running.Load())
	}
	if _, err := cache.Get(navarchv1.InClusterName); !errors.Is(err, clustercache.ErrNotConnected) {
		t.Fatalf("Get after Release: %v, want ErrNotConnected", err)
	}

	// A second Release, whoever calls it, still waits for that worker.
	done := make(chan error, 1)
	go func() { done <- cache.Release(context.Background(), navarchv1.InClusterName) }()
	select {
	case err := <-done:
		t.Fatalf("Release returned (%v) while the worker runs", err)
	case <-time.After(100 * time.Millisecond):
	}
	released.Store(true)
	close(finish)
	if err := <-done; err != nil {
		t.Fatalf("Release: %v", err)
	}
	if running.Load() != 0 || after.Load() != 0 {
		t.Fatalf("after Release: %d running, %d run after the release; want none", running.Load(), after.Load())
	}
}

// A cache whose Owns refuses a cluster does not connect to it.
func TestConnectRefusesAClusterAnotherReplicaOwns(t *testing.T) {
	owned := map[string]bool{"east": true}
	cache := clustercache.New(t.Context(), clustercache.Options{
		InCluster: &rest.Config{Host: "https://127.0.0.1:1"},
		Handler: func(context.Context, *clustercache.Remote, types.NamespacedName) (time.Duration, error) {
			return 0, nil
		},
		Owns: func(name string) bool { return owned[name] },
	})
	kubeconfig := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	for name, want := range map[string]error{"east": nil, "west": clustercache.ErrNotOwned} {
		cluster := &navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cache.Connect(cluster, kubeconfig); !errors.Is(err, want) {
			t.Errorf("Connect %s: %v, want %v", name, err, want)
		}
	}
	if _, err := cache.InCluster(); !errors.Is(err, clustercache.ErrNotOwned) {
		t.Errorf("InCluster: %v, want ErrNotOwned", err)
	}
	if got := cache.Names(); len(got) != 1 || got[0] != "east" {
		t.Errorf("connected clusters %v, want [east]", got)
	}
}
