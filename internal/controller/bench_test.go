package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

// BenchmarkApplicationSet10k measures the bench/README.md budgets for the ApplicationSet controller
// on one real apiserver (run it once: -benchtime=1x):
//   - bare-10k-s: a bare client with 16 concurrent writers creates 10,000 Applications;
//   - create-10k-s: an ApplicationSet generating 10,000 Applications, from creation until every
//     one exists (goal: ≥ 70% of the bare client's rate, i.e. create-10k-s ≤ bare-10k-s / 0.7);
//   - noop-writes and noop-pass-ms: a forced re-reconcile of the unchanged ApplicationSet
//     (goals: 0 writes, ≤ 1 s).
func BenchmarkApplicationSet10k(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	for b.Loop() {
		bare := bareCreate(b, n)

		ns := benchNamespace(b, "bench-appset")
		set := &navarchv1.ApplicationSet{}
		set.Namespace, set.Name = ns, "ten-thousand"
		set.Spec = tenThousand()
		start := time.Now()
		if err := env.Client.Create(ctx, set); err != nil {
			b.Fatal(err)
		}
		// Poll the ApplicationSet's status, which is cheap: listing 10,000 objects every few
		// hundred milliseconds would load the apiserver and slow down what is measured.
		waitForUpToDate(b, ns, set.Name)
		create := time.Since(start)
		waitForCount(b, ns, n)

		// A forced pass over the unchanged ApplicationSet.
		appWrites, setWrites := controllerWrites.applications.Load(), controllerWrites.applicationSets.Load()
		durBefore, countBefore := passStats(b)
		patch := client.RawPatch("application/merge-patch+json",
			[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, navarchv1.AnnotationRefresh, time.Now())))
		if err := env.Client.Patch(ctx, set, patch); err != nil {
			b.Fatal(err)
		}
		var passes uint64
		var sum float64
		testenv.Eventually(b, "the forced pass is done", func() string {
			d, c := passStats(b)
			if sum, passes = d-durBefore, c-countBefore; passes == 0 {
				return "no successful pass since the refresh"
			}
			return ""
		})
		time.Sleep(time.Second) // let any stray write land before counting
		noopAppWrites := controllerWrites.applications.Load() - appWrites
		noopSetWrites := controllerWrites.applicationSets.Load() - setWrites - 1 // the annotation clear

		b.ReportMetric(bare.Seconds(), "bare-10k-s")
		b.ReportMetric(create.Seconds(), "create-10k-s")
		b.ReportMetric(bare.Seconds()/create.Seconds()*100, "rate-%-of-bare")
		b.ReportMetric(float64(noopAppWrites+noopSetWrites), "noop-writes")
		b.ReportMetric(sum/float64(passes)*1000, "noop-pass-ms")
	}
}

func tenThousand() navarchv1.ApplicationSetSpec {
	var a, c []string
	for i := range 100 {
		a = append(a, fmt.Sprintf(`{"app":"app-%03d"}`, i))
		c = append(c, fmt.Sprintf(`{"cluster":"c-%03d"}`, i))
	}
	spec := navarchv1.ApplicationSetSpec{}
	raw := fmt.Sprintf(`{
  "generators": [{"matrix": {"generators": [{"list": {"elements": [%s]}}, {"list": {"elements": [%s]}}]}}],
  "template": {"metadata": {"name": "{{app}}-{{cluster}}"},
    "spec": {"source": {"repoURL": "https://git.example/deploy.git", "path": "apps/{{app}}", "targetRevision": "main"},
      "destination": {"name": "in-cluster", "namespace": "{{app}}"},
      "syncPolicy": {"automated": {"prune": true, "selfHeal": true}, "syncOptions": ["CreateNamespace=true"]}}},
  "syncPolicy": {"preserveResourcesOnDeletion": true}}`, strings.Join(a, ","), strings.Join(c, ","))
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		panic(err)
	}
	return spec
}

// bareCreate is the reference: a client-go client with 16 concurrent writers and no client-side
// rate limit creates n Applications.
func bareCreate(b *testing.B, n int) time.Duration {
	b.Helper()
	cfg := env.Management.RESTConfig()
	cfg.QPS, cfg.Burst = 100000, 100000
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	ns := benchNamespace(b, "bench-bare")
	work := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range 16 {
		wg.Go(func() {
			for i := range work {
				app := &navarchv1.Application{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("app-%03d-c-%03d", i/100, i%100),
						Labels: map[string]string{navarchv1.LabelApplicationSet: "bare"}},
					Spec: navarchv1.ApplicationSpec{
						Source:      navarchv1.ApplicationSource{RepoURL: "https://git.example/deploy.git", Path: "apps/x", TargetRevision: "main"},
						Destination: navarchv1.ApplicationDestination{Name: "in-cluster", Namespace: "x"},
					},
				}
				if err := c.Create(context.Background(), app); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return time.Since(start)
}

func benchNamespace(b *testing.B, prefix string) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	return ns.Name
}

func waitForCount(b *testing.B, ns string, n int) {
	b.Helper()
	testenv.EventuallyWithin(b, 10*time.Minute, fmt.Sprintf("%d Applications exist", n), func() string {
		var list metav1.PartialObjectMetadataList
		list.SetGroupVersionKind(navarchv1.GroupVersion.WithKind("ApplicationList"))
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		if len(list.Items) < n {
			return fmt.Sprintf("%d Applications", len(list.Items))
		}
		return ""
	})
}

func waitForUpToDate(b *testing.B, ns, name string) {
	b.Helper()
	testenv.EventuallyWithin(b, 5*time.Minute, "the ApplicationSet reports ResourcesUpToDate for 10,000 Applications", func() string {
		set := &navarchv1.ApplicationSet{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, set); err != nil {
			b.Fatal(err)
		}
		if !meta.IsStatusConditionTrue(set.Status.Conditions, navarchv1.ApplicationSetResourcesUpToDate) || set.Status.ApplicationCount != 10000 {
			return fmt.Sprintf("applicationCount %d, conditions %+v", set.Status.ApplicationCount, set.Status.Conditions)
		}
		return ""
	})
}

// passStats reads the controller's reconcile-duration histogram: total seconds and count of
// successful passes.
func passStats(b *testing.B) (float64, uint64) {
	b.Helper()
	m := &dto.Metric{}
	if err := reconcileDuration.WithLabelValues("success").(prometheus.Histogram).Write(m); err != nil {
		b.Fatal(err)
	}
	return m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount()
}
