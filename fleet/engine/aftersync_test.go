package engine

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/diff"
	"github.com/navarch-io/navarch/fleet/source"
)

// An operation that succeeds records, in the same pass, the comparison the next pass will
// make: Synced, with each object's health as the server returned it, although the watch cache
// has not seen the objects yet, and without asking the server again. Once it has, the next comparison finds exactly that, with no
// dry run, so the next pass has nothing to write.
func TestASucceededSyncIsComparedAgainWithWhatItApplied(t *testing.T) {
	h := newHarness(t, configMapManifest, deploymentManifest)
	h.cluster.freezeWatch() // the watch sees none of the sync's writes
	h.start(navarchv1.SyncOperation{Revision: testCommit})
	if got := h.app.Status.Sync.Status; got != navarchv1.SyncStatusOutOfSync {
		t.Fatalf("before the sync: %s, want OutOfSync", got)
	}
	if out := h.pass(false); out.kind != kindEnded || h.state().Phase != navarchv1.OperationSucceeded {
		t.Fatalf("the operation: %s, phase %s (%s); want it to succeed in one pass", out, h.state().Phase, h.state().Message)
	}
	if h.app.Status.Sync.Status != navarchv1.SyncStatusOutOfSync {
		t.Fatalf("the harness recorded %s before the operation, want OutOfSync", h.app.Status.Sync.Status)
	}

	applied, dryRuns := slices.Clone(h.cluster.applied), h.cluster.dryRuns
	h.compareAfterSync()
	after := h.app.Status.DeepCopy()
	if after.Sync.Status != navarchv1.SyncStatusSynced || after.Sync.Revision != testCommit {
		t.Errorf("after the sync: %s at %s, want Synced at %s (resources %+v)", after.Sync.Status, after.Sync.Revision, testCommit, after.Resources)
	}
	health := map[string]navarchv1.HealthStatusCode{}
	for _, r := range after.Resources {
		if r.Status != navarchv1.SyncStatusSynced {
			t.Errorf("%s %s is %s: %s", r.Kind, r.Name, r.Status, r.Message)
		}
		if r.Health != nil {
			health[r.Kind] = r.Health.Status
		}
	}
	// The Deployment as applied has no status yet: it is still rolling out.
	if health["Deployment"] != navarchv1.HealthProgressing || after.Health.Status != navarchv1.HealthProgressing {
		t.Errorf("health: Deployment %s, Application %s; want Progressing for both", health["Deployment"], after.Health.Status)
	}
	if !slices.Equal(h.cluster.applied, applied) {
		t.Errorf("comparing again applied %v", h.cluster.applied[len(applied):])
	}
	// What the sync applied is known: no dry run asks the server again.
	if h.cluster.dryRuns != dryRuns {
		t.Errorf("comparing again made %d dry runs, want none", h.cluster.dryRuns-dryRuns)
	}

	// The watch catches up: the next comparison is the same.
	h.cluster.watchCache = nil
	dryRuns = h.cluster.dryRuns
	h.compare()
	if !equality.Semantic.DeepEqual(h.app.Status.Resources, after.Resources) || !equality.Semantic.DeepEqual(h.app.Status.Sync, after.Sync) || h.app.Status.Health != after.Health {
		t.Errorf("the next pass compared\n%+v %+v\n%+v\nwant what the sync recorded\n%+v %+v\n%+v",
			h.app.Status.Sync, h.app.Status.Health, h.app.Status.Resources, after.Sync, after.Health, after.Resources)
	}
	if h.cluster.dryRuns != dryRuns {
		t.Errorf("the next comparison made %d dry runs, want none", h.cluster.dryRuns-dryRuns)
	}
}

// A change made after the sync's apply, which the watch cache already holds when the sync
// compares again, wins over what the sync applied: the comparison says OutOfSync rather than
// Synced. A cache still holding the version the sync replaced does not.
func TestAChangeAfterTheSyncWinsOverWhatItApplied(t *testing.T) {
	h := newHarness(t, configMapManifest)
	h.cluster.add(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config, namespace: shop}\ndata: {a: drifted}")
	h.cluster.freezeWatch() // the cache holds the version the sync replaces
	h.start(navarchv1.SyncOperation{Revision: testCommit})
	if out := h.pass(false); out.kind != kindEnded || h.state().Phase != navarchv1.OperationSucceeded {
		t.Fatalf("the operation: %s, phase %s (%s)", out, h.state().Phase, h.state().Message)
	}
	h.compareAfterSync()
	if got := h.app.Status.Sync.Status; got != navarchv1.SyncStatusSynced {
		t.Fatalf("with the cache behind the sync: %s, want Synced", got)
	}

	// Someone edits the ConfigMap after the sync, and the cache has the edit.
	edited := h.cluster.object("ConfigMap", "shop", "config")
	edited = edited.DeepCopy()
	edited.Object["data"] = map[string]any{"a": "edited after the sync"}
	edited.SetResourceVersion("999")
	for k, o := range h.cluster.objects {
		if o.GetKind() == "ConfigMap" {
			h.cluster.watchCache[k] = edited
		}
	}
	h.compareAfterSync()
	if got := h.app.Status.Sync.Status; got != navarchv1.SyncStatusOutOfSync {
		t.Errorf("with the cache holding a later edit: %s, want OutOfSync (resources %+v)", got, h.app.Status.Resources)
	}
}

// compareAfterSync compares again after the operation, as Reconcile does when it succeeds.
func (h *harness) compareAfterSync() {
	h.t.Helper()
	ig, err := diff.CompileIgnore(h.app.Spec.IgnoreDifferences)
	if err != nil {
		h.t.Fatal(err)
	}
	h.e.compareAfterSync(context.Background(), h.app, h.remote, nil, &source.Manifests{Objects: h.source, Commit: testCommit}, ig)
}
