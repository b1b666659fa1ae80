// Package fleetbench holds the fleet-scale benchmark of bench/README.md: `navarch controller`,
// run as its own process at its default settings, syncing 10,000 Applications to 100 Clusters
// served by 5 real kube-apiservers, compared with a bare server-side-apply loop doing the same
// work; then the idle fleet's CPU, API and Git traffic, a commit that changes every
// Application, and the controller's memory. Run it with `make bench-fleet`.
package fleetbench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/localcluster"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/webhook"
)

const (
	// appsNamespace holds the ApplicationSet and its Applications on the management cluster.
	appsNamespace = "fleet"
	// systemNamespace holds the Clusters' kubeconfig Secrets and the webhook Secret, as
	// `navarch cluster add` and the controller's --system-namespace default have it.
	systemNamespace = "navarch-system"
	// repoName is the one Git repository every Application deploys from.
	repoName = "fleet"
	// fleetLabel marks the benchmark's Clusters; the ApplicationSet's clusters generator
	// selects them by it.
	fleetLabel = "bench.navarch.io/fleet"
	// webhookSecret signs the push delivered after the commit (docs/webhooks.md).
	webhookSecret = "bench-fleet-webhook-secret"
)

// source is the content of the repository's directory app/, deployed by every Application
// into a namespace of its own: three cheap objects, healthy as soon as they exist.
func source(release string) map[string]string {
	return map[string]string{
		"app/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {release: %s, greeting: hello}\n", release),
		"app/secret.yaml":    "apiVersion: v1\nkind: Secret\nmetadata: {name: token}\nstringData: {token: not-a-secret}\n",
		"app/service.yaml":   "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n",
	}
}

// benchConfig is the size of a run. The defaults are the budget's 100 Clusters × 10,000
// Applications on 5 apiservers; smaller runs while developing set NAVARCH_BENCH_CLUSTERS,
// NAVARCH_BENCH_APPS (a multiple of the Clusters) and NAVARCH_BENCH_APISERVERS (a divisor of
// the Clusters), NAVARCH_BENCH_SETTLE and NAVARCH_BENCH_IDLE (the wait before and the length
// of the idle window), NAVARCH_BENCH_BARE_WRITERS (the bare loop's writers per apiserver).
// NAVARCH_BENCH_KEEP=1 keeps the artifacts directory (cluster and controller logs).
// NAVARCH_BENCH_PHASE_PROFILES=1 profiles the apiservers over the whole of each phase, in
// 30-second pieces, instead of over 20 seconds of it. NAVARCH_BENCH_HEAP_PROFILE=1 has the
// controller sample its heap, and saves its heap profile at rest. NAVARCH_BENCH_SYNC_PROFILE=1
// profiles the controller's CPU over the first minute of the sync. It is off by default, so
// that the controller measured is one nobody profiles, as in production: a profile costs CPU
// while it runs, and its symbols are read from the binary's read-only data, whose pages count
// in the RSS read at rest (bench/RESULTS.md, "Twenty-fifth session").
type benchConfig struct {
	clusters, apps, apiservers       int
	rest, settle, idle, cpuWindow    time.Duration
	bareWriters                      int
	keep, phaseProfiles, syncProfile bool
}

func configFromEnv(b *testing.B) benchConfig {
	c := benchConfig{
		clusters:      envInt(b, "NAVARCH_BENCH_CLUSTERS", 100),
		apps:          envInt(b, "NAVARCH_BENCH_APPS", 10000),
		apiservers:    envInt(b, "NAVARCH_BENCH_APISERVERS", 5),
		rest:          envDuration(b, "NAVARCH_BENCH_REST", 30*time.Second),
		settle:        envDuration(b, "NAVARCH_BENCH_SETTLE", 30*time.Second),
		idle:          envDuration(b, "NAVARCH_BENCH_IDLE", 210*time.Second),
		bareWriters:   envInt(b, "NAVARCH_BENCH_BARE_WRITERS", 16),
		keep:          os.Getenv("NAVARCH_BENCH_KEEP") != "",
		phaseProfiles: os.Getenv("NAVARCH_BENCH_PHASE_PROFILES") != "",
		syncProfile:   os.Getenv("NAVARCH_BENCH_SYNC_PROFILE") != "",
	}
	c.cpuWindow = min(2*time.Minute, c.idle)
	if c.apps%c.clusters != 0 || c.clusters%c.apiservers != 0 {
		b.Fatalf("NAVARCH_BENCH_APPS (%d) must be a multiple of NAVARCH_BENCH_CLUSTERS (%d), which must be a multiple of NAVARCH_BENCH_APISERVERS (%d)",
			c.apps, c.clusters, c.apiservers)
	}
	return c
}

