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

	// The router's own requeue of an unavailable cluster's Application is pushed far beyond
	// the wait, so only the connection can bring it back in time.
	controllerOptions.UnavailableRequeue = 10 * time.Minute
	t.Cleanup(func() {
		controllerOptions.UnavailableRequeue = 0
		restartController(t)
	})
	commit := push(t, "change the greeting", map[string]string{"cm/cm.yaml": configMap("greeting", "hi")})
	restartController(t)
	requestRefresh(t, app) // routed while west may not be connected yet
	testenv.Eventually(t, "the new commit synced, without the router's own requeue", func() string {
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
