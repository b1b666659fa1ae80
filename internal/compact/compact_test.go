package compact

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sjson "sigs.k8s.io/json"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// application is an Application of bench/fleet as the controller reads it after a sync:
// element %[1]s of the list generator on Cluster %[2]s.
const application = `{"apiVersion": "navarch.io/v1alpha1", "kind": "Application",
 "metadata": {"name": "%[1]s-%[2]s", "namespace": "fleet-apps", "uid": "%[3]s", "resourceVersion": "%[4]d", "generation": 1,
  "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"navarch.io/application-set": "fleet"},
  "finalizers": ["navarch.io/resources-finalizer"],
  "ownerReferences": [{"apiVersion": "navarch.io/v1alpha1", "kind": "ApplicationSet", "name": "fleet",
   "uid": "0c6f5a0e-8f7e-4a55-9f51-8b1d1f8a8a11", "controller": true, "blockOwnerDeletion": true}]},
 "spec": {"source": {"repoURL": "http://127.0.0.1:4000/fleet.git", "targetRevision": "main", "path": "app"},
  "destination": {"name": "%[2]s", "namespace": "%[2]s-%[1]s"},
  "syncPolicy": {"automated": {"prune": true}, "syncOptions": ["CreateNamespace=true"]}},
 "status": {
  "conditions": [{"lastTransitionTime": "2026-01-01T00:00:02Z", "message": "synced to 9f1c2e7a and healthy",
   "observedGeneration": 1, "reason": "SyncedAndHealthy", "status": "True", "type": "Ready"}],
  "health": {"status": "Healthy"},
  "history": [{"deployStartedAt": "2026-01-01T00:00:01Z", "deployedAt": "2026-01-01T00:00:02Z", "id": 0,
   "initiatedBy": {"automated": true}, "revision": "9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f6a7b8c9d0e",
   "source": {"path": "app", "repoURL": "http://127.0.0.1:4000/fleet.git", "targetRevision": "main"}}],
  "observedGeneration": 1,
  "operationState": {"finishedAt": "2026-01-01T00:00:02Z", "id": "3f5a5", "message": "successfully synced",
   "operation": {"initiatedBy": {"automated": true}, "sync": {"prune": true, "revision": "9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f6a7b8c9d0e"}},
   "phase": "Succeeded", "startedAt": "2026-01-01T00:00:01Z",
   "syncResult": {"revision": "9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f6a7b8c9d0e", "resources": [
    {"kind": "Secret", "namespace": "%[2]s-%[1]s", "message": "applied", "name": "token", "status": "Synced", "syncPhase": "Sync", "version": "v1"},
    {"kind": "ConfigMap", "namespace": "%[2]s-%[1]s", "message": "applied", "name": "settings", "status": "Synced", "syncPhase": "Sync", "version": "v1"},
    {"kind": "Service", "namespace": "%[2]s-%[1]s", "message": "applied", "name": "web", "status": "Synced", "syncPhase": "Sync", "version": "v1"}]}},
  "reconciledAt": "2026-01-01T00:00:00Z",
  "resources": [
   {"kind": "ConfigMap", "namespace": "%[2]s-%[1]s", "name": "settings", "status": "Synced", "version": "v1"},
   {"kind": "Secret", "namespace": "%[2]s-%[1]s", "name": "token", "status": "Synced", "version": "v1"},
   {"health": {"status": "Healthy"}, "kind": "Service", "namespace": "%[2]s-%[1]s", "name": "web", "status": "Synced", "version": "v1"}],
  "sync": {"revision": "9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f6a7b8c9d0e", "status": "Synced"}}}`

// document returns the i-th Application of a fleet of 100 per Cluster.
func document(i int) []byte {
	element, cluster := fmt.Sprintf("e%03d", i%100), fmt.Sprintf("c%03d", i/100)
	return fmt.Appendf(nil, application, element, cluster, fmt.Sprintf("%08x-1111-4222-8333-%012x", i, i), 100000+i)
}

// decode decodes as the controller's informers do.
func decode(tb testing.TB, doc []byte) *navarchv1.Application {
	tb.Helper()
	app := &navarchv1.Application{}
	if err := sjson.UnmarshalCaseSensitivePreserveInts(doc, app); err != nil {
		tb.Fatal(err)
	}
	return app
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestValueKeepsTheObjectEqual(t *testing.T) {
	for i := range 3 {
		doc := document(i * 137)
		app, want := decode(t, doc), decode(t, doc)
		Value(app)
		if !reflect.DeepEqual(app, want) {
			t.Fatalf("Application %d changed:\n got %+v\nwant %+v", i, app, want)
		}
		if got, want := app.Status.OperationState.FinishedAt.Time, time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC); !got.Equal(want) {
			t.Errorf("finishedAt = %v, want %v", got, want)
		}
	}
}