// BenchmarkFleet100Clusters10kApps measures the fleet-scale budget of bench/README.md (run
// once: -benchtime=1x). Five workload-mode clusters (real kube-apiserver, etcd,
// kube-controller-manager, scheduler and kwok) serve 100 Clusters, 20 each (c000..c099,
// Cluster cNNN on apiserver NNN mod 5), each registered with its own kubeconfig Secret; a
// management cluster holds navarch's objects; a local Git server holds one repository. The
// controller is `navarch controller` built from ./cmd/navarch and run as its own process at
// its default settings (Git poll 3 minutes, 8 workers and QPS 200 per cluster, ...), so that
// its CPU time and RSS are its own.
//
// The figures, in the order they are measured:
//   - bare-s: the reference, a bare client-go loop creating the namespace of each of the
//     10,000 Applications and server-side applying its 3 objects into it, 16 writers per
//     apiserver (NAVARCH_BENCH_BARE_WRITERS), no client-side rate limit; run before the
//     controller starts, into namespaces of its own. Its Services are deleted before the
//     controller starts (deleteBareServices), so that navarch's Services are allocated their
//     cluster IPs into the same occupancy as the bare loop's were.
//   - navarch-s: one ApplicationSet (a matrix of the clusters generator and a list of 100
//     elements) generates the 10,000 Applications, each automated with CreateNamespace=true
//     into the namespace <cluster>-<element>; timed from the ApplicationSet's creation until
//     every Application is Synced and Healthy at the commit, with no operation running
//     (created-s: until all exist). rate-%-of-bare = 100 × bare-s / navarch-s (goal ≥ 50).
//   - the idle fleet, after a settle of 30 s, over 2 minutes: idle-cpu-% is the controller's
//     utime+stime as a share of one core (goal < 5); idle-writes is the number of writes
//     (not dry runs) the apiservers served for navarch's objects — on the workload
//     apiservers: namespaces, ConfigMaps, Secrets, Services; on the management apiserver:
//     navarch.io objects and Events (goal 0); idle-req/min-workload and idle-req/min-mgmt
//     are the requests per minute the controller's own clients sent (its
//     rest_client_requests_total, by host). The whole idle window is 3.5 minutes, so that it
//     spans a Git poll: git-requests-idle counts the Git server's HTTP requests in it and
//     git-requests-per-poll divides them by the bursts they came in (requests more than 10 s
//     apart start a new burst); idle-cpu-3.5m-% is the CPU share over the whole window, and
//     idle-quiet-passes the poll passes in it that found nothing changed and ended at once.
//   - rss-MB and heap-inuse-MB: the controller's VmRSS and go_memstats_heap_inuse_bytes at
//     the end of the idle window, with every Application synced (goal ≤ 120 MB RSS);
//     peak-rss-MB is VmHWM, the peak since the controller started, read at the very end.
//   - a commit that changes the ConfigMap of every Application, followed at once by its
//     signed push delivery to the controller's webhook endpoint (docs/webhooks.md: the way
//     to act on a push before the 3-minute poll): commit-to-first-seen-s until an Application
//     first reports the new commit, commit-to-synced-s until all are Synced and Healthy at it.
//   - records-s: a second reference, last and with the controller stopped: the records this
//     design keeps on the management cluster for the same Applications, written by a bare
//     loop (recordsApply) into a namespace of their own: each Application created, its status
//     written once as a finished sync leaves it, one Event; 16 writers, no client-side rate
//     limit. rate-%-of-bare+records = 100 × (bare-s + records-s) / navarch-s, and
//     work-%-of-bare+records the same ratio of the work (CPU beyond the background).
func BenchmarkFleet100Clusters10kApps(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip(errNotLinux)
	}
	cfg := configFromEnv(b)
	ctrllog.SetLogger(logr.Discard()) // localcluster installs the CRDs through envtest, which logs
	b.Logf("fleet: %d Applications on %d Clusters served by %d apiservers", cfg.apps, cfg.clusters, cfg.apiservers)
	f := startFleet(b, cfg)

	for b.Loop() {
		f.measure(b)
	}
}

// fleet is what the benchmark runs against.
type fleet struct {
	cfg       benchConfig
	artifacts string
	mgmt      *localcluster.Cluster
	workloads []*localcluster.Cluster
	c         client.Client          // the management cluster
	kube      []kubernetes.Interface // the workload clusters, without a client-side rate limit
	git       *gitserver.Server
	gitLog    *gitRequests
	repoURL   string
	commit    string // the commit of main the Applications deploy first
	navarch   string // the built binary
	probe     *speedProbe
}

// clusterName is the name of Cluster i; it is served by apiserver i mod apiservers, so that
// the Applications, generated in name order, reach every apiserver from the start.
func clusterName(i int) string { return fmt.Sprintf("c%03d", i) }

func elementName(i int) string { return fmt.Sprintf("a%03d", i) }

func startFleet(b *testing.B, cfg benchConfig) *fleet {
	b.Helper()
	artifacts, err := os.MkdirTemp("", "navarch-bench-fleet-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { // registered first: runs after everything has stopped
		if b.Failed() || cfg.keep {
			b.Logf("cluster logs, the controller's log and the Git repository are kept in %s", artifacts)
			return
		}
		_ = os.RemoveAll(artifacts)
	})
	b.Cleanup(localcluster.StopOnSignal())
	f := &fleet{cfg: cfg, artifacts: artifacts, gitLog: &gitRequests{}, probe: startSpeedProbe(b)}

	// Built first, while the machine is still quiet.
	began := time.Now()
	f.navarch = buildNavarch(b, artifacts)
	b.Logf("built navarch in %s", time.Since(began).Round(time.Second))

	opts := []localcluster.Options{{
		Name: "management", Dir: filepath.Join(artifacts, "management"),
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
		Logger:            testr.NewWithInterface(b, testr.Options{}),
	}}
	for i := range cfg.apiservers {
		name := fmt.Sprintf("w%d", i)
		opts = append(opts, localcluster.Options{Name: name, Workloads: true, Dir: filepath.Join(artifacts, name),
			Logger: testr.NewWithInterface(b, testr.Options{})})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	began = time.Now()
	clusters, err := localcluster.StartMany(ctx, opts)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range clusters {
		b.Cleanup(func() {
			if err := c.Stop(); err != nil {
				b.Error(err)
			}
		})
	}
	b.Logf("started %d clusters in %s", len(clusters), time.Since(began).Round(time.Second))
	f.mgmt, f.workloads = clusters[0], clusters[1:]
	f.c = clientFor(b, f.mgmt)
	for _, w := range f.workloads {
		kc, err := kubernetes.NewForConfig(unlimitedConfig(w))
		if err != nil {
			b.Fatal(err)
		}
		f.kube = append(f.kube, kc)
	}

	if f.git, err = gitserver.Start(gitserver.Options{Root: filepath.Join(artifacts, "git"), Log: f.gitLog}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.git.Close() })
	src := filepath.Join(artifacts, "source")
	for path, content := range source("r1") {
		writeFile(b, src, path, content)
	}
	if f.commit, err = f.git.CreateRepo(repoName, src); err != nil {
		b.Fatal(err)
	}
	f.repoURL = f.git.RepoURL(repoName)

	for _, ns := range []string{systemNamespace, appsNamespace} {
		if err := f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "navarch-webhook"},
		Data:       map[string][]byte{"github.secret": []byte(webhookSecret)},
	}); err != nil {
		b.Fatal(err)
	}
	f.registerClusters(b)
	return f
}

