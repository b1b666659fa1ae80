package helm

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Results of a render, the values of the result label.
const (
	resultRendered = "rendered"
	resultCached   = "cached"
	resultFailed   = "failed"
)

// rendersTotal counts chart renders by result: rendered by the Helm engine, served from the
// render cache, or failed.
var rendersTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "navarch_helm_renders_total",
	Help: "Helm chart renders, by result: rendered, cached (served from the render cache) or failed.",
}, []string{"result"})

func init() {
	metrics.Registry.MustRegister(rendersTotal)
	for _, result := range []string{resultRendered, resultCached, resultFailed} {
		rendersTotal.WithLabelValues(result)
	}
}
