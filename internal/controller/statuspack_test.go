package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sjson "sigs.k8s.io/json"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/compact"
	"github.com/navarch-io/navarch/internal/delta"
	"github.com/navarch-io/navarch/internal/fixture"
)

// received decodes the i-th Application of the fleet fixture as the cache's informer does,
// with the managed fields the API server sends.
func received(tb testing.TB, i int) *navarchv1.Application {
	tb.Helper()
	app := &navarchv1.Application{}
	if err := sjson.UnmarshalCaseSensitivePreserveInts(fixture.SyncedApplication(i), app); err != nil {
		tb.Fatal(err)
	}
	app.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "navarch", Operation: metav1.ManagedFieldsOperationApply,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
	return app
}

// cached runs the manager cache's transform on app.
func cached(t *testing.T, p *statusPacker, app *navarchv1.Application) *navarchv1.Application {
	t.Helper()
	out, err := compactCached(p, nil)(app)
	if err != nil || out != any(app) {
		t.Fatalf("transform(%s) = %v, %v; want the same object and no error", app.Name, out, err)
	}
	return app
}

// whole is app as the API server has it, without its managed fields.
func whole(app *navarchv1.Application) *navarchv1.Application {
	c := app.DeepCopy()
	c.ManagedFields = nil
	return c
}

func TestTheCacheKeepsTheStatusListsEncoded(t *testing.T) {
	p := &statusPacker{}
	first := cached(t, p, received(t, 0))
	app := received(t, 4321)
	want := whole(app)
	cached(t, p, app)

	st := app.Status
	if st.Conditions != nil || st.Resources != nil || st.History != nil || st.OperationState.SyncResult.Resources != nil {
		t.Errorf("status lists kept decoded in the cache: %+v", st)
	}
	// What the watches, the notifier and rollouts read stays.
	if !equality.Semantic.DeepEqual(st.Sync, want.Status.Sync) || st.Health != want.Status.Health || st.ObservedGeneration != 1 ||
		st.OperationState.Phase != navarchv1.OperationSucceeded || st.OperationState.Message != "successfully synced" ||
		st.OperationState.SyncResult.Revision != want.Status.Sync.Revision || st.OperationState.FinishedAt == nil {
		t.Errorf("the cached status lost what readers of the cache's objects use: %+v", st)
	}
	raw, err := json.Marshal(statusLists{
		Conditions: want.Status.Conditions, Resources: want.Status.Resources, History: want.Status.History,
		SyncResources: want.Status.OperationState.SyncResult.Resources,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(packedLists(app)); n == 0 || n > len(raw)/4 {
		t.Errorf("the lists take %d bytes encoded against the first Application's, of %d as JSON; want at most a quarter", n, len(raw))
	}
	if len(packedLists(first)) == 0 {
		t.Error("the first Application's lists are not encoded")
	}
}

func TestReadsGetTheWholeApplication(t *testing.T) {
	p := &statusPacker{}
	cached(t, p, received(t, 0))
	app := received(t, 205)
	want := whole(app)
	cached(t, p, app)

	// A read without deep copy gets a shallow copy of the cached object.
	shallow := *app
	if err := p.unpack(&shallow); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(&shallow, want) {
		t.Errorf("unpacked Application differs from the API server's:\n got %+v\nwant %+v", shallow.Status, want.Status)
	}
	if app.Status.Resources != nil || app.Status.OperationState.SyncResult.Resources != nil || packedLists(app) == nil {
		t.Error("unpacking a shallow copy changed the cached object")
	}
	got, err := p.unpacked(app)
	if err != nil || got == app || !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("unpacked(app) = %p (cached %p), %v; want a whole copy", got, app, err)
	}
}

func TestTransformingTwiceChangesNothing(t *testing.T) {
	p := &statusPacker{}
	app := cached(t, p, received(t, 3))
	before := app.DeepCopy()
	cached(t, p, app)
	if !equality.Semantic.DeepEqual(app, before) {
		t.Errorf("a second transform changed the cached Application:\n got %+v\nwant %+v", app, before)
	}

	bare := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "new",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	cached(t, p, bare)
	if bare.ManagedFields != nil {
		t.Errorf("an Application with no status lists kept managed fields %v", bare.ManagedFields)
	}
	if got, err := p.unpacked(bare); got != bare || err != nil {
		t.Errorf("unpacked(an Application with nothing packed) = %p, %v; want the same object", got, err)
	}
}

func TestADamagedEncodingIsAnErrorNamingTheApplication(t *testing.T) {
	p := &statusPacker{}
	app := cached(t, p, received(t, 1))
	app.ManagedFields[0].FieldsV1.SetRawBytes([]byte{0xff})
	_, err := p.unpacked(app)
	if !errors.Is(err, delta.ErrCorrupt) || !strings.Contains(err.Error(), "fleet-apps/e001-c000") {
		t.Errorf("unpacked(damaged) error = %v; want delta.ErrCorrupt naming fleet-apps/e001-c000", err)
	}
	if _, err := (&statusPacker{}).unpacked(app); err == nil || !strings.Contains(err.Error(), "encoded none") {
		t.Errorf("unpacked by another cache's packer: error %v; want one saying it encoded none", err)
	}
}

// fixedCache is a cache that returns one Application, as the informer cache does: a copy of
// the cached struct, sharing its pointers.
type fixedCache struct {
	cache.Cache
	app *navarchv1.Application
}

func (c fixedCache) Get(_ context.Context, _ client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	for _, o := range opts {
		if _, ok := o.(withoutStatusLists); ok {
			return errors.New("the option reached the informer cache")
		}
	}
	*obj.(*navarchv1.Application) = *c.app
	return nil
}

func (c fixedCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	for _, o := range opts {
		if _, ok := o.(withoutStatusLists); ok {
			return errors.New("the option reached the informer cache")
		}
	}
	list.(*navarchv1.ApplicationList).Items = []navarchv1.Application{*c.app, *c.app}
	return nil
}

func TestStatusCacheReads(t *testing.T) {
	p := &statusPacker{}
	cached(t, p, received(t, 0))
	app := received(t, 17)
	want := whole(app)
	c := statusCache{Cache: fixedCache{app: cached(t, p, app)}, packer: p}
	ctx := context.Background()

	got := &navarchv1.Application{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), got); err != nil || !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("Get = %+v, %v; want the whole Application", got.Status, err)
	}
	var list navarchv1.ApplicationList
	if err := c.List(ctx, &list); err != nil || len(list.Items) != 2 || !equality.Semantic.DeepEqual(&list.Items[1], want) {
		t.Errorf("List = %d items, %v; want two whole Applications", len(list.Items), err)
	}

	opts := []client.ListOption{client.InNamespace("fleet-apps"), withoutStatusLists{}}
	list = navarchv1.ApplicationList{}
	if err := c.List(ctx, &list, opts...); err != nil {
		t.Fatal(err)
	}
	if _, ok := opts[1].(withoutStatusLists); !ok {
		t.Error("List changed the caller's options")
	}
	if it := list.Items[0]; it.ManagedFields != nil || it.Status.Resources != nil || !equality.Semantic.DeepEqual(it.Status.Sync, want.Status.Sync) {
		t.Errorf("List without status lists = %+v; want the sync status and no lists, no encoding", it)
	}
	got = &navarchv1.Application{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), got, withoutStatusLists{}); err != nil || got.ManagedFields != nil || got.Status.Resources != nil {
		t.Errorf("Get without status lists = %+v, %v", got, err)
	}
	if packedLists(app) == nil {
		t.Error("reads changed the cached object")
	}
}

