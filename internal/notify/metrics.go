package notify

import "github.com/prometheus/client_golang/prometheus"

// The notification metrics. The controller registers Collectors with the registry its
// metrics endpoint serves.
var (
	sentTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "navarch_notifications_sent_total",
		Help: "Notifications delivered, by destination and trigger.",
	}, []string{"destination", "trigger"})
	attemptErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "navarch_notifications_delivery_errors_total",
		Help: "Failed delivery attempts (each retry counts), by destination and trigger.",
	}, []string{"destination", "trigger"})
	failedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "navarch_notifications_failed_total",
		Help: "Notifications given up after their last attempt or a permanent error, by destination and trigger.",
	}, []string{"destination", "trigger"})
	droppedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "navarch_notifications_dropped_total",
		Help: "Notifications dropped because the delivery queue was full, by destination and trigger.",
	}, []string{"destination", "trigger"})
	configValid = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "navarch_notifications_config_valid",
		Help: "1 when the last notification configuration read was valid, 0 when it was not (the last valid one stays in use).",
	})
)

// Collectors returns the notification metrics, for registration.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{sentTotal, attemptErrors, failedTotal, droppedTotal, configValid}
}

// SetConfigValid records whether the last configuration read was valid.
func SetConfigValid(valid bool) {
	if valid {
		configValid.Set(1)
	} else {
		configValid.Set(0)
	}
}
