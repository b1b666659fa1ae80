package membership

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Holder is the replica holding a Cluster's Lease, as `navarch status` and `navarch cluster
// list` show it.
type Holder struct {
	// Replica is the holder's identity; empty when the Lease was released.
	Replica string `json:"replica,omitempty"`
	// RenewTime is when the holder last renewed the Lease.
	RenewTime time.Time `json:"renewTime,omitzero"`
	// Expired says the Lease was not renewed within its duration, judged by the caller's
	// clock: the holder may be dead, and another replica takes the Cluster soon.
	Expired bool `json:"expired,omitempty"`
}

// Holders reads the Cluster Leases in namespace and returns their holders by Cluster name. It
// returns none when no replicas share the fleet.
func Holders(ctx context.Context, c client.Reader, namespace string, now time.Time) (map[string]Holder, error) {
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace), client.MatchingLabels{LabelPartOf: PartOf, LabelRole: RoleCluster}); err != nil {
		return nil, err
	}
	holders := map[string]Holder{}
	for i := range leases.Items {
		l := &leases.Items[i]
		cluster := l.Annotations[AnnotationCluster]
		if cluster == "" {
			continue
		}
		h := Holder{Replica: holderOf(l)}
		if l.Spec.RenewTime != nil {
			h.RenewTime = l.Spec.RenewTime.Time
			h.Expired = h.Replica != "" && now.Sub(h.RenewTime) > durationOf(l, DefaultLeaseDuration)
		}
		holders[cluster] = h
	}
	return holders, nil
}

// String is the holder as a table cell: the replica, "(released)", or the replica marked
// expired.
func (h Holder) String() string {
	switch {
	case h.Replica == "":
		return "(released)"
	case h.Expired:
		return h.Replica + " (expired)"
	}
	return h.Replica
}
