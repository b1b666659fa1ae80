package dashboard

import (
	"context"
	"regexp"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/membership"
	"github.com/navarch-io/navarch/internal/testenv"
)

// When replicas share the fleet, the Clusters page names the replica holding each Cluster's
// Lease, as `navarch cluster list` does, and marks a Lease not renewed in time.
func TestTheClustersPageNamesTheReplicaSyncingEachCluster(t *testing.T) {
	ns := testenv.Namespace(t, env.Client) // the Leases' namespace, standing for navarch-system
	ctx := context.Background()
	live, stale := ns+"-live", ns+"-stale"
	for _, c := range []struct {
		cluster, replica string
		renewed          time.Time
	}{{live, "r1", time.Now()}, {stale, "r2", time.Now().Add(-time.Hour)}} {
		cluster := &navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: c.cluster}, Spec: navarchv1.ClusterSpec{InCluster: true}}
		if err := env.Client.Create(ctx, cluster); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cluster) })
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "navarch-cluster-" + c.cluster, Namespace: ns,
				Labels:      map[string]string{membership.LabelPartOf: membership.PartOf, membership.LabelRole: membership.RoleCluster},
				Annotations: map[string]string{membership.AnnotationCluster: c.cluster}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: new(c.replica), LeaseDurationSeconds: new(int32(15)),
				RenewTime: new(metav1.NewMicroTime(c.renewed))},
		}
		if err := env.Client.Create(ctx, lease); err != nil {
			t.Fatal(err)
		}
	}
	srv := startDashboard(t, Options{SystemNamespace: ns})
	c := browserClient(t)
	row := func(body, cluster string) string {
		return regexp.MustCompile(`(?s)<tr[^>]*><th scope="row">` + regexp.QuoteMeta(cluster) + `</th>.*?</tr>`).FindString(body)
	}
	testenv.Eventually(t, "the Clusters page names each Cluster's replica", func() string {
		_, body, _ := get(t, c, srv.URL+"/clusters")
		if r := row(body, live); !regexp.MustCompile(`<td>r1</td>`).MatchString(r) {
			return "the row of " + live + " does not name r1: " + r
		}
		if r := row(body, stale); !regexp.MustCompile(`<td>r2 \(expired\)</td>`).MatchString(r) {
			return "the row of " + stale + " does not say r2 (expired): " + r
		}
		return ""
	})
}
