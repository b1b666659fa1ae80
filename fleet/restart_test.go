package fleet_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// Right after a controller restart, an Application whose cluster is not connected yet waits
// for the connection, not for the router's 30 s requeue: the cluster's connection requeues
// its Applications. (Seen once: after restarts, every Application showed
// "ClusterUnavailable: not connected yet" for 30-60 s while both Clusters were Connected.)
func TestApplicationsFollowTheirClusterAtOnceAfterARestart(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"cm/cm.yaml": configMap("greeting", "hello")})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: web}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {name: west, namespace: %s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, url, ns))
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)

	commit := push(t, "change the greeting", map[string]string{"cm/cm.yaml": configMap("greeting", "hi")})
	restartController(t)
	requestRefresh(t, app) // routed while west may not be connected yet
	testenv.EventuallyWithin(t, 20*time.Second, "the new commit synced well before the router's 30 s requeue", func() string {
		got := getApp(t, app)
		if got.Status.Sync.Revision == commit && syncedAndHealthy(got) {
			return ""
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ConditionReady); c != nil {
			return c.Reason + ": " + c.Message
		}
		return describe(got)
	})
}
