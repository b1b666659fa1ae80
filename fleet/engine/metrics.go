package engine

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// dryRuns counts server-side apply dry runs by cluster: an Application whose desired and live
// objects have not changed costs none, thanks to the dry-run cache.
var dryRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "navarch_dry_runs_total",
	Help: "Server-side apply dry runs sent to destination clusters, by cluster.",
}, []string{"cluster"})

// quietPassCount counts the passes that found an Application as a pass with nothing to do left it
// and compared nothing (quiet.go): most of an idle fleet's passes.
var quietPassCount = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "navarch_quiet_passes_total",
	Help: "Application passes that found nothing changed since a pass with nothing to do and compared nothing, by cluster.",
}, []string{"cluster"})

func init() { metrics.Registry.MustRegister(dryRuns, quietPassCount) }

// quietPassSeries is the series of quietPassCount of each cluster, looked up once: a quiet pass
// is one per Application and poll, and each lookup by label values costs an allocation.
var quietPassSeries sync.Map // cluster name → prometheus.Counter

func quietPassCounter(cluster string) prometheus.Counter {
	if c, ok := quietPassSeries.Load(cluster); ok {
		return c.(prometheus.Counter)
	}
	c, _ := quietPassSeries.LoadOrStore(cluster, quietPassCount.WithLabelValues(cluster))
	return c.(prometheus.Counter)
}
