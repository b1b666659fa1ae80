package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// Deleting an Application whose cluster is down: the finalizer keeps the Application (its
// resources are not forgotten), its status says why it waits and what will happen, and the
// deletion completes once the cluster answers again.
func TestDeletingAnApplicationOfAnUnreachableClusterWaitsAndSaysWhy(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"cm/cm.yaml": configMap("greeting", "hello")})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: doomed, finalizers: [navarch.io/resources-finalizer]}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {name: west, namespace: %s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, url, ns))
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)

	startWest := stopAPIServer(t, "west")
	if err := mgmt.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitForApp(t, app, "says why its deletion waits", func(a *navarchv1.Application) bool {
		c := meta.FindStatusCondition(a.Status.Conditions, navarchv1.ApplicationDeletionError)
		return c != nil && c.Status == "True" && c.Reason == navarchv1.ReasonClusterUnavailable &&
			strings.Contains(c.Message, "1 resources") && strings.Contains(c.Message, navarchv1.FinalizerResources)
	})
	testenv.Consistently(t, 3*time.Second, "the Application waits for its cluster", func() string {
		if err := mgmt.Get(ctx, client.ObjectKeyFromObject(app), &navarchv1.Application{}); err != nil {
			return fmt.Sprintf("the Application is gone while its cluster is down: %v", err)
		}
		return ""
	})
	var events corev1.EventList
	if err := mgmt.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if !hasEvent(events, "DeletionWaiting") {
		t.Errorf("no DeletionWaiting Event in %s", ns)
	}

	startWest()
	// Two foreground deletions run on west's own controllers, which resume after its API server
	// restart with their backoff: the garbage collector's for the ConfigMap (most of a minute on
	// a loaded machine), then the namespace controller's for the namespace created for the
	// Application.
	testenv.EventuallyWithin(t, 2*time.Minute, "the Application is deleted once west answers", func() string {
		err := mgmt.Get(ctx, client.ObjectKeyFromObject(app), &navarchv1.Application{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("still there (%v)", err)
	})
	err := workloads["west"].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greeting"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Application's ConfigMap on west: %v; want it deleted with the Application", err)
	}
	err = workloads["west"].Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s on west, created for the Application: %v; want it deleted with the Application", ns, err)
	}
}

func hasEvent(events corev1.EventList, reason string) bool {
	for _, e := range events.Items {
		if e.Reason == reason {
			return true
		}
	}
	return false
}
