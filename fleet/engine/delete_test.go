package engine

import (
	"context"
	"maps"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

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

// A namespace the Application created goes last, after its other resources, and only while it
// still carries the Application's mark.
func TestDeleteResourcesDeletesTheCreatedNamespaceLast(t *testing.T) {
	h := newHarness(t, configMapManifest)
	delete(h.cluster.objects, objectKey(h.cluster.served[namespaceKind.GroupKind()].Resource.GroupResource(), "", "shop"))
	h.app.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"CreateNamespace=true"}
	h.start(navarchv1.SyncOperation{})
	if out := h.pass(false); out.kind != kindEnded || h.state().Phase != navarchv1.OperationSucceeded {
		t.Fatalf("sync: %s: %s", out, h.state().Message)
	}
	ns := h.cluster.object("Namespace", "", "shop")
	if got := ns.GetAnnotations()[navarchv1.AnnotationCreatedBy]; got != "platform/shop" || h.app.Status.CreatedNamespace != "shop" {
		t.Fatalf("namespace marked %q, status.createdNamespace %q; want platform/shop and shop", got, h.app.Status.CreatedNamespace)
	}
	h.compare()

	ctx := context.Background()
	for pass, want := range []struct {
		remaining int
		deleted   []string
	}{
		{1, []string{"ConfigMap config"}},                   // the namespace waits for the ConfigMap
		{1, []string{"ConfigMap config", "Namespace shop"}}, // deleted, not seen gone yet
		{0, []string{"ConfigMap config", "Namespace shop"}},
	} {
		remaining, err := h.e.deleteResources(ctx, h.app, h.remote)
		if err != nil || remaining != want.remaining || !slices.Equal(h.cluster.deleted, want.deleted) {
			t.Fatalf("pass %d: %d remaining (%v), deleted %v; want %d and %v", pass+1, remaining, err, h.cluster.deleted, want.remaining, want.deleted)
		}
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

func TestKeepCreatedNamespace(t *testing.T) {
	app := types.NamespacedName{Namespace: "platform", Name: "pr-7"}
	namespace := func(annotations map[string]string) *unstructured.Unstructured {
		ns := &unstructured.Unstructured{}
		ns.SetAPIVersion("v1")
		ns.SetKind("Namespace")
		ns.SetName("pr-7")
		ns.SetAnnotations(annotations)
		return ns
	}
	mark := map[string]string{navarchv1.AnnotationCreatedBy: "platform/pr-7"}
	with := func(k, v string) map[string]string {
		a := maps.Clone(mark)
		a[k] = v
		return a
	}
	tests := []struct {
		name string
		live *unstructured.Unstructured
		kept map[string]bool
		keep bool
	}{
		{"marked by this Application", namespace(mark), nil, false},
		{"Delete=false of another namespace's object", namespace(mark), map[string]bool{"other": true}, false},
		{"never marked: it existed before", namespace(nil), nil, true},
		{"marked by another Application", namespace(map[string]string{navarchv1.AnnotationCreatedBy: "platform/pr-8"}), nil, true},
		{"marked by a same-named Application elsewhere", namespace(map[string]string{navarchv1.AnnotationCreatedBy: "team/pr-7"}), nil, true},
		{"mark emptied by a user", namespace(map[string]string{navarchv1.AnnotationCreatedBy: ""}), nil, true},
		{"tracked: a Namespace of a source", namespace(with(navarchv1.AnnotationTrackingID, "platform_pr-7:/Namespace:/pr-7")), nil, true},
		{"a tracking id copied from another object does not count", namespace(with(navarchv1.AnnotationTrackingID, "platform_pr-7:/Namespace:/other")), nil, false},
		{"Delete=false", namespace(with(navarchv1.AnnotationSyncOptions, "Prune=false, Delete=false")), nil, true},
		{"Argo CD's Delete=false", namespace(with(navarchv1.ArgoAnnotationSyncOptions, "Delete=false")), nil, true},
		{"it holds an object that says Delete=false", namespace(mark), map[string]bool{"pr-7": true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			why := keepCreatedNamespace(app, tc.live, syncOptions{"CreateNamespace": "true"}, tc.kept)
			if (why != "") != tc.keep {
				t.Errorf("keepCreatedNamespace = %q; want kept: %t", why, tc.keep)
			}
		})
	}
}
