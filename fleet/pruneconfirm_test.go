package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// A user keeps a ConfigMap that must not vanish unnoticed: it says
// `navarch.io/sync-options: Prune=confirm`. When it leaves Git, the automated sync with prune
// waits, and says so, until the user confirms with the `navarch.io/prune-confirmed`
// annotation; the ConfigMap stays meanwhile. The confirmation is a watch event of the
// Application: the prune and the end of the operation follow it at once, not at the Git poll,
// which the controller of these tests runs at its production interval of 3 minutes.
func TestPruneConfirmWaitsForTheAnnotationAndActsOnItAtOnce(t *testing.T) {
	if testenv.DefaultTimeout >= 3*time.Minute {
		t.Fatalf("testenv.DefaultTimeout is %s: the waits of this test could be ended by the 3-minute Git poll", testenv.DefaultTimeout)
	}
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-settings"
	east := workloads["east"].Client
	url := repo(t, map[string]string{
		"settings/keep.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: keep}\ndata: {a: b}\n",
		"settings/old.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old-settings\n" +
			"  annotations: {navarch.io/sync-options: Prune=confirm}\ndata: {a: b}\n",
	})
	app := manualApp(t, ns, url, "settings", "east", target, `
    automated: {prune: true}`)
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	old := client.ObjectKey{Namespace: target, Name: "old-settings"}
	if err := east.Get(ctx, old, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the first sync did not create ConfigMap old-settings: %v", err)
	}

	push(t, "remove old-settings", map[string]string{"settings/old.yaml": ""})
	refresh(t, app)
	const waiting = "waiting for confirmation to prune ConfigMap old-settings (Prune=confirm): annotate the Application with " +
		navarchv1.AnnotationPruneConfirmed
	waitForApp(t, app, "the sync waiting for the prune confirmation", func(a *navarchv1.Application) bool {
		s := a.Status.OperationState
		return s != nil && s.Phase == navarchv1.OperationRunning && s.Message == waiting
	})
	testenv.Consistently(t, 3*time.Second, "without a confirmation, old-settings stays and the sync waits", func() string {
		cm := &corev1.ConfigMap{}
		if err := east.Get(ctx, old, cm); err != nil {
			return fmt.Sprintf("ConfigMap old-settings: %v", err)
		}
		if !cm.DeletionTimestamp.IsZero() {
			return "ConfigMap old-settings is being deleted"
		}
		if s := getApp(t, app).Status.OperationState; s.Phase != navarchv1.OperationRunning || s.Message != waiting {
			return fmt.Sprintf("operation %s: %q", s.Phase, s.Message)
		}
		return ""
	})

	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) {
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		a.Annotations[navarchv1.AnnotationPruneConfirmed] = "true"
	})
	confirmed := time.Now()
	// Eventually gives up after testenv.DefaultTimeout, well before the Git poll could help.
	testenv.Eventually(t, "old-settings is pruned once the prune is confirmed", func() string {
		err := east.Get(ctx, old, &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		s := getApp(t, app).Status.OperationState
		return fmt.Sprintf("ConfigMap old-settings still there (%v); operation %s: %q", err, s.Phase, s.Message)
	})
	got := waitForApp(t, app, "the operation succeeded and the confirmation is cleared", func(a *navarchv1.Application) bool {
		_, pending := a.Annotations[navarchv1.AnnotationPruneConfirmed]
		return operationDone(a) && !pending
	})
	t.Logf("pruned and finished %s after the confirmation", time.Since(confirmed).Round(time.Millisecond))
	s := got.Status.OperationState
	if s.Phase != navarchv1.OperationSucceeded {
		t.Fatalf("operation %s after the confirmation: %s", s.Phase, s.Message)
	}
	var pruned []string
	for _, r := range s.SyncResult.Resources {
		if r.Status == navarchv1.ResultPruned {
			pruned = append(pruned, r.Kind+"/"+r.Name)
		}
	}
	if strings.Join(pruned, ",") != "ConfigMap/old-settings" {
		t.Errorf("the operation pruned %v, want [ConfigMap/old-settings]", pruned)
	}
	if err := east.Get(ctx, client.ObjectKey{Namespace: target, Name: "keep"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("ConfigMap keep, still in Git: %v", err)
	}
}