// registerClusters creates the Clusters and their kubeconfig Secrets as `navarch cluster add`
// does: the Secret <name>-kubeconfig in navarch-system holds a standalone kubeconfig (here the
// apiserver's admin kubeconfig, certificates embedded) under the key value.
func (f *fleet) registerClusters(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				name := clusterName(i)
				w := f.workloads[i%len(f.workloads)]
				secret := &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: systemNamespace},
					Type:       corev1.SecretTypeOpaque,
					Data:       map[string][]byte{"value": w.Kubeconfig()},
				}
				cluster := &navarchv1.Cluster{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{fleetLabel: "true", "bench.navarch.io/apiserver": w.Name}},
					Spec: navarchv1.ClusterSpec{
						Server:              w.Server(),
						KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: systemNamespace, Name: secret.Name, Key: "value"},
					},
				}
				if err := f.c.Create(ctx, secret); err != nil {
					b.Error(err)
				}
				if err := f.c.Create(ctx, cluster); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range f.cfg.clusters {
		work <- i
	}
	close(work)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// measure runs the measurements, in the order of the benchmark's doc comment.
func (f *fleet) measure(b *testing.B) {
	ctx := context.Background()
	perCluster := f.cfg.apps / f.cfg.clusters

	// What the clusters use with nothing asking anything of them, before the reference.
	restStart := f.clusterCPU(b)
	time.Sleep(f.cfg.rest)
	restCores := restStart.since(b, f, fmt.Sprintf("at rest, over %s", f.cfg.rest)).Seconds() / f.cfg.rest.Seconds()

	// The reference, before the controller runs.
	baseline := f.serviceObjects(b)
	bareCPU, bareServed := f.clusterCPU(b), f.served(b)
	bareDone := make(chan struct{})
	bareProfiled := f.profileApiserversDuring(b, "bare", bareDone, f.workloads[0])
	bare := f.bareApply(b, perCluster)
	close(bareDone)
	bareUsed := bareCPU.since(b, f, "bare")
	bareServed.since(b, f, "bare")
	<-bareProfiled
	b.Logf("bare: created %d namespaces and server-side applied %d objects on %d apiservers in %.1f s",
		f.cfg.apps, 3*f.cfg.apps, len(f.workloads), bare.Seconds())
	f.deleteBareServices(b, perCluster, baseline)

	ctrl := startNavarch(b, f.navarch, f.mgmt.KubeconfigPath(), f.artifacts)
	waitFor(b, 5*time.Minute, time.Second, "every Cluster to be Ready", func() bool {
		var list navarchv1.ClusterList
		if err := f.c.List(ctx, &list, client.HasLabels{fleetLabel}); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, c := range list.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, navarchv1.ConditionReady) {
				ready++
			}
		}
		return ready == f.cfg.clusters
	}, func() string { return "not all Ready" })
	tr := startTracker(b, f.mgmt, appsNamespace)

	// navarch: the ApplicationSet, until every Application is Synced and Healthy.
	set := f.applicationSet(b, perCluster)
	before, beforeMetrics := ctrl.sample(b), ctrl.mustMetrics(b)
	syncCPU, syncServed := f.clusterCPU(b), f.served(b)
	start := time.Now()
	if err := f.c.Create(ctx, set); err != nil {
		b.Fatal(err)
	}
	// Where the controller's CPU goes during the sync: a profile of its first minute (or
	// less on a small fleet), logged once the sync is over.
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		if !f.cfg.syncProfile {
			return
		}
		seconds := min(60, max(5, f.cfg.apps/100))
		ctrl.profile(b, f.artifacts, "sync-cpu.pprof", "profile", fmt.Sprintf("?seconds=%d", seconds), "cpu")
	}()
	syncDone := make(chan struct{})
	apiserverProfiled := f.profileApiserversDuring(b, "sync", syncDone, f.workloads[0], f.mgmt)
	var created time.Duration
	waitFor(b, 45*time.Minute, 250*time.Millisecond, fmt.Sprintf("%d Applications Synced and Healthy", f.cfg.apps), func() bool {
		ctrl.mustRun(b)
		exist, done := tr.count(f.commit)
		if created == 0 && exist == f.cfg.apps {
			created = time.Since(start)
		}
		return done == f.cfg.apps
	}, func() string { return tr.summary(f.commit) })
	took := time.Since(start)
	close(syncDone)
	after := ctrl.sample(b)
	syncUsed := syncCPU.since(b, f, "navarch")
	syncServed.since(b, f, "navarch")
	<-profiled
	<-apiserverProfiled
	b.Logf("navarch: the ApplicationSet's %d Applications all existed after %.1f s and were all Synced and Healthy after %.1f s; "+
		"the controller used %.1f s of CPU meanwhile (RSS %d MB, peak %d MB)",
		f.cfg.apps, created.Seconds(), took.Seconds(), (after.cpu - before.cpu).Seconds(), after.rssKB>>10, after.hwmKB>>10)
	b.Logf("navarch synced at %.0f %% of the bare loop's rate (budget ≥ 50 %%)", 100*bare.Seconds()/took.Seconds())
	b.Logf("navarch: Applications processed by the clusters' workers meanwhile, by result: %s",
		format(diff(ctrl.mustMetrics(b).sum("navarch_cluster_reconcile_total", "result", nil), beforeMetrics.sum("navarch_cluster_reconcile_total", "result", nil))))

	idle := f.measureIdle(b, ctrl)
	// Both phases keep the machine's cores busy, so the ratio of their rates is about the
	// ratio of the CPU they cost; part of that cost is the clusters' background, which grows
	// with a phase's length: the work of each phase is what it cost beyond it.
	bareWork := bareUsed.Seconds() - restCores*bare.Seconds()
	navarchWork := syncUsed.Seconds() + (after.cpu - before.cpu).Seconds() - idle.clusterCores*took.Seconds()
	b.Logf("the clusters' background: %.3f cores at rest, %.3f with the synced fleet idle; the work beyond it: bare %.0f CPU-s, navarch %.0f CPU-s (clusters and controller), %.0f %%",
		restCores, idle.clusterCores, bareWork, navarchWork, 100*bareWork/navarchWork)
	if ctrl.heapSampled {
		ctrl.profile(b, f.artifacts, "idle-heap.pprof", "heap", "?gc=1", "inuse_space")
	} else {
		b.Logf("no heap profile at rest: the controller samples its heap only with NAVARCH_BENCH_HEAP_PROFILE=1 or GODEBUG=memprofilerate=N")
	}
	ctrl.profile(b, f.artifacts, "idle-cpu.pprof", "profile", "?seconds=30", "cpu")

	// A commit that changes every Application, and its webhook delivery.
	commit, err := f.git.Update(repoName, "release r2", func(dir string) error {
		writeFile(b, dir, "app/configmap.yaml", source("r2")["app/configmap.yaml"])
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	pushed := time.Now()
	delivered := f.deliverPush(b, ctrl, commit)
	waitFor(b, 30*time.Minute, 250*time.Millisecond, fmt.Sprintf("%d Applications Synced and Healthy at the new commit", f.cfg.apps), func() bool {
		ctrl.mustRun(b)
		_, done := tr.count(commit)
		return done == f.cfg.apps
	}, func() string { return tr.summary(commit) })
	commitToSynced := time.Since(pushed)
	firstSeen, _ := tr.firstSeen(commit)
	end := ctrl.sample(b)
	b.Logf("commit %.8s: delivered by webhook: %v; the first Application reported it %.1f s after the push, all %d were Synced and Healthy at it after %.1f s",
		commit, delivered, firstSeen.Sub(pushed).Seconds(), f.cfg.apps, commitToSynced.Seconds())
	b.Logf("controller at the end: RSS %d MB, peak RSS %d MB (budget ≤ 120 MB)", end.rssKB>>10, end.hwmKB>>10)

	// The second reference, last and with the controller stopped, so that it changes none of
	// the figures above: the records the design keeps on the management cluster.
	ctrl.stop()
	recordsCPU, recordsServed := f.clusterCPU(b), f.served(b)
	records := f.recordsApply(b, perCluster)
	recordsWork := recordsCPU.since(b, f, "records").Seconds() - restCores*records.Seconds()
	recordsServed.since(b, f, "records")
	b.Logf("records: created %d Applications, wrote the status of each once and one Event each on the management apiserver in %.1f s",
		f.cfg.apps, records.Seconds())
	b.Logf("navarch synced at %.0f %% of the rate of the bare loop and the records together (%.1f + %.1f s); their work (%.0f + %.0f CPU-s) was %.0f %% of navarch's",
		100*(bare+records).Seconds()/took.Seconds(), bare.Seconds(), records.Seconds(), bareWork, recordsWork, 100*(bareWork+recordsWork)/navarchWork)

	b.ReportMetric(bare.Seconds(), "bare-s")
	b.ReportMetric(took.Seconds(), "navarch-s")
	b.ReportMetric(created.Seconds(), "created-s")
	b.ReportMetric(100*bare.Seconds()/took.Seconds(), "rate-%-of-bare")
	b.ReportMetric(records.Seconds(), "records-s")
	b.ReportMetric(100*(bare+records).Seconds()/took.Seconds(), "rate-%-of-bare+records")
	b.ReportMetric((after.cpu - before.cpu).Seconds(), "sync-cpu-s")
	b.ReportMetric(idle.cpuPct, "idle-cpu-%")
	b.ReportMetric(idle.cpuPctAll, "idle-cpu-3.5m-%")
	b.ReportMetric(restCores, "clusters-rest-cores")
	b.ReportMetric(idle.clusterCores, "clusters-idle-cores")
	b.ReportMetric(100*bareWork/navarchWork, "work-%-of-bare")
	b.ReportMetric(100*(bareWork+recordsWork)/navarchWork, "work-%-of-bare+records")
	b.ReportMetric(idle.writes, "idle-writes")
	b.ReportMetric(idle.reqPerMinWorkload, "idle-req/min-workload")
	b.ReportMetric(idle.reqPerMinMgmt, "idle-req/min-mgmt")
	b.ReportMetric(float64(idle.gitRequests), "git-requests-idle")
	b.ReportMetric(idle.quietPasses, "idle-quiet-passes")
	b.ReportMetric(idle.gitPerPoll, "git-requests-per-poll")
	b.ReportMetric(idle.rssMB, "rss-MB")
	b.ReportMetric(idle.heapMB, "heap-inuse-MB")
	b.ReportMetric(float64(end.hwmKB)/1024, "peak-rss-MB")
	b.ReportMetric(firstSeen.Sub(pushed).Seconds(), "commit-to-first-seen-s")
	b.ReportMetric(commitToSynced.Seconds(), "commit-to-synced-s")
}

// profileApiserversDuring profiles the apiservers of clusters during the phase starting now,
// which ends when ended is closed. By default it takes one profile over 20 seconds, a little
// after the start, so that it holds the phase's steady work, saved as
// <cluster>-<phase>-cpu.pprof. With NAVARCH_BENCH_PHASE_PROFILES it profiles the whole phase
// in consecutive 30-second pieces, <cluster>-<phase>-cpu-NN.pprof, the last of which may run
// up to 30 seconds past the phase's end (go tool pprof merges the pieces it is given). The
// channel returned is closed once all are saved.
func (f *fleet) profileApiserversDuring(b *testing.B, phase string, ended <-chan struct{}, clusters ...*localcluster.Cluster) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		if !f.cfg.phaseProfiles {
			time.Sleep(10 * time.Second)
			for _, c := range clusters {
				wg.Go(func() { f.apiserverProfile(b, c, c.Name+"-"+phase+"-cpu.pprof", 20, true) })
			}
			wg.Wait()
			return
		}
		for _, c := range clusters {
			wg.Go(func() {
				var pieces []string
				for i := 0; ; i++ {
					select {
					case <-ended:
						b.Logf("apiserver %s: %d profiles of the %s phase: go tool pprof -top %s", c.Name, len(pieces), phase, strings.Join(pieces, " "))
						return
					default:
					}
					piece := fmt.Sprintf("%s-%s-cpu-%02d.pprof", c.Name, phase, i)
					f.apiserverProfile(b, c, piece, 30, false)
					pieces = append(pieces, filepath.Join(f.artifacts, piece))
				}
			})
		}
		wg.Wait()
	}()
	return done
}

