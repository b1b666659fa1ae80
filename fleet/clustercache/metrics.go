package clustercache

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Per-cluster metrics of the Application workers, like those controller-runtime keeps for its
// own controllers. Each cluster's queue is also named ("cluster-<name>"), so the workqueue
// metrics (workqueue_depth, workqueue_queue_duration_seconds, …) exist per cluster too.
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
	metrics.Registry.MustRegister(reconcileTotal, reconcileErrors, reconcileDuration)
}
