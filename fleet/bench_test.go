package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// benchObjects are the 4 objects of each benchmark Application.
var benchObjects = []string{
	webConfigMap,
	"apiVersion: v1\nkind: Secret\nmetadata: {name: web}\nstringData: {token: not-a-secret}\n",
	"apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n",
	`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: registry.example.com/web:v1}]}
`,
}

// BenchmarkSync200Applications measures the sync throughput budget of bench/README.md (run once:
// -benchtime=1x): 200 Applications of 4 objects each, half on cluster east and half on west,
// from creation until every one is Synced and Healthy (navarch-s), against a bare client-go
// server-side-apply loop applying the same 800 objects to the same apiservers with the same
// per-cluster concurrency and then waiting for the same Deployments to become available
// (bare-s). ratio = bare-s / navarch-s (goal ≥ 0.5). heap-MB is the test process's live heap
// after a GC once everything is synced: the controller, its watch caches and the benchmark's
// own clients.
func BenchmarkSync200Applications(b *testing.B) {
	apps := 200
	if n, err := strconv.Atoi(os.Getenv("NAVARCH_BENCH_APPS")); err == nil {
		apps = n // a smaller run while developing
	}
	ctx := context.Background()
	for b.Loop() {
		run := fmt.Sprintf("%d", time.Now().UnixNano()%100000)
		bare := bareApply(b, apps, "bare-"+run)

		ns := "bench-" + run
		if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		files := map[string]string{}
		for i, o := range benchObjects {
			files[fmt.Sprintf("app/%d.yaml", i)] = o
		}
		url := benchRepo(b, "bench-"+run, files)
		start := time.Now()
		// Applications are created by 16 writers, as an ApplicationSet would.
		var wg sync.WaitGroup
		next := make(chan int)
		for range 16 {
			wg.Go(func() {
				for i := range next {
					cluster := []string{"east", "west"}[i%2]
					app := &navarchv1.Application{}
					if err := yaml.Unmarshal(fmt.Appendf(nil, `
metadata: {name: app-%d, namespace: %s}
spec:
  source: {repoURL: %s, targetRevision: main, path: app}
  destination: {name: %s, namespace: %s-%d}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, i, ns, url, cluster, ns, i), app); err != nil {
						b.Error(err)
						continue
					}
					if err := mgmt.Create(ctx, app); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for i := range apps {
			next <- i
		}
		close(next)
		wg.Wait()
		synced := waitAllSynced(b, ns, apps)
		took := time.Since(start)

		runtime.GC()
		var mem runtime.MemStats
		runtime.ReadMemStats(&mem)
		b.ReportMetric(bare.Seconds(), "bare-s")
		b.ReportMetric(took.Seconds(), "navarch-s")
		b.ReportMetric(synced.Seconds(), "synced-s")
		b.ReportMetric(bare.Seconds()/took.Seconds(), "ratio")
		b.ReportMetric(float64(mem.HeapInuse)/(1<<20), "heap-MB")
	}
}

// bareApply server-side applies the benchmark's objects for n Applications with client-go's
// dynamic client, 8 writers per cluster like navarch's default per-cluster workers, then waits
// until every Deployment is available.
func bareApply(b *testing.B, n int, prefix string) time.Duration {
	b.Helper()
	ctx := context.Background()
	var objs []*unstructured.Unstructured
	for _, y := range benchObjects {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
			b.Fatal(err)
		}
		objs = append(objs, u)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c, name := range []string{"east", "west"} {
		cl := workloads[name].Client
		work := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range work {
					ns := fmt.Sprintf("%s-%d", prefix, i)
					if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
						b.Error(err)
						return
					}
					for _, o := range objs {
						o := o.DeepCopy()
						o.SetNamespace(ns)
						data, _ := json.Marshal(o.Object)
						if err := cl.Patch(ctx, o, client.RawPatch(types.ApplyPatchType, data), client.FieldOwner("bare"), client.ForceOwnership); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
		}
		go func() {
			for i := c; i < n; i += 2 {
				work <- i
			}
			close(work)
		}()
	}
	wg.Wait()
	for c, name := range []string{"east", "west"} {
		cl := workloads[name].Client
		for i := c; i < n; i += 2 {
			key := client.ObjectKey{Namespace: fmt.Sprintf("%s-%d", prefix, i), Name: "web"}
			deadline := time.Now().Add(5 * time.Minute)
			for {
				d := &appsv1.Deployment{}
				if err := cl.Get(ctx, key, d); err == nil && d.Status.AvailableReplicas == 1 {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("bare: Deployment %s not available after 5m", key)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	return time.Since(start)
}

// waitAllSynced waits until n Applications in ns are Synced and Healthy; it returns when they
// were all Synced (before being Healthy too).
func waitAllSynced(b *testing.B, ns string, n int) time.Duration {
	b.Helper()
	start := time.Now()
	var synced time.Duration
	var stuck *navarchv1.Application
	deadline := start.Add(150 * time.Second)
	for time.Now().Before(deadline) {
		var list navarchv1.ApplicationList
		if err := mgmt.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		nSynced, nHealthy := 0, 0
		for i := range list.Items {
			a := &list.Items[i]
			if a.Status.Sync.Status == navarchv1.SyncStatusSynced {
				nSynced++
				if syncedAndHealthy(a) {
					nHealthy++
					continue
				}
			}
			stuck = a
		}
		if nSynced == n && synced == 0 {
			synced = time.Since(start)
		}
		if nHealthy == n {
			return synced
		}
		time.Sleep(200 * time.Millisecond)
	}
	d := &appsv1.Deployment{}
	err := workloads[stuck.Spec.Destination.Name].Client.Get(context.Background(), client.ObjectKey{Namespace: stuck.Spec.Destination.Namespace, Name: "web"}, d)
	dj, _ := json.Marshal(d.Status)
	c := &navarchv1.Cluster{}
	_ = mgmt.Get(context.Background(), client.ObjectKey{Name: stuck.Spec.Destination.Name}, c)
	cj, _ := json.Marshal(c.Status)
	b.Fatalf("not every Application is Synced and Healthy after 150s; %s/%s: %s\nlive Deployment (%v): %s\ncluster: %s",
		stuck.Namespace, stuck.Name, describe(stuck), err, dj, cj)
	return 0
}

// benchRepo creates a Git repository for a benchmark run.
func benchRepo(b *testing.B, name string, files map[string]string) string {
	b.Helper()
	src := b.TempDir()
	for path, content := range files {
		writeFile(b, src, path, content)
	}
	if _, err := git.CreateRepo(name, src); err != nil {
		b.Fatal(err)
	}
	return git.RepoURL(name)
}

// BenchmarkFiveWaves measures the wave budget of bench/README.md (run once: -benchtime=1x): an
// Application of 5 ConfigMaps in waves 0..4, synced through the operation field, 5 times.
// sync-ms is from the request until the operation is seen Succeeded (goal < 1000);
// gap-ms is the time between one wave's object appearing in the cluster (it is then healthy:
// a ConfigMap has no health to wait for) and the next wave's object appearing, as a watch on
// the destination cluster sees them (goal ≤ 100), mean and max.
func BenchmarkFiveWaves(b *testing.B) {
	const waves, rounds = 5, 5
	ctx := context.Background()
	files := map[string]string{}
	for w := range waves {
		files[fmt.Sprintf("waves/cm-%d.yaml", w)] = fmt.Sprintf(
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wave-%d, annotations: {navarch.io/sync-wave: %q}}\ndata: {wave: %q}\n", w, fmt.Sprint(w), fmt.Sprint(w))
	}
	run := fmt.Sprintf("%d", time.Now().UnixNano()%100000)
	url := benchRepo(b, "waves-"+run, files)
	ns := "waves-" + run
	if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	east, err := client.NewWithWatch(workloads["east"].RESTConfig(), client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var syncs, gaps []time.Duration
		for round := range rounds {
			target := fmt.Sprintf("%s-%d", ns, round)
			if err := east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}}); err != nil {
				b.Fatal(err)
			}
			app := &navarchv1.Application{}
			if err := yaml.Unmarshal(fmt.Appendf(nil, `
metadata: {name: waves-%d, namespace: %s}
spec:
  source: {repoURL: %s, targetRevision: main, path: waves}
  destination: {name: east, namespace: %s}
`, round, ns, url, target), app); err != nil {
				b.Fatal(err)
			}
			if err := mgmt.Create(ctx, app); err != nil {
				b.Fatal(err)
			}
			// Compared first, so the sync below measures the operation alone.
			for getAppB(b, app).Status.Sync.Status != navarchv1.SyncStatusOutOfSync {
				time.Sleep(20 * time.Millisecond)
			}
			w, err := east.Watch(ctx, &corev1.ConfigMapList{}, client.InNamespace(target))
			if err != nil {
				b.Fatal(err)
			}
			seen := map[string]time.Time{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ev := range w.ResultChan() {
					if cm, ok := ev.Object.(*corev1.ConfigMap); ok && string(ev.Type) == "ADDED" {
						seen[cm.Name] = time.Now()
						if len(seen) == waves+1 { // the waves and kube-root-ca.crt
							return
						}
					}
				}
			}()
			start := time.Now()
			patch := client.RawPatch(types.MergePatchType, []byte(`{"operation":{"sync":{},"initiatedBy":{"username":"bench"}}}`))
			if err := mgmt.Patch(ctx, app, patch); err != nil {
				b.Fatal(err)
			}
			for {
				s := getAppB(b, app).Status.OperationState
				if s != nil && s.Phase == navarchv1.OperationSucceeded {
					break
				}
				if s != nil && s.Phase == navarchv1.OperationFailed {
					b.Fatalf("operation failed: %s", s.Message)
				}
				time.Sleep(5 * time.Millisecond)
			}
			syncs = append(syncs, time.Since(start))
			<-done
			w.Stop()
			for i := 1; i < waves; i++ {
				gaps = append(gaps, seen[fmt.Sprintf("wave-%d", i)].Sub(seen[fmt.Sprintf("wave-%d", i-1)]))
			}
		}
		b.ReportMetric(ms(mean(syncs)), "sync-ms")
		b.ReportMetric(ms(slices.Max(syncs)), "sync-max-ms")
		b.ReportMetric(ms(mean(gaps)), "gap-ms")
		b.ReportMetric(ms(slices.Max(gaps)), "gap-max-ms")
	}
}

func getAppB(b *testing.B, app *navarchv1.Application) *navarchv1.Application {
	got := &navarchv1.Application{}
	if err := mgmt.Get(context.Background(), client.ObjectKeyFromObject(app), got); err != nil {
		b.Fatal(err)
	}
	return got
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkRolloutStepGap measures the rollout budget of bench/README.md (run once:
// -benchtime=1x): an ApplicationSet of 4 Applications (a ConfigMap each, on east and west),
// rolled out by RollingSync in 4 steps of one Application each with no minSuccessTime. In each
// of 4 rounds (the ApplicationSet's creation, then 3 pushes, each delivered as a webhook would,
// by asking every Application to compare again) a watch on the Applications records when each
// step's Application is Synced and Healthy at the round's commit, and when the next step's
// sync of it is requested (its operation field set, the revision pinned). gap-ms is the time
// between the two (goal ≤ 200), mean and max over the 12 step boundaries.
func BenchmarkRolloutStepGap(b *testing.B) {
	const steps, rounds = 4, 4
	ctx := context.Background()
	run := fmt.Sprintf("%d", time.Now().UnixNano()%100000)
	ns, repoName := "stepgap-"+run, "stepgap-"+run
	url := benchRepo(b, repoName, map[string]string{"cm/cm.yaml": configMap("web", "round 0")})
	if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	var elements, stepList strings.Builder
	for s := 1; s <= steps; s++ {
		fmt.Fprintf(&elements, "\n      - {step: '%d', cluster: %s}", s, []string{"east", "west"}[s%2])
		fmt.Fprintf(&stepList, "\n      - matchExpressions: [{key: step, operator: In, values: ['%d']}]", s)
	}
	set := &navarchv1.ApplicationSet{}
	if err := yaml.UnmarshalStrict(fmt.Appendf(nil, `
metadata: {name: gap, namespace: %[1]s}
spec:
  generators:
  - list:
      elements:%[3]s
  strategy:
    type: RollingSync
    rollingSync:
      steps:%[4]s
  template:
    metadata:
      name: 'gap-{{step}}'
      labels: {step: '{{step}}'}
    spec:
      source: {repoURL: %[2]s, targetRevision: main, path: cm}
      destination: {name: '{{cluster}}', namespace: '%[1]s-{{step}}'}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]
`, ns, url, elements.String(), stepList.String()), set); err != nil {
		b.Fatal(err)
	}

	// Every version of the Applications, as a watch delivers them, with its arrival time.
	type version struct {
		at  time.Time
		app *navarchv1.Application
	}
	var (
		mu       sync.Mutex
		versions []version
	)
	w, err := mgmt.Watch(ctx, &navarchv1.ApplicationList{}, client.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			if a, ok := ev.Object.(*navarchv1.Application); ok {
				mu.Lock()
				versions = append(versions, version{time.Now(), a})
				mu.Unlock()
			}
		}
	}()
	// firstAt is when the first version of Application name satisfying cond arrived.
	firstAt := func(name string, cond func(*navarchv1.Application) bool) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range versions {
			if v.app.Name == name && cond(v.app) {
				return v.at, true
			}
		}
		return time.Time{}, false
	}
	completed := func(commit string) {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			got := &navarchv1.ApplicationSet{}
			if err := mgmt.Get(ctx, client.ObjectKeyFromObject(set), got); err != nil {
				b.Fatal(err)
			}
			done := got.Status.Rollout != nil && got.Status.Rollout.Phase == navarchv1.RolloutPhaseCompleted
			for s := 1; s <= steps && done; s++ {
				_, done = firstAt(fmt.Sprintf("gap-%d", s), rolledOutAt(commit))
			}
			if done {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("the rollout of %.8s did not complete within 2m: %s", commit, describeRollout(got))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	for b.Loop() {
		var gaps []time.Duration
		for round := range rounds {
			if round == 0 {
				if err := mgmt.Create(ctx, set); err != nil {
					b.Fatal(err)
				}
			} else {
				if _, err := git.Update(repoName, fmt.Sprintf("round %d", round), func(dir string) error {
					writeFile(b, dir, "cm/cm.yaml", configMap("web", fmt.Sprintf("round %d", round)))
					return nil
				}); err != nil {
					b.Fatal(err)
				}
				for s := 1; s <= steps; s++ {
					patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`,
						navarchv1.AnnotationRefresh, time.Now().Format(time.RFC3339Nano)))
					app := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gap-%d", s)}}
					if err := mgmt.Patch(ctx, app, patch); err != nil {
						b.Fatal(err)
					}
				}
			}
			commit, err := git.Resolve(repoName, "main")
			if err != nil {
				b.Fatal(err)
			}
			completed(commit)
			for s := 1; s < steps; s++ {
				healthy, _ := firstAt(fmt.Sprintf("gap-%d", s), rolledOutAt(commit))
				next, ok := firstAt(fmt.Sprintf("gap-%d", s+1), requestedAt(commit))
				if !ok || next.Before(healthy) {
					b.Fatalf("round %d: step %d's sync of %.8s was requested (%v) before step %d was Healthy at it", round, s+1, commit, ok, s)
				}
				gaps = append(gaps, next.Sub(healthy))
			}
		}
		b.ReportMetric(ms(mean(gaps)), "gap-ms")
		b.ReportMetric(ms(slices.Max(gaps)), "gap-max-ms")
	}
}
