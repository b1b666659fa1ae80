package compact

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"reflect"
	"runtime"
	stdstrings "strings"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
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

func sameCopy(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// isTableCopy reports whether s is one of the string table's copies.
func isTableCopy(s string) bool {
	if len(s) == 0 || len(s) > maxInterned {
		return false
	}
	t := strings
	i := t.slot(maphash.String(t.seed, s))
	t.mu.Lock()
	defer t.mu.Unlock()
	return unsafe.StringData(t.slots[i]) == unsafe.StringData(s)
}

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
// each distinct string of docs in a slot of its own, and the table of maps a new, empty one. The table keeps the last string of each
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
		tab := newTable(len(strings.slots), sameString, stdstrings.Clone)
		taken := map[uint64]string{}
		collides := false
		for _, s := range all {
			i := tab.slot(maphash.String(tab.seed, s))
			if other, ok := taken[i]; ok && other != s {
				collides = true
				break
			}
			taken[i] = s
		}
		if !collides {
			oldStrings, oldMaps := strings, maps
			strings, maps = tab, newTable(len(maps.slots), sameMap, keepMap)
			t.Cleanup(func() { strings, maps = oldStrings, oldMaps })
			return
		}
	}
	t.Fatalf("no seed of 1000 puts the %d strings in slots of their own", len(all))
}

func TestValueSharesRepeatedStrings(t *testing.T) {
	withoutCollisions(t, fixture.SyncedApplication(1), fixture.SyncedApplication(2), fixture.SyncedApplication(3))
	a, b, c := decode(t, fixture.SyncedApplication(1)), decode(t, fixture.SyncedApplication(2)), decode(t, fixture.SyncedApplication(3))
	if sameCopy(b.Status.Sync.Revision, c.Status.Sync.Revision) {
		t.Fatal("decoding alone already shares strings; the test proves nothing")
	}
	Value(a) // the first sighting of each string: the table learns their hashes only
	if isTableCopy(a.Status.Sync.Revision) || isTableCopy(a.Name) {
		t.Errorf("the table holds strings met once")
	}
	Value(b) // the second: the table keeps copies, which b's fields now are
	Value(c)
	shared := map[string][2]string{
		"status.sync.revision":              {b.Status.Sync.Revision, c.Status.Sync.Revision},
		"status.sync.revision, history":     {b.Status.Sync.Revision, c.Status.History[0].Revision},
		"spec.source.repoURL":               {b.Spec.Source.RepoURL, c.Spec.Source.RepoURL},
		"status.resources[0].kind":          {b.Status.Resources[0].Kind, c.Status.Resources[0].Kind},
		"status.operationState.syncResult":  {b.Status.OperationState.SyncResult.Resources[1].Message, c.Status.OperationState.SyncResult.Resources[2].Message},
		"metadata.finalizers[0]":            {b.Finalizers[0], c.Finalizers[0]},
		"metadata.ownerReferences[0].uid":   {string(b.OwnerReferences[0].UID), string(c.OwnerReferences[0].UID)},
		"spec.syncPolicy.syncOptions[0]":    {string(b.Spec.SyncPolicy.SyncOptions[0]), string(c.Spec.SyncPolicy.SyncOptions[0])},
		"a resource's namespace, in-object": {c.Status.Resources[0].Namespace, c.Status.OperationState.SyncResult.Resources[0].Namespace},
	}
	for what, s := range shared {
		if !sameCopy(s[0], s[1]) {
			t.Errorf("%s: %q and %q are separate copies", what, s[0], s[1])
		}
		if !isTableCopy(s[0]) {
			t.Errorf("%s: %q is not the table's copy", what, s[0])
		}
	}
	if len(b.Labels) == 0 || reflect.ValueOf(b.Labels).UnsafePointer() != reflect.ValueOf(c.Labels).UnsafePointer() {
		t.Errorf("equal labels %v and %v are separate maps", b.Labels, c.Labels)
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Errorf("the first labels met are shared already")
	}
	for k, v := range b.Labels {
		if !isTableCopy(k) || !isTableCopy(v) {
			t.Errorf("label %s=%s: the shared map's strings are not the table's", k, v)
		}
	}
	if b.Name == c.Name || sameCopy(b.Name, c.Name) || isTableCopy(c.Name) {
		t.Errorf("names %q and %q should differ, and stay the objects' own", b.Name, c.Name)
	}
}