// applicationSet generates perCluster Applications on every Cluster of the fleet: a matrix of
// the clusters generator and a list generator.
func (f *fleet) applicationSet(b *testing.B, perCluster int) *navarchv1.ApplicationSet {
	b.Helper()
	var elements []string
	for i := range perCluster {
		elements = append(elements, fmt.Sprintf("{app: %s}", elementName(i)))
	}
	set := &navarchv1.ApplicationSet{}
	if err := yaml.UnmarshalStrict(fmt.Appendf(nil, `
metadata: {name: fleet, namespace: %s}
spec:
  generators:
  - matrix:
      generators:
      - clusters: {selector: {matchLabels: {%s: "true"}}}
      - list: {elements: [%s]}
  template:
    metadata: {name: '{{app}}-{{name}}'}
    spec:
      source: {repoURL: %s, targetRevision: main, path: app}
      destination: {name: '{{name}}', namespace: '{{name}}-{{app}}'}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]
`, appsNamespace, fleetLabel, strings.Join(elements, ", "), f.repoURL), set); err != nil {
		b.Fatal(err)
	}
	return set
}

// bareApply is the reference: for every Application the ApplicationSet will generate, it
// creates a namespace bare-<cluster>-<element> on the Cluster's apiserver and server-side
// applies the same 3 objects into it, with cfg.bareWriters writers per apiserver and no
// client-side rate limit. It returns the time until the last apply answered.
func (f *fleet) bareApply(b *testing.B, perCluster int) time.Duration {
	b.Helper()
	ctx := context.Background()
	var objs []*unstructured.Unstructured
	for _, y := range source("r1") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
			b.Fatal(err)
		}
		objs = append(objs, u)
	}
	clients := make([]client.Client, len(f.workloads))
	for i, w := range f.workloads {
		clients[i] = unlimitedClient(b, w)
	}
	start := time.Now()
	f.onBareNamespaces(perCluster, func(k int, ns string) {
		cl := clients[k]
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Error(err)
			return
		}
		for _, o := range objs {
			o := o.DeepCopy()
			o.SetNamespace(ns)
			data, err := json.Marshal(o.Object)
			if err != nil {
				b.Error(err)
				continue
			}
			if err := cl.Patch(ctx, o, client.RawPatch(types.ApplyPatchType, data), client.FieldOwner("bare"), client.ForceOwnership); err != nil {
				b.Error(err)
			}
		}
	})
	took := time.Since(start)
	if b.Failed() {
		b.FailNow()
	}
	return took
}