func TestValueSharesRepeatedStrings(t *testing.T) {
	a, b := decode(t, document(1)), decode(t, document(2))
	if sameString(a.Status.Sync.Revision, b.Status.Sync.Revision) {
		t.Fatal("decoding alone already shares strings; the test proves nothing")
	}
	Value(a)
	Value(b)
	shared := map[string][2]string{
		"status.sync.revision":              {a.Status.Sync.Revision, b.Status.Sync.Revision},
		"status.sync.revision, history":     {a.Status.Sync.Revision, b.Status.History[0].Revision},
		"spec.source.repoURL":               {a.Spec.Source.RepoURL, b.Spec.Source.RepoURL},
		"status.resources[0].kind":          {a.Status.Resources[0].Kind, b.Status.Resources[0].Kind},
		"status.operationState.syncResult":  {a.Status.OperationState.SyncResult.Resources[1].Message, b.Status.OperationState.SyncResult.Resources[2].Message},
		"metadata.finalizers[0]":            {a.Finalizers[0], b.Finalizers[0]},
		"metadata.ownerReferences[0].uid":   {string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID)},
		"spec.syncPolicy.syncOptions[0]":    {string(a.Spec.SyncPolicy.SyncOptions[0]), string(b.Spec.SyncPolicy.SyncOptions[0])},
		"a resource's namespace, in-object": {a.Status.Resources[0].Namespace, a.Status.OperationState.SyncResult.Resources[0].Namespace},
	}
	for what, s := range shared {
		if !sameString(s[0], s[1]) {
			t.Errorf("%s: %q and %q are separate copies", what, s[0], s[1])
		}
	}
	for k, v := range a.Labels {
		for k2, v2 := range b.Labels {
			if !sameString(k, k2) || !sameString(v, v2) {
				t.Errorf("label %s=%s is not shared", k, v)
			}
		}
	}
	if a.Name == b.Name || sameString(a.Name, b.Name) {
		t.Errorf("names %q and %q should differ", a.Name, b.Name)
	}
}

func TestValueCutsSlicesToLength(t *testing.T) {
	app := decode(t, document(5))
	before := cap(app.Status.Resources)
	Value(app)
	if before == len(app.Status.Resources) {
		t.Fatalf("the decoder left no spare room in status.resources (cap %d); the test proves nothing", before)
	}
	for what, lc := range map[string][2]int{
		"status.resources":                           {len(app.Status.Resources), cap(app.Status.Resources)},
		"status.operationState.syncResult.resources": {len(app.Status.OperationState.SyncResult.Resources), cap(app.Status.OperationState.SyncResult.Resources)},
		"status.conditions":                          {len(app.Status.Conditions), cap(app.Status.Conditions)},
		"metadata.ownerReferences":                   {len(app.OwnerReferences), cap(app.OwnerReferences)},
	} {
		if lc[0] != lc[1] {
			t.Errorf("%s: length %d, capacity %d", what, lc[0], lc[1])
		}
	}
}

func TestValueLeavesOthersAlone(t *testing.T) {
	Value(nil)
	Value(navarchv1.Application{}) // not a pointer: nothing it may change
	var none *navarchv1.Application
	Value(none)

	type withUnexported struct {
		Public  []string
		private []string
		Raw     []byte
		When    metav1.Time
		Counts  map[string]int
	}
	in := withUnexported{Public: make([]string, 1, 8), private: make([]string, 1, 8), Raw: make([]byte, 1, 8), When: metav1.Now(), Counts: map[string]int{"a": 1}}
	Value(&in)
	if cap(in.Public) != 1 || cap(in.private) != 8 || cap(in.Raw) != 8 || in.Counts["a"] != 1 {
		t.Errorf("capacities %d %d %d, counts %v: want 1 8 8, the map as it was", cap(in.Public), cap(in.private), cap(in.Raw), in.Counts)
	}
}

// BenchmarkApplication decodes 10,000 Applications of a synced fleet as the controller's cache
// keeps them, and reports the live heap each one takes with and without Value, and what Value
// costs per Application.
func BenchmarkApplication(b *testing.B) {
	const n = 10000
	docs := make([][]byte, n)
	for i := range docs {
		docs[i] = document(i)
	}
	for _, compacted := range []bool{false, true} {
		b.Run(fmt.Sprintf("compact=%v", compacted), func(b *testing.B) {
			var perApp, took float64
			for b.Loop() {
				apps := make([]*navarchv1.Application, n)
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				var spent time.Duration
				for i := range apps {
					apps[i] = decode(b, docs[i])
					if compacted {
						start := time.Now()
						Value(apps[i])
						spent += time.Since(start)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perApp = float64(after.HeapAlloc-before.HeapAlloc) / n
				took = float64(spent.Nanoseconds()) / n
				runtime.KeepAlive(apps)
			}
			b.ReportMetric(perApp, "live-B/app")
			b.ReportMetric(took, "compact-ns/app")
		})
	}
}
