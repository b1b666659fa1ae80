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

// The namespace of a pull-request preview: the preview's Application creates it
// (CreateNamespace=true) and deleting the Application deletes it, but never a namespace that
// navarch did not create for that Application.

// previewApp creates an automated Application "preview" in ns, with the resources finalizer,
// that syncs directory app of url to namespace target on east, creating it if it is missing.
func previewApp(t *testing.T, ns, url, target string) *navarchv1.Application {
	t.Helper()
	return createApp(t, ns, fmt.Sprintf(`
metadata: {name: preview, finalizers: [%s]}
spec:
  source: {repoURL: %s, targetRevision: main, path: app}
  destination: {name: east, namespace: %s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, navarchv1.FinalizerResources, url, target))
}

// eastNamespace returns namespace name on east, or nil if it does not exist.
func eastNamespace(t *testing.T, name string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{}
	err := workloads["east"].Client.Get(context.Background(), client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// deleteApp deletes the Application and waits until it is gone: its finalizer is released.
func deleteApp(t *testing.T, app *navarchv1.Application) {
	t.Helper()
	if err := mgmt.Delete(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, app.Name+" is deleted", func() string {
		got := &navarchv1.Application{}
		err := mgmt.Get(context.Background(), client.ObjectKeyFromObject(app), got)
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
		msg := fmt.Sprintf("still there, finalizers %v", got.Finalizers)
		if ns := eastNamespace(t, got.Spec.Destination.Namespace); ns != nil {
			msg += fmt.Sprintf("; its namespace is %s", ns.Status.Phase)
		}
		return msg
	})
}

// stays checks over a few seconds that namespace name on east, and the ConfigMaps named in it,
// are neither deleted nor being deleted.
func stays(t *testing.T, name string, configMaps ...string) {
	t.Helper()
	testenv.Consistently(t, 5*time.Second, "namespace "+name+" outlives the Application", func() string {
		ns := eastNamespace(t, name)
		switch {
		case ns == nil:
			return "the namespace is gone"
		case ns.DeletionTimestamp != nil:
			return "the namespace is being deleted"
		}
		for _, cm := range configMaps {
			got := &corev1.ConfigMap{}
			if err := workloads["east"].Client.Get(context.Background(), client.ObjectKey{Namespace: name, Name: cm}, got); err != nil {
				return fmt.Sprintf("ConfigMap %s: %v", cm, err)
			}
			if got.DeletionTimestamp != nil {
				return fmt.Sprintf("ConfigMap %s is being deleted", cm)
			}
		}
		return ""
	})
}

func TestAPreviewNamespaceIsCreatedWithItsApplicationAndDeletedWithIt(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-pr"
	url := repo(t, map[string]string{"app/cm.yaml": configMap("greeting", "hello")})
	app := previewApp(t, ns, url, target)
	got := waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	if got.Status.CreatedNamespace != target {
		t.Errorf("status.createdNamespace %q, want %q: navarch created it", got.Status.CreatedNamespace, target)
	}
	created := eastNamespace(t, target)
	if created == nil {
		t.Fatalf("namespace %s does not exist on east", target)
	}
	if by := created.Annotations[navarchv1.AnnotationCreatedBy]; by != ns+"/preview" {
		t.Errorf("namespace %s: %s is %q, want %q", target, navarchv1.AnnotationCreatedBy, by, ns+"/preview")
	}

	deleteApp(t, app)
	// The finalizer stays until the namespace is gone: once the Application is, so is it.
	if left := eastNamespace(t, target); left != nil {
		t.Errorf("namespace %s is still there (%s) after its Application was deleted", target, left.Status.Phase)
	}
}

func TestANamespaceThatExistedBeforeOutlivesTheApplication(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-shared"
	east := workloads["east"].Client
	if err := east.Create(ctx, &corev1.Namespace{ObjectMeta: objectMeta("", target)}); err != nil {
		t.Fatal(err)
	}
	unrelated := &corev1.ConfigMap{ObjectMeta: objectMeta(target, "unrelated"), Data: map[string]string{"owner": "someone else"}}
	if err := east.Create(ctx, unrelated); err != nil {
		t.Fatal(err)
	}
	url := repo(t, map[string]string{"app/cm.yaml": configMap("greeting", "hello")})
	app := previewApp(t, ns, url, target)
	got := waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	if got.Status.CreatedNamespace != "" {
		t.Errorf("status.createdNamespace %q for a namespace that existed before, want none", got.Status.CreatedNamespace)
	}
	if by, ok := eastNamespace(t, target).Annotations[navarchv1.AnnotationCreatedBy]; ok {
		t.Errorf("the existing namespace was marked %s=%q", navarchv1.AnnotationCreatedBy, by)
	}

	deleteApp(t, app)
	err := east.Get(ctx, client.ObjectKey{Namespace: target, Name: "greeting"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Application's ConfigMap: %v; want it deleted with the Application", err)
	}
	stays(t, target, "unrelated")
}

func TestACreatedNamespaceGivenToAnotherApplicationOutlivesTheApplication(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-pr"
	url := repo(t, map[string]string{"app/cm.yaml": configMap("greeting", "hello")})
	app := previewApp(t, ns, url, target)
	waitForApp(t, app, "Synced and Healthy with its namespace recorded", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.CreatedNamespace == target
	})
	// A user hands the namespace over to another Application.
	testenv.Update(t, workloads["east"].Client, eastNamespace(t, target), func(n *corev1.Namespace) {
		n.Annotations[navarchv1.AnnotationCreatedBy] = ns + "/successor"
	})

	deleteApp(t, app)
	err := workloads["east"].Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "greeting"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Application's ConfigMap: %v; want it deleted with the Application", err)
	}
	stays(t, target)
}

// A preview closed while its sync is still running a hook: the hook instance carries navarch's
// finalizer, which would hold the namespace in Terminating, and so the Application, forever.
func TestAPreviewNamespaceDeletedWhileAHookRunsIsNotHeldByTheHook(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-pr"
	url := repo(t, map[string]string{
		"app/slow.yaml": hookJob("slow-", "PreSync", "", map[string]string{"navarch.io/simulate-duration": "5m"}),
		"app/web.yaml":  deployment(),
	})
	app := previewApp(t, ns, url, target)
	waitForApp(t, app, "running its hook", func(a *navarchv1.Application) bool {
		s := a.Status.OperationState
		return s != nil && strings.Contains(s.Message, "waiting for PreSync hook") && a.Status.CreatedNamespace == target
	})
	if j := jobs(t, workloads["east"].Client, target); len(j) != 1 {
		t.Fatalf("%d hook Jobs in %s, want 1 running", len(j), target)
	}

	deleteApp(t, app)
	if left := eastNamespace(t, target); left != nil {
		t.Errorf("namespace %s is still there (%s) after its Application was deleted", target, left.Status.Phase)
	}
}
