package fleetbench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// recordsNamespace holds the records phase's Applications on the management cluster. Nothing
// reconciles them: the phase runs after the controller has stopped.
const recordsNamespace = "bench-records"

// syncedStatus is the status a finished automated sync of the benchmark's source leaves on an
// Application (as read from one after a run), for the commit and repository given; syncedIn
// adds the destination namespace.
const syncedStatus = `{
 "conditions": [{"lastTransitionTime": "2026-01-01T00:00:02Z", "message": "synced to %[1]s and healthy", "observedGeneration": 1,
   "reason": "SyncedAndHealthy", "status": "True", "type": "Ready"}],
 "health": {"status": "Healthy"},
 "history": [{"deployStartedAt": "2026-01-01T00:00:01Z", "deployedAt": "2026-01-01T00:00:02Z", "id": 0, "initiatedBy": {"automated": true},
   "revision": "%[1]s", "source": {"path": "app", "repoURL": "%[2]s", "targetRevision": "main"}}],
 "observedGeneration": 1,
 "operationState": {
  "finishedAt": "2026-01-01T00:00:02Z", "id": "3f5a5", "message": "successfully synced",
  "operation": {"initiatedBy": {"automated": true}, "sync": {"prune": true, "revision": "%[1]s"}},
  "phase": "Succeeded", "startedAt": "2026-01-01T00:00:01Z",
  "syncResult": {"revision": "%[1]s", "resources": [
   {"kind": "Secret", "message": "applied", "name": "token", "status": "Synced", "syncPhase": "Sync", "version": "v1"},
   {"kind": "ConfigMap", "message": "applied", "name": "settings", "status": "Synced", "syncPhase": "Sync", "version": "v1"},
   {"kind": "Service", "message": "applied", "name": "web", "status": "Synced", "syncPhase": "Sync", "version": "v1"}]}},
 "reconciledAt": "2026-01-01T00:00:00Z",
 "resources": [
  {"kind": "ConfigMap", "name": "settings", "status": "Synced", "version": "v1"},
  {"kind": "Secret", "name": "token", "status": "Synced", "version": "v1"},
  {"health": {"status": "Healthy"}, "kind": "Service", "name": "web", "status": "Synced", "version": "v1"}],
 "sync": {"revision": "%[1]s", "status": "Synced"}
}`

// recordsApply is the second reference: the records any controller of this design keeps on
// the management cluster for the Applications the ApplicationSet generates, written by a bare
// loop with no controller running. For each: the Application as the ApplicationSet controller
// creates it (its labels and owner reference, not its resources finalizer), its status
// written once as a finished sync leaves it, and the one Event that sync records. 16 writers,
// no client-side rate limit. It returns the time until the last write answered. The records
// stay: they are written last, with the controller stopped.
func (f *fleet) recordsApply(b *testing.B, perCluster int) time.Duration {
	b.Helper()
	ctx := context.Background()
	c := unlimitedClient(b, f.mgmt)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: recordsNamespace}}); err != nil {
		b.Fatal(err)
	}
	var synced navarchv1.ApplicationStatus
	dec := json.NewDecoder(strings.NewReader(fmt.Sprintf(syncedStatus, f.commit, f.repoURL)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&synced); err != nil {
		b.Fatalf("records: the synced status: %v", err)
	}
	owner := metav1.OwnerReference{APIVersion: navarchv1.GroupVersion.String(), Kind: "ApplicationSet", Name: "records",
		UID: "00000000-0000-0000-0000-000000000000", Controller: new(true), BlockOwnerDeletion: new(true)}

	work := make(chan [2]int)
	var wg sync.WaitGroup
	start := time.Now()
	for range 16 {
		wg.Go(func() {
			for w := range work {
				if err := f.record(ctx, c, clusterName(w[0]), elementName(w[1]), owner, &synced); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range f.cfg.clusters {
		for a := range perCluster {
			work <- [2]int{i, a}
		}
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	if b.Failed() {
		b.FailNow()
	}
	return took
}

// record writes one Application's records: its creation, its status, its Event.
func (f *fleet) record(ctx context.Context, c client.Client, cluster, element string, owner metav1.OwnerReference, synced *navarchv1.ApplicationStatus) error {
	ns := cluster + "-" + element
	app := &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: recordsNamespace, Name: element + "-" + cluster,
			Labels: map[string]string{navarchv1.LabelApplicationSet: "records"}, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: f.repoURL, TargetRevision: "main", Path: "app"},
			Destination: navarchv1.ApplicationDestination{Name: cluster, Namespace: ns},
			SyncPolicy: &navarchv1.SyncPolicy{Automated: &navarchv1.SyncPolicyAutomated{Prune: true},
				SyncOptions: []navarchv1.SyncOption{"CreateNamespace=true"}},
		},
	}
	if err := c.Create(ctx, app); err != nil {
		return fmt.Errorf("records: create Application %s: %w", app.Name, err)
	}
	before := app.DeepCopy()
	app.Status = syncedIn(synced, ns)
	if err := c.Status().Patch(ctx, app, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("records: write the status of Application %s: %w", app.Name, err)
	}
	event := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: recordsNamespace, Name: app.Name + ".sync"},
		EventTime:           metav1.NowMicro(),
		ReportingController: "navarch",
		ReportingInstance:   "navarch-bench-records",
		Action:              "Sync",
		Reason:              "OperationSucceeded",
		Type:                corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: navarchv1.GroupVersion.String(), Kind: "Application", Namespace: app.Namespace,
			Name: app.Name, UID: app.UID, ResourceVersion: app.ResourceVersion},
		Note: fmt.Sprintf("synced %s (started by automated sync): successfully synced", f.commit[:8]),
	}
	if err := c.Create(ctx, event); err != nil {
		return fmt.Errorf("records: create the Event of Application %s: %w", app.Name, err)
	}
	return nil
}

// syncedIn is a copy of synced with its resources, and the namespace navarch created, in ns.
func syncedIn(synced *navarchv1.ApplicationStatus, ns string) navarchv1.ApplicationStatus {
	out := *synced.DeepCopy()
	out.CreatedNamespace = ns
	for i := range out.Resources {
		out.Resources[i].Namespace = ns
	}
	for i := range out.OperationState.SyncResult.Resources {
		out.OperationState.SyncResult.Resources[i].Namespace = ns
	}
	return out
}