// onBareNamespaces calls do(k, ns) for each of the bare loop's namespaces, ns on workload
// apiserver k, with NAVARCH_BENCH_BARE_WRITERS writers per apiserver, in the order the
// ApplicationSet creates its Applications: Cluster by Cluster. It returns once all are done.
func (f *fleet) onBareNamespaces(perCluster int, do func(k int, ns string)) {
	var wg sync.WaitGroup
	for k := range f.workloads {
		work := make(chan string)
		for range f.cfg.bareWriters {
			wg.Go(func() {
				for ns := range work {
					do(k, ns)
				}
			})
		}
		go func() {
			defer close(work)
			for i := k; i < f.cfg.clusters; i += len(f.workloads) {
				for a := range perCluster {
					work <- "bare-" + clusterName(i) + "-" + elementName(a)
				}
			}
		}()
	}
	wg.Wait()
}

// serviceObjects counts, on each workload apiserver, the objects every Service brings: the
// IPAddress of its cluster IP, its Endpoints and the EndpointSlices of its endpoints.
func (f *fleet) serviceObjects(b *testing.B) []int {
	b.Helper()
	ctx := context.Background()
	// A list of one item tells how many remain: the count without the objects.
	count := func(list func(context.Context, metav1.ListOptions) (kruntime.Object, error)) int {
		l, err := list(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		acc, err := meta.ListAccessor(l)
		if err != nil {
			b.Fatal(err)
		}
		n := meta.LenList(l)
		if r := acc.GetRemainingItemCount(); r != nil {
			n += int(*r)
		}
		return n
	}
	out := make([]int, len(f.kube))
	for i, kc := range f.kube {
		out[i] = count(func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			return kc.NetworkingV1().IPAddresses().List(ctx, o)
		}) + count(func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			return kc.CoreV1().Endpoints("").List(ctx, o) //nolint:staticcheck // the endpoints controller still writes them
		}) + count(func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			return kc.DiscoveryV1().EndpointSlices("").List(ctx, o)
		})
	}
	return out
}

