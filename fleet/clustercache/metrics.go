package clustercache

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Per-cluster metrics of the Application workers, like those controller-runtime keeps for its
// own controllers.
var (
	reconcileTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "navarch_cluster_reconcile_total",
		Help: "Application reconciles run by each cluster's workers, by result (success, requeue_after, error).",
	}, []string{"cluster", "result"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "navarch_cluster_reconcile_errors_total",
		Help: "Application reconciles of each cluster that returned an error (retried with backoff).",
	}, []string{"cluster"})
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "navarch_cluster_reconcile_duration_seconds",
		Help:    "Duration of Application reconciles, by cluster.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"cluster"})
)

func init() {
	metrics.Registry.MustRegister(reconcileTotal, reconcileErrors, reconcileDuration, queueDepths)
}

// queueDepths reports each Cluster's backlog, read from the queues when the metrics are
// scraped. The Clusters' queues have no name, so client-go keeps no metrics of its own for
// them: those cost each Cluster about 50 KB at rest (two native histograms of
// controller-runtime's and the times of the items queued and in progress, kept in maps
// that never shrink) and a goroutine waking twice a second, for figures
// navarch_cluster_reconcile_duration_seconds already gives.
var queueDepths = &depthCollector{
	desc: prometheus.NewDesc("navarch_cluster_queue_depth",
		"Applications waiting in each cluster's queue for a worker (not those waiting for a retry or their next poll).",
		[]string{"cluster"}, nil),
	caches: map[*Cache]struct{}{},
}

type depthCollector struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	caches map[*Cache]struct{} // live until their context ends
}

func (d *depthCollector) add(c *Cache) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.caches[c] = struct{}{}
}

func (d *depthCollector) remove(c *Cache) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.caches, c)
}

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// Collect reports each Cluster once, should two caches (tests) hold one by the same name. It
// reads the depths under each cache's lock and sends them after, so a slow scrape never holds
// up Connect.
func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	caches := make([]*Cache, 0, len(d.caches))
	for c := range d.caches {
		caches = append(caches, c)
	}
	d.mu.Unlock()
	depths := map[string]int{}
	for _, c := range caches {
		c.mu.Lock()
		for name, r := range c.remotes {
			if _, seen := depths[name]; !seen {
				depths[name] = r.queue.len()
			}
		}
		c.mu.Unlock()
	}
	for name, depth := range depths {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(depth), name)
	}
}
