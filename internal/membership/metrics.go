package membership

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of each replica's share of the fleet, labelled by the replica's identity (member).
var (
	ownedClusters = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "navarch_membership_owned_clusters",
		Help: "Clusters whose Lease this replica holds and whose workers it runs.",
	}, []string{"member"})
	liveMembers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "navarch_membership_live_members",
		Help: "Replicas this replica sees as live, itself included.",
	}, []string{"member"})
	leaseFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "navarch_membership_lease_failures_total",
		Help: "Failed Lease requests, by operation (list, member, acquire, renew, release).",
	}, []string{"member", "operation"})
)

// Operations counted by navarch_membership_lease_failures_total.
const (
	opList    = "list"
	opMember  = "member"
	opAcquire = "acquire"
	opRenew   = "renew"
	opRelease = "release"
)

// RegisterMetrics registers the membership metrics with reg, e.g. controller-runtime's
// metrics.Registry. Registering them again with the same registry is not an error.
func RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{ownedClusters, liveMembers, leaseFailures} {
		if err := reg.Register(c); err != nil {
			if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok && are.ExistingCollector == c {
				continue
			}
			return err
		}
	}
	return nil
}

// forgetMetrics removes member's series when it stops, so a stopped replica does not report
// a share it no longer has.
func forgetMetrics(member string) {
	ownedClusters.DeleteLabelValues(member)
	liveMembers.DeleteLabelValues(member)
	leaseFailures.DeletePartialMatch(prometheus.Labels{"member": member})
}