// deleteBareServices deletes the bare loop's Services and waits until their IP addresses,
// Endpoints and endpoint slices are gone too (baseline: serviceObjects before the bare loop). The
// kube-apiserver's cluster IP allocator lists every allocated address on each Service it
// creates, so a Service costs the apiserver more CPU the more Services exist (linear in
// their number; bench/RESULTS.md). Left in place, the bare loop's Services would make every
// Service navarch creates dearer than the bare loop's own, which it created into apiservers
// without any; without them, both allocate into the same occupancy. The namespaces and the
// other objects stay: their number does not change what a request costs.
func (f *fleet) deleteBareServices(b *testing.B, perCluster int, baseline []int) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	f.onBareNamespaces(perCluster, func(k int, ns string) {
		if err := f.kube[k].CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			b.Error(err)
		}
	})
	if b.Failed() {
		b.FailNow()
	}
	var left []int
	waitFor(b, 10*time.Minute, 2*time.Second, "the bare loop's Services' IP addresses, Endpoints and endpoint slices to be deleted", func() bool {
		left = f.serviceObjects(b)
		for i := range left {
			if left[i] > baseline[i] {
				return false
			}
		}
		return true
	}, func() string {
		return fmt.Sprintf("IP addresses, Endpoints and endpoint slices per apiserver: %v, before the bare loop: %v", left, baseline)
	})
	b.Logf("bare: deleted its %d Services (and their IP addresses, Endpoints and endpoint slices) in %.1f s", f.cfg.apps, time.Since(start).Seconds())
}

// idleFigures are the figures of the idle fleet.
type idleFigures struct {
	cpuPct, cpuPctAll                float64
	writes                           float64
	reqPerMinWorkload, reqPerMinMgmt float64
	gitRequests                      int
	gitPerPoll                       float64
	rssMB, heapMB                    float64
	quietPasses                      float64
	clusterCores                     float64 // the clusters' processes over the 2 minutes
}

// snapshot is every counter the idle measurement compares, read at one moment.
type snapshot struct {
	proc       procSample
	controller metricSet   // the controller's own metrics
	apiservers []metricSet // management first, then the workload clusters
	clusters   clusterCPU
}

func (f *fleet) snapshot(b *testing.B, ctrl *navarchProcess) snapshot {
	b.Helper()
	s := snapshot{proc: ctrl.sample(b), clusters: f.clusterCPU(b)}
	var err error
	if s.controller, err = ctrl.metrics(); err != nil {
		b.Fatal(err)
	}
	for _, c := range append([]*localcluster.Cluster{f.mgmt}, f.workloads...) {
		m, err := apiserverMetrics(context.Background(), c)
		if err != nil {
			b.Fatal(err)
		}
		s.apiservers = append(s.apiservers, m)
	}
	return s
}

