package fleet_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// A pass that finds an Application Synced with nothing to do would let the passes after it end
// at once (quiet), but only once its status is written: when the write fails, the passes that
// retry it compare again and write, instead of leaving the stored status behind the cluster.
func TestAStatusWriteThatFailedIsMadeByTheRetry(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	// A Cluster of its own (on west's apiserver), so that the error count is this test's alone.
	registerStages(t, ns, stage{"retry", "dev", "west"})
	cluster, target := ns+"-retry", ns+"-retry"
	url := repo(t, map[string]string{"cm/settings.yaml": configMap("settings", "one")})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: retry}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {name: %s, namespace: %s}
  syncPolicy:
    automated: {}
    syncOptions: [CreateNamespace=true]
`, url, cluster, target))
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)

	// A hand edit; without selfHeal the Application stays OutOfSync.
	west := workloads["west"].Client
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "settings"}}
	testenv.Update(t, west, cm, func(c *corev1.ConfigMap) { c.Data["greeting"] = "by hand" })
	waitForApp(t, app, "OutOfSync after the hand edit", func(a *navarchv1.Application) bool {
		return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync
	})

	// The management cluster refuses the Application's status writes.
	allow := refuseStatusWrites(t, app)
	errors := reconcileErrors(t, cluster)
	// The edit undone, the next pass finds the Application Synced with nothing to do, and
	// cannot write that.
	testenv.Update(t, west, cm, func(c *corev1.ConfigMap) { c.Data["greeting"] = "one" })
	// Had the failed pass been taken as written, its retry would end at once (quiet), with
	// no second attempt.
	testenv.Eventually(t, "a pass fails to write the status, and its retry tries again", func() string {
		if got := reconcileErrors(t, cluster); got < errors+2 {
			return fmt.Sprintf("navarch_cluster_reconcile_errors_total went from %v to %v", errors, got)
		}
		return ""
	})
	if a := getApp(t, app); a.Status.Sync.Status != navarchv1.SyncStatusOutOfSync {
		t.Fatalf("the status was written while the policy refuses it: %s", describe(a))
	}
	allow()
	waitForApp(t, app, "Synced once its status can be written", syncedAndHealthy)
}

// refuseStatusWrites makes the management cluster refuse every write of app's status, with a
// ValidatingAdmissionPolicy, until the returned function (or the test's end) lifts it.
func refuseStatusWrites(t *testing.T, app *navarchv1.Application) (allow func()) {
	t.Helper()
	ctx := context.Background()
	name := "refuse-status-" + app.Namespace
	var objs []*unstructured.Unstructured
	for _, manifest := range []string{fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [navarch.io]
      apiVersions: ["*"]
      operations: [UPDATE]
      resources: [applications/status]
  validations:
  - expression: object.metadata.namespace != %[2]q || object.metadata.name != %[3]q
    message: the test refuses this status write
`, name, app.Namespace, app.Name), fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  validationActions: [Deny]
`, name)} {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
			t.Fatal(err)
		}
		if err := mgmt.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, obj)
	}
	allow = func() {
		for _, obj := range objs {
			if err := mgmt.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	t.Cleanup(allow)
	// The API server applies a new policy after a moment: wait until a dry-run write of the
	// status is refused.
	testenv.Eventually(t, "the policy refuses the status writes", func() string {
		a := getApp(t, app)
		a.Status.ReconciledAt = nil
		err := mgmt.Status().Update(ctx, a, client.DryRunAll)
		if err == nil {
			return "a dry-run status write is still allowed"
		}
		if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			return err.Error()
		}
		return ""
	})
	return allow
}

// reconcileErrors returns navarch_cluster_reconcile_errors_total for cluster.
func reconcileErrors(t *testing.T, cluster string) float64 {
	t.Helper()
	return clusterCounter(t, "navarch_cluster_reconcile_errors_total", cluster)
}
