package compact

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"reflect"
	"runtime"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sjson "sigs.k8s.io/json"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fixture"
)

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
		doc := fixture.SyncedApplication(i * 137)
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

// withoutCollisions makes the shared table, for the rest of the test, a new one whose seed puts
// each distinct string of docs in a slot of its own. The table keeps the last string of each
// slot, so with the process's random seed two strings of one Application may share a slot and
// take turns in it, and which pairs do changes from run to run.
func withoutCollisions(t *testing.T, docs ...[]byte) {
	var all []string
	var collect func(v any)
	collect = func(v any) {
		switch v := v.(type) {
		case string:
			all = append(all, v)
		case []any:
			for _, e := range v {
				collect(e)
			}
		case map[string]any:
			for k, e := range v {
				all = append(all, k)
				collect(e)
			}
		}
	}
	for _, doc := range docs {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatal(err)
		}
		collect(v)
	}
	for range 1000 {
		tab := &table{seed: maphash.MakeSeed()}
		taken := map[uint64]string{}
		collides := false
		for _, s := range all {
			i := maphash.String(tab.seed, s) & (slots - 1)
			if other, ok := taken[i]; ok && other != s {
				collides = true
				break
			}
			taken[i] = s
		}
		if !collides {
			old := strings
			strings = tab
			t.Cleanup(func() { strings = old })
			return
		}
	}
	t.Fatalf("no seed of 1000 puts the %d strings in slots of their own", len(all))
}

func TestValueSharesRepeatedStrings(t *testing.T) {
	withoutCollisions(t, fixture.SyncedApplication(1), fixture.SyncedApplication(2))
	a, b := decode(t, fixture.SyncedApplication(1)), decode(t, fixture.SyncedApplication(2))
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
	app := decode(t, fixture.SyncedApplication(5))
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
		docs[i] = fixture.SyncedApplication(i)
	}
	for _, compacted := range []bool{false, true} {
		b.Run(fmt.Sprintf("compact=%v", compacted), func(b *testing.B) {
			var perApp, took float64
			for b.Loop() {
				apps := make([]*navarchv1.Application, n)
				var spent time.Duration
				live := fixture.LiveHeap(func() {
					for i := range apps {
						apps[i] = decode(b, docs[i])
						if compacted {
							start := time.Now()
							Value(apps[i])
							spent += time.Since(start)
						}
					}
				})
				perApp = float64(live) / n
				took = float64(spent.Nanoseconds()) / n
				runtime.KeepAlive(apps)
			}
			b.ReportMetric(perApp, "live-B/app")
			b.ReportMetric(took, "compact-ns/app")
		})
	}
}