// measureIdle measures the synced, idle fleet: it waits cfg.settle, then compares snapshots
// taken at the start of the idle window, after cfg.cpuWindow (2 minutes), and at its end
// (cfg.idle, 3.5 minutes).
func (f *fleet) measureIdle(b *testing.B, ctrl *navarchProcess) idleFigures {
	b.Helper()
	time.Sleep(f.cfg.settle)
	a := f.snapshot(b, ctrl)
	allocs := make(chan struct{})
	go func() {
		defer close(allocs)
		if ctrl.heapSampled {
			// What the idle fleet allocates (its polls' quiet passes, probes, scrapes): the
			// garbage that lifts its memory between releases.
			ctrl.profile(b, f.artifacts, "idle-allocs.pprof", "allocs", fmt.Sprintf("?seconds=%d", int(f.cfg.idle.Seconds())), "alloc_space")
		}
	}()
	time.Sleep(f.cfg.cpuWindow)
	m := f.snapshot(b, ctrl)
	time.Sleep(f.cfg.idle - f.cfg.cpuWindow)
	z := f.snapshot(b, ctrl)
	<-allocs

	var out idleFigures
	window := m.proc.at.Sub(a.proc.at)
	minutes := window.Minutes()
	out.cpuPct = 100 * (m.proc.cpu - a.proc.cpu).Seconds() / window.Seconds()
	out.cpuPctAll = 100 * (z.proc.cpu - a.proc.cpu).Seconds() / z.proc.at.Sub(a.proc.at).Seconds()
	b.Logf("idle: over %s the controller used %.2f s of CPU, %.2f %% of one core (budget < 5 %%); over the whole %s window %.2f %%, and its git children %.2f s",
		window.Round(time.Second), (m.proc.cpu - a.proc.cpu).Seconds(), out.cpuPct, z.proc.at.Sub(a.proc.at).Round(time.Second), out.cpuPctAll,
		(z.proc.children - a.proc.children).Seconds())
	out.clusterCores = a.clusters.until(b, m.clusters, fmt.Sprintf("idle, over %s", window.Round(time.Second))).Seconds() / window.Seconds()

	// The controller's own requests, by apiserver (its client-go metrics, by host).
	hostOf := map[string]string{}
	for _, c := range append([]*localcluster.Cluster{f.mgmt}, f.workloads...) {
		hostOf[strings.TrimPrefix(c.Server(), "https://")] = c.Name
	}
	byHost := func(s metricSet, method string) map[string]float64 {
		out := map[string]float64{}
		for host, v := range s.sum("rest_client_requests_total", "host", func(l map[string]string) bool {
			return method == "" || l["method"] == method
		}) {
			out[cmp.Or(hostOf[host], host)] += v
		}
		return out
	}
	reqs := diff(byHost(m.controller, ""), byHost(a.controller, ""))
	for name, n := range reqs {
		if name == f.mgmt.Name {
			out.reqPerMinMgmt += n / minutes
		} else {
			out.reqPerMinWorkload += n / minutes
		}
	}
	var perServer []string
	for _, c := range append([]*localcluster.Cluster{f.mgmt}, f.workloads...) {
		perServer = append(perServer, fmt.Sprintf("%s %.0f", c.Name, reqs[c.Name]/minutes))
	}
	b.Logf("idle: requests per minute the controller sent, by apiserver: %s", strings.Join(perServer, ", "))
	for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		if d := diff(byHost(m.controller, method), byHost(a.controller, method)); len(d) > 0 {
			b.Logf("idle: the controller sent %s requests (writes or dry runs): %s", method, format(d))
		}
	}

	// What the apiservers served, all clients together (the workload clusters' own
	// controllers, kwok, and the management apiserver's internal loops included), and the
	// writes to navarch's objects among them.
	navarchKinds := map[string]bool{"namespaces": true, "configmaps": true, "secrets": true, "services": true}
	for i, c := range append([]*localcluster.Cluster{f.mgmt}, f.workloads...) {
		byVerb := diff(m.apiservers[i].sum("apiserver_request_total", "verb", nil), a.apiservers[i].sum("apiserver_request_total", "verb", nil))
		writes := diff(m.apiservers[i].sum("apiserver_request_total", "resource", isWrite), a.apiservers[i].sum("apiserver_request_total", "resource", isWrite))
		dryRuns := diff(m.apiservers[i].sum("apiserver_request_total", "resource", func(l map[string]string) bool { return l["dry_run"] != "" }),
			a.apiservers[i].sum("apiserver_request_total", "resource", func(l map[string]string) bool { return l["dry_run"] != "" }))
		navarchWrites := 0.0
		for resource, n := range writes {
			if i == 0 {
				group := ""
				for _, s := range m.apiservers[i] {
					if s.name == "apiserver_request_total" && s.labels["resource"] == resource {
						group = s.labels["group"]
						break
					}
				}
				if group == navarchv1.GroupVersion.Group || resource == "events" {
					navarchWrites += n
				}
			} else if navarchKinds[resource] {
				navarchWrites += n
			}
		}
		out.writes += navarchWrites
		b.Logf("idle: apiserver %s served %.0f requests per minute (%s); writes by resource: %s; dry runs: %s; writes to navarch's objects: %.0f",
			c.Name, total(byVerb)/minutes, format(byVerb), format(writes), format(dryRuns), navarchWrites)
	}
	b.Logf("idle: %.0f writes to navarch's objects in %s (budget 0)", out.writes, window.Round(time.Second))
	b.Logf("idle: Applications processed by the clusters' workers in %s, by result: %s", window.Round(time.Second),
		format(diff(m.controller.sum("navarch_cluster_reconcile_total", "result", nil), a.controller.sum("navarch_cluster_reconcile_total", "result", nil))))
	// Over the whole window, which spans a Git poll: the poll passes that found nothing
	// changed and ended at once (navarch_quiet_passes_total), next to all passes.
	out.quietPasses = total(diff(z.controller.sum("navarch_quiet_passes_total", "cluster", nil), a.controller.sum("navarch_quiet_passes_total", "cluster", nil)))
	processed := diff(z.controller.sum("navarch_cluster_reconcile_total", "result", nil), a.controller.sum("navarch_cluster_reconcile_total", "result", nil))
	b.Logf("idle: over the whole %s window, %.0f quiet passes (a poll that found nothing changed) of %.0f Applications processed, by result: %s",
		z.proc.at.Sub(a.proc.at).Round(time.Second), out.quietPasses, total(processed), format(processed))
	for i, c := range f.workloads {
		b.Logf("idle: watches open on apiserver %s of the kinds navarch manages here (all clients): %s", c.Name, format(z.apiservers[i+1].sum("apiserver_longrunning_requests", "resource",
			func(l map[string]string) bool { return l["verb"] == "WATCH" && navarchKinds[l["resource"]] })))
	}

	// Git: every request of the whole idle window, grouped into bursts.
	times, paths := f.gitLog.since(a.proc.at)
	out.gitRequests = len(times)
	bursts := 0
	for i := range times {
		if i == 0 || times[i].Sub(times[i-1]) > 10*time.Second {
			bursts++
		}
	}
	if bursts > 0 {
		out.gitPerPoll = float64(len(times)) / float64(bursts)
	}
	var lines []string
	for i := range times {
		lines = append(lines, fmt.Sprintf("+%.1fs %s", times[i].Sub(a.proc.at).Seconds(), paths[i]))
	}
	b.Logf("idle: the Git server served %d requests in %s, in %d bursts: %s", len(times), z.proc.at.Sub(a.proc.at).Round(time.Second), bursts, strings.Join(lines, "; "))

	// The RSS at each snapshot, to set beside the polls' times above: a poll's passes leave
	// garbage until the next release.
	b.Logf("idle: RSS at the window's snapshots: +0s %d MB, +%.0fs %d MB, +%.0fs %d MB",
		a.proc.rssKB>>10, m.proc.at.Sub(a.proc.at).Seconds(), m.proc.rssKB>>10, z.proc.at.Sub(a.proc.at).Seconds(), z.proc.rssKB>>10)
	out.rssMB = float64(z.proc.rssKB) / 1024
	out.heapMB = z.controller.value("go_memstats_heap_inuse_bytes") / (1 << 20)
	mb := func(name string) float64 { return z.controller.value(name) / (1 << 20) }
	code, rodata := ctrl.binaryPages(b)
	b.Logf("memory at %d Applications and %d Clusters: RSS %.0f MB (budget ≤ 120 MB: anonymous %d MB, mapped files %d MB: the binary's code %d MB and read-only data %d MB), peak RSS so far %d MB; "+
		"Go heap in use %.0f MB, allocated %.0f MB, idle %.0f MB of which released %.0f MB, stacks %.0f MB, obtained from the OS %.0f MB; %.0f goroutines; "+
		"the runtime's own: GC metadata %.1f MB, spans %.1f MB, profiling buckets %.1f MB, other %.1f MB",
		f.cfg.apps, f.cfg.clusters, out.rssMB, z.proc.anonKB>>10, z.proc.fileKB>>10, code>>10, rodata>>10, z.proc.hwmKB>>10,
		out.heapMB, mb("go_memstats_heap_alloc_bytes"), mb("go_memstats_heap_idle_bytes"), mb("go_memstats_heap_released_bytes"),
		mb("go_memstats_stack_inuse_bytes"), mb("go_memstats_sys_bytes"), z.controller.value("go_goroutines"),
		mb("go_memstats_gc_sys_bytes"), mb("go_memstats_mspan_inuse_bytes"), mb("go_memstats_buck_hash_sys_bytes"), mb("go_memstats_other_sys_bytes"))
	return out
}