// BenchmarkCachedApplication measures what the manager's cache keeps of a synced Application
// (live-B/app), with its status lists encoded or decoded (compacted either way), what the
// transform costs (transform-ns/app) and what a read's decoding of the lists costs
// (unpack-ns/app).
func BenchmarkCachedApplication(b *testing.B) {
	const n = 10000
	docs := make([]*navarchv1.Application, n)
	for i := range docs {
		docs[i] = received(b, i)
	}
	for _, packed := range []bool{false, true} {
		b.Run(fmt.Sprintf("packed=%v", packed), func(b *testing.B) {
			var perApp, transform, unpack float64
			for b.Loop() {
				p := &statusPacker{}
				transformOf := compactCached(p, nil)
				if !packed {
					transformOf = func(obj any) (any, error) {
						obj, err := stripManagedFields(obj)
						compact.Value(obj)
						return obj, err
					}
				}
				apps := make([]*navarchv1.Application, n)
				var spent time.Duration
				live := fixture.LiveHeap(func() {
					for i := range apps {
						apps[i] = docs[i].DeepCopy()
						start := time.Now()
						if _, err := transformOf(apps[i]); err != nil {
							b.Fatal(err)
						}
						spent += time.Since(start)
					}
				})
				perApp = float64(live) / n
				transform = float64(spent.Nanoseconds()) / n
				start := time.Now()
				for _, app := range apps {
					if _, err := p.unpacked(app); err != nil {
						b.Fatal(err)
					}
				}
				unpack = float64(time.Since(start).Nanoseconds()) / n
				runtime.KeepAlive(apps)
			}
			b.ReportMetric(perApp, "live-B/app")
			b.ReportMetric(transform, "transform-ns/app")
			b.ReportMetric(unpack, "unpack-ns/app")
		})
	}
}

func TestPackedStatusIsOneAllocationFillingItsSizeClass(t *testing.T) {
	sizes := map[string]uintptr{
		"40": unsafe.Sizeof(packedStatus[[40]byte]{}), "72": unsafe.Sizeof(packedStatus[[72]byte]{}),
		"104": unsafe.Sizeof(packedStatus[[104]byte]{}), "136": unsafe.Sizeof(packedStatus[[136]byte]{}),
		"200": unsafe.Sizeof(packedStatus[[200]byte]{}), "264": unsafe.Sizeof(packedStatus[[264]byte]{}),
		"392": unsafe.Sizeof(packedStatus[[392]byte]{}),
	}
	want := map[string]uintptr{"40": 160, "72": 192, "104": 224, "136": 256, "200": 320, "264": 384, "392": 512}
	for k, w := range want {
		if sizes[k] != w {
			t.Errorf("packedStatus[[%s]byte] is %d bytes, want %d (a size class it fills)", k, sizes[k], w)
		}
	}
	for _, n := range []int{1, 40, 41, 104, 105, 392, 393, 2000} {
		enc := []byte(strings.Repeat("x", n-1) + "y")
		entries := packedEntries(enc)
		app := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{ManagedFields: entries}}
		if got := packedLists(app); string(got) != string(enc) || cap(got) != n {
			t.Errorf("an encoding of %d bytes reads back as %d bytes (capacity %d)", n, len(got), cap(got))
		}
		allocs := testing.AllocsPerRun(10, func() { packedEntries(enc) })
		want := 1.0
		if n > 392 {
			want = 2 // the encoding apart
		}
		if allocs != want {
			t.Errorf("packing an encoding of %d bytes took %.0f allocations, want %.0f", n, allocs, want)
		}
	}
}
