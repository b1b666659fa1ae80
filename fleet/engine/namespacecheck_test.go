package engine

import (
	"slices"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

const otherConfigMapManifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {c: d}"

// With a watch of the cluster's namespaces, a new Application's first sync into a namespace it
// creates asks the API server nothing about the namespace but to create it: the comparison
// reads the watch, and the object applied first is validated by its apply.
func TestANewNamespaceSeenMissingInTheWatchCostsNoLookup(t *testing.T) {
	h := newHarness(t, configMapManifest, otherConfigMapManifest)
	delete(h.cluster.objects, objectKey(h.cluster.served[namespaceKind.GroupKind()].Resource.GroupResource(), "", "shop"))
	h.cluster.namespaces = map[string]bool{}
	h.app.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"CreateNamespace=true"}
	h.start(navarchv1.SyncOperation{})
	if out := h.pass(false); out.kind != kindEnded || h.state().Phase != navarchv1.OperationSucceeded {
		t.Fatalf("sync: %s: %s", out, h.state().Message)
	}
	if len(h.cluster.gets) != 0 || h.cluster.dryRuns != 1 {
		t.Errorf("GETs %v and %d dry runs; want none and 1 (the object applied second)", h.cluster.gets, h.cluster.dryRuns)
	}
	if want := []string{"Namespace shop", "ConfigMap config", "ConfigMap other"}; !slices.Equal(h.cluster.applied, want) {
		t.Errorf("applied %v, want %v", h.cluster.applied, want)
	}
}

// A watch of the namespaces may not have seen one that exists. The comparison then finds it
// missing, but the sync neither refuses nor applies an object without its dry run: with
// CreateNamespace the create finds the namespace there and every object is dry-run; without
// it, the namespace is looked up before the validation and its objects are dry-run. The
// namespace, which existed before, is not marked as the Application's.
func TestALaggingNamespaceWatchNeitherRefusesNorSkipsADryRun(t *testing.T) {
	for _, createNamespace := range []bool{true, false} {
		h := newHarness(t, configMapManifest, otherConfigMapManifest)
		h.cluster.namespaces = map[string]bool{} // "shop" exists, unseen
		if createNamespace {
			h.app.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"CreateNamespace=true"}
		}
		c := h.compare()
		if len(h.cluster.gets) != 0 || !c.resources[0].missingNamespace {
			t.Fatalf("CreateNamespace=%t: comparison: GETs %v, namespace missing %t; want no GET, missing", createNamespace, h.cluster.gets, c.resources[0].missingNamespace)
		}
		h.start(navarchv1.SyncOperation{})
		if out := h.pass(false); out.kind != kindEnded || h.state().Phase != navarchv1.OperationSucceeded {
			t.Fatalf("CreateNamespace=%t: sync: %s: %s", createNamespace, out, h.state().Message)
		}
		if h.cluster.dryRuns != 2 {
			t.Errorf("CreateNamespace=%t: %d dry runs, want 2 (every object)", createNamespace, h.cluster.dryRuns)
		}
		wantGets := []string{"Namespace shop"} // the look-up before the validation
		if createNamespace {
			wantGets = nil // the create told
		}
		if !slices.Equal(h.cluster.gets, wantGets) {
			t.Errorf("CreateNamespace=%t: GETs %v, want %v", createNamespace, h.cluster.gets, wantGets)
		}
		if a := h.cluster.object("Namespace", "", "shop").GetAnnotations(); a[navarchv1.AnnotationCreatedBy] != "" || h.app.Status.CreatedNamespace != "" {
			t.Errorf("CreateNamespace=%t: namespace annotated %v, status.createdNamespace %q; want neither", createNamespace, a, h.app.Status.CreatedNamespace)
		}
	}
}

// Without a watch of its namespaces (an identity that may not list them), the comparison
// looks the namespace up, once for all its objects.
func TestWithoutANamespaceWatchTheComparisonLooksTheNamespaceUp(t *testing.T) {
	h := newHarness(t, configMapManifest, otherConfigMapManifest)
	delete(h.cluster.objects, objectKey(h.cluster.served[namespaceKind.GroupKind()].Resource.GroupResource(), "", "shop"))
	c := h.compare()
	if want := []string{"Namespace shop"}; !slices.Equal(h.cluster.gets, want) || !c.resources[0].missingNamespace || !c.resources[1].missingNamespace || h.cluster.dryRuns != 0 {
		t.Errorf("GETs %v, namespace missing %t and %t, %d dry runs; want %v, missing, no dry run", h.cluster.gets, c.resources[0].missingNamespace, c.resources[1].missingNamespace, h.cluster.dryRuns, want)
	}
}