func TestValueSharesRepeatedBlocks(t *testing.T) {
	docs := make([][]byte, 5)
	for i := range docs {
		docs[i] = fixture.SyncedApplication(i + 1)
	}
	withoutCollisions(t, docs...)
	oldBlocks := blocks
	t.Cleanup(func() { blocks = oldBlocks })
	same := func(a, b any) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	// Each level of blocks is shared one object after the level below it, whose strings and
	// blocks its bytes hold; the fourth and fifth objects share them all. The table keeps one
	// block per slot, so the test picks a seed that gives the test's blocks slots of their own.
	var problems []string
	for range 100 {
		blocks = newTable(1<<16, sameBlock, keepBlock)
		apps := make([]*navarchv1.Application, len(docs))
		for i, doc := range docs {
			apps[i] = decode(t, doc)
			Value(apps[i])
		}
		d, e := apps[3], apps[4]
		problems = nil
		for what, pair := range map[string][2]any{
			"spec.syncPolicy":                      {d.Spec.SyncPolicy, e.Spec.SyncPolicy},
			"metadata.ownerReferences":             {d.OwnerReferences, e.OwnerReferences},
			"metadata.finalizers":                  {d.Finalizers, e.Finalizers},
			"status.operationState.operation.sync": {d.Status.OperationState.Operation.Sync, e.Status.OperationState.Operation.Sync},
			"status.operationState.finishedAt":     {d.Status.OperationState.FinishedAt, e.Status.OperationState.FinishedAt},
		} {
			if !same(pair[0], pair[1]) {
				problems = append(problems, what+" is two blocks")
			}
		}
		if same(d.Status.Resources, e.Status.Resources) || same(apps[0].Spec.SyncPolicy, apps[1].Spec.SyncPolicy) {
			problems = append(problems, "blocks that differ, or were met once, are shared")
		}
		if len(problems) == 0 {
			return
		}
	}
	t.Errorf("no seed of 100 shares the blocks: %v", problems)
}

func TestValueSharesNoBlockOfMutableType(t *testing.T) {
	type withMutable struct {
		Quantity *resource.Quantity // caches its string form in itself
		Any      *any
		Plain    *metav1.OwnerReference
	}
	withoutCollisions(t, []byte(`{"kind": "ApplicationSet", "name": "fleet"}`))
	oldBlocks := blocks
	blocks = newTable(len(oldBlocks.slots), sameBlock, keepBlock) // the test's one block looked up has the table to itself
	t.Cleanup(func() { blocks = oldBlocks })
	var objs []*withMutable
	for range 4 {
		q := resource.MustParse("1Gi")
		var v any = "same"
		objs = append(objs, &withMutable{Quantity: &q, Any: &v, Plain: &metav1.OwnerReference{Kind: "ApplicationSet", Name: "fleet"}})
		Value(objs[len(objs)-1])
	}
	a, b := objs[2], objs[3]
	if a.Quantity == b.Quantity || a.Any == b.Any {
		t.Error("blocks of types that change themselves, or of unknown types, are shared")
	}
	if a.Plain != b.Plain {
		t.Error("equal owner references are two blocks; the test proves nothing")
	}
}

func TestShareableTypesThatHoldThemselves(t *testing.T) {
	type chain struct {
		Next *chain
		Name string
	}
	type loose struct {
		Next  *loose
		Value any // of a type unknown
	}
	type wrapper struct{ Inner *loose }
	if !shareable(reflect.TypeFor[chain]()) {
		t.Error("a chain of strings is not shareable")
	}
	// The nested answer is made while loose's own is still a guess, and must not be kept as it.
	if shareable(reflect.TypeFor[wrapper]()) || shareable(reflect.TypeFor[loose]()) || shareable(reflect.TypeFor[*loose]()) {
		t.Error("a type that holds an interface, through itself or another, is shareable")
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
