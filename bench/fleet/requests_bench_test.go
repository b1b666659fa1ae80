package fleetbench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/navarch-io/navarch/internal/localcluster"
)

// BenchmarkRequestCosts measures what each kind of request a sync sends costs a workload
// cluster: the CPU its processes (kube-apiserver, etcd, kube-controller-manager, scheduler,
// kwok) use per request, over NAVARCH_BENCH_REQUESTS requests (default 3,000) sent by 16
// writers to one workload-mode cluster, one request per namespace. The requests are those of
// the fleet benchmark's Applications: the namespace's creation and lookup, and the server-side
// apply of each object, as a dry run before it exists, for real, and as a dry run once it
// exists; then Services created in rounds, each into a cluster holding more of them, to show
// how a Service's cost grows with the number of Services; and an Event. Each figure is
// reported as <request>-ms (milliseconds of the cluster's CPU per request); the log splits
// each by process. Run it with `make bench-requests`.
func BenchmarkRequestCosts(b *testing.B) {
	n := envInt(b, "NAVARCH_BENCH_REQUESTS", 3000)
	ctx := context.Background()
	dir := b.TempDir()
	b.Cleanup(localcluster.StopOnSignal())
	c, err := localcluster.Start(ctx, localcluster.Options{Name: "w0", Workloads: true, Dir: filepath.Join(dir, "w0"),
		Logger: testr.NewWithInterface(b, testr.Options{})})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := c.Stop(); err != nil {
			b.Error(err)
		}
	})
	cfg := unlimitedConfig(c)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		costs := requestCosts{b: b, cluster: c, n: n}
		costs.measure(ctx, dyn, kc)
		b.Logf("cluster CPU per request, %d requests each, 16 writers:\n%s", n, costs.log.String())
	}
}

// requestCosts runs the phases of BenchmarkRequestCosts and keeps their figures.
type requestCosts struct {
	b       *testing.B
	cluster *localcluster.Cluster
	n       int
	log     strings.Builder
}

// cpu returns the CPU time used so far by each of the cluster's processes, by name.
func (r *requestCosts) cpu() map[string]time.Duration {
	out := map[string]time.Duration{}
	processCPU(r.b, r.cluster, "", out)
	return out
}

// phase sends request(i) for i in [0, n) with 16 writers, after a pause that lets the work of
// the previous phase settle, and records the cluster's CPU per request as metric.
func (r *requestCosts) phase(metric string, request func(i int) error) {
	time.Sleep(5 * time.Second)
	before := r.cpu()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				if err := request(i); err != nil {
					r.b.Errorf("%s %d: %v", metric, i, err)
				}
			}
		})
	}
	for i := range r.n {
		work <- i
	}
	close(work)
	wg.Wait()
	if r.b.Failed() {
		r.b.FailNow()
	}
	var total time.Duration
	split := map[string]float64{}
	for name, t := range r.cpu() {
		total += t - before[name]
		split[name] = (t - before[name]).Seconds()
	}
	perRequest := float64(total.Microseconds()) / 1000 / float64(r.n)
	r.b.ReportMetric(perRequest, metric+"-ms")
	fmt.Fprintf(&r.log, "  %-32s %6.2f ms  (%s)\n", metric, perRequest, format(split))
}

func (r *requestCosts) measure(ctx context.Context, dyn dynamic.Interface, kc kubernetes.Interface) {
	ns := func(i int) string { return fmt.Sprintf("n-%05d", i) }
	r.phase("namespace-create", func(i int) error {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns(i)}}, metav1.CreateOptions{})
		return err
	})
	r.phase("namespace-get", func(i int) error {
		_, err := kc.CoreV1().Namespaces().Get(ctx, ns(i), metav1.GetOptions{})
		return err
	})
	apply := func(gvr schema.GroupVersionResource, obj *unstructured.Unstructured, dryRun bool) func(int) error {
		data, err := json.Marshal(obj.Object)
		if err != nil {
			r.b.Fatal(err)
		}
		opts := metav1.PatchOptions{FieldManager: "navarch", Force: new(true), FieldValidation: "Strict"}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		return func(i int) error {
			_, err := dyn.Resource(gvr).Namespace(ns(i)).Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
			return err
		}
	}
	// The fleet benchmark's objects, labelled and annotated as navarch applies them.
	objects := source("r1")
	var service *unstructured.Unstructured
	for _, kind := range []struct{ file, resource string }{
		{"app/configmap.yaml", "configmaps"}, {"app/secret.yaml", "secrets"}, {"app/service.yaml", "services"},
	} {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(objects[kind.file]), &obj.Object); err != nil {
			r.b.Fatal(err)
		}
		obj.SetLabels(map[string]string{"navarch.io/managed": "true"})
		obj.SetAnnotations(map[string]string{"navarch.io/tracking-id": "fleet/c000-a000:/" + obj.GetKind() + ":" + obj.GetName()})
		gvr := schema.GroupVersionResource{Version: "v1", Resource: kind.resource}
		name := strings.ToLower(obj.GetKind())
		r.phase(name+"-dry-run-absent", apply(gvr, obj, true))
		r.phase(name+"-apply-create", apply(gvr, obj, false))
		r.phase(name+"-dry-run-present", apply(gvr, obj, true))
		service = obj
	}
	// More Services, a round of n at a time: each round allocates its cluster IPs with n more
	// allocated already.
	for round := 2; round <= 4; round++ {
		more := service.DeepCopy()
		more.SetName(fmt.Sprintf("web-%d", round))
		r.phase(fmt.Sprintf("service-create-%dk-present", (round-1)*r.n/1000), apply(schema.GroupVersionResource{Version: "v1", Resource: "services"}, more, false))
	}
	// A dry run of a Service's creation with all those allocated: does a dry run pay for the
	// allocator's count of what is allocated, as the creation does?
	absent := service.DeepCopy()
	absent.SetName("web-absent")
	r.phase(fmt.Sprintf("service-dry-run-absent-%dk-present", 4*r.n/1000), apply(schema.GroupVersionResource{Version: "v1", Resource: "services"}, absent, true))
	r.phase("event-create", func(i int) error {
		now := metav1.Now()
		_, err := kc.CoreV1().Events(ns(i)).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "app."},
			InvolvedObject: corev1.ObjectReference{APIVersion: "navarch.io/v1alpha1", Kind: "Application", Namespace: ns(i), Name: "app"},
			Reason:         "OperationStarted", Message: "sync of 9f1c2e7a started by automated sync", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "navarch"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}, metav1.CreateOptions{})
		return err
	})
}
