package engine

import (
	"context"
	"slices"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Deleting an Application deletes its resources and counts what is left; an object the server
// says is gone counts as gone even while the watch cache still shows it, so the deletion of an
// Application does not wait for a watch to catch up.
func TestDeleteResourcesDoesNotWaitForALaggingWatch(t *testing.T) {
	h := newHarness(t, configMapManifest, deploymentManifest)
	h.start(navarchv1.SyncOperation{})
	if out := h.pass(false); out.kind != kindEnded {
		t.Fatalf("sync: %s", out)
	}
	h.compare() // the inventory: status.resources

	h.cluster.freezeWatch()
	ctx := context.Background()
	remaining, err := h.e.deleteResources(ctx, h.app, h.remote)
	if err != nil || remaining != 2 {
		t.Fatalf("first pass: %d remaining (%v), want 2 deleted and not yet seen gone", remaining, err)
	}
	if want := []string{"Deployment web", "ConfigMap config"}; !slices.Equal(h.cluster.deleted, want) {
		t.Errorf("deleted %v, want %v (reverse sync order)", h.cluster.deleted, want)
	}
	remaining, err = h.e.deleteResources(ctx, h.app, h.remote)
	if err != nil || remaining != 0 {
		t.Errorf("second pass: %d remaining (%v), want 0: the server has neither", remaining, err)
	}
}

// A namespace that existed before the sync is neither marked nor recorded, so deleting the
// Application leaves it.
func TestCreateNamespaceLeavesAnExistingNamespaceUnmarked(t *testing.T) {
	h := newHarness(t, configMapManifest)
	h.app.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"CreateNamespace=true"}
	h.start(navarchv1.SyncOperation{})
	if out := h.pass(false); out.kind != kindEnded {
		t.Fatalf("sync: %s", out)
	}
	if a := h.cluster.object("Namespace", "", "shop").GetAnnotations(); a[navarchv1.AnnotationCreatedBy] != "" || h.app.Status.CreatedNamespace != "" {
		t.Errorf("existing namespace annotated %v, status.createdNamespace %q; want neither", a, h.app.Status.CreatedNamespace)
	}
}

// A Namespace in the source is created by CreateNamespace if its objects need it first, but it
// is the source's: tracked, never marked as created.
func TestCreateNamespaceLeavesANamespaceOfTheSourceToTheSource(t *testing.T) {
	h := newHarness(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}", configMapManifest)
	delete(h.cluster.objects, objectKey(h.cluster.served[namespaceKind.GroupKind()].Resource.GroupResource(), "", "shop"))
	h.app.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"CreateNamespace=true"}
	h.start(navarchv1.SyncOperation{})
	if out := h.pass(false); out.kind != kindEnded || h.state().Phase != navarchv1.OperationSucceeded {
		t.Fatalf("sync: %s: %s", out, h.state().Message)
	}
	a := h.cluster.object("Namespace", "", "shop").GetAnnotations()
	if a[navarchv1.AnnotationCreatedBy] != "" || a[navarchv1.AnnotationTrackingID] == "" || h.app.Status.CreatedNamespace != "" {
		t.Errorf("namespace annotated %v, status.createdNamespace %q; want tracked, not marked or recorded", a, h.app.Status.CreatedNamespace)
	}
}
