package fleet_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/navarch-io/navarch/internal/testenv"
)

// A destination written by server URL routes to its Cluster with a trailing slash too. (The ApplicationSet controller's check and the
// router once disagreed on the trailing slash, so such an Application passed one and failed the
// other with "no such Cluster".)
func TestDestinationServerURLsAreNormalised(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"cm/cm.yaml": configMap("greeting", "hello")})
	server := workloads["east"].Server()
	for name, spelled := range map[string]string{
		"slash":  server + "/",
		"scheme": "HTTPS" + strings.TrimPrefix(server, "https") + "/",
	} {
		app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: %s}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {server: '%s', namespace: %s-%s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, name, url, spelled, ns, name))
		waitForApp(t, app, "Synced and Healthy on east", syncedAndHealthy)
	}
}