// deliverPush delivers the push of commit to the controller's webhook endpoint, signed as
// GitHub signs it. It reports whether the controller queued it (202); if not, the change
// waits for the poll, which the logged figure then includes.
func (f *fleet) deliverPush(b *testing.B, ctrl *navarchProcess, commit string) bool {
	b.Helper()
	body, err := json.Marshal(map[string]any{
		"ref": "refs/heads/main", "before": f.commit, "after": commit,
		"repository": map[string]any{
			"name": repoName, "full_name": "bench/" + repoName, "owner": map[string]any{"name": "bench", "login": "bench"},
			"clone_url": f.repoURL, "default_branch": "main", "master_branch": "main",
		},
		"commits": []any{map[string]any{"id": commit, "message": "release r2"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, ctrl.webhookURL, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhook.HeaderEvent, webhook.EventPush)
	req.Header.Set(webhook.HeaderDelivery, "bench-"+commit[:8])
	req.Header.Set(webhook.HeaderSignature, webhook.Sign([]byte(webhookSecret), body))
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		b.Logf("push delivery failed, the change waits for the poll: %v", err)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Logf("push delivery answered %s, the change waits for the poll", resp.Status)
		return false
	}
	return true
}

// clientFor is a client of a cluster whose rate limit never holds the benchmark back.
// unlimitedConfig is c's REST config without a client-side rate limit, for the references:
// they measure the apiservers, not client-go's limiter.
func unlimitedConfig(c *localcluster.Cluster) *rest.Config {
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 100000, 100000
	return cfg
}

// unlimitedClient is a client of c without a client-side rate limit.
func unlimitedClient(b *testing.B, c *localcluster.Cluster) client.Client {
	b.Helper()
	cl, err := client.New(unlimitedConfig(c), client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

func clientFor(b *testing.B, c *localcluster.Cluster) client.Client {
	b.Helper()
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	cl, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		b.Fatal(err)
	}
	return cl
}

// writeFile writes one file under dir.
func writeFile(b *testing.B, dir, path, content string) {
	b.Helper()
	full := filepath.Join(dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}
