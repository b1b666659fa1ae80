package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// cacheAt is a cache holding one object at a resourceVersion. during, when set, runs inside Get
// after the object was read: the informer delivering an update at that moment.
type cacheAt struct {
	client.Reader
	obj    client.Object
	during func()
}

func (c cacheAt) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.obj.(*navarchv1.ApplicationSet).DeepCopyInto(obj.(*navarchv1.ApplicationSet))
	if c.during != nil {
		c.during()
	}
	return nil
}

// A pass must start from its own last write when the cache lags behind it, and from the cache
// once the cache has caught up or moved past it (a user's edit); the copy is dropped then.
func TestOwnWritesPreferTheNewerCopy(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "s"}
	set := func(rv, phrase string) *navarchv1.ApplicationSet {
		s := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: rv}}
		s.Status.Conditions = []metav1.Condition{{Type: "ResourcesUpToDate", Message: phrase}}
		return s
	}
	get := func(w *ownWrites[*navarchv1.ApplicationSet], cache cacheAt) string {
		t.Helper()
		got, err := w.get(context.Background(), cache, key, &navarchv1.ApplicationSet{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Conditions[0].Message
	}
	var w ownWrites[*navarchv1.ApplicationSet]
	if got := get(&w, cacheAt{obj: set("5", "cached")}); got != "cached" {
		t.Fatalf("with no write recorded, get returned the %s copy", got)
	}
	w.store(set("7", "written"))
	for _, tt := range []struct{ rv, want string }{
		{"6", "written"}, // the cache has not seen the write
		{"7", "cached"},  // caught up
		{"9", "cached"},  // moved past it
	} {
		if got := get(&w, cacheAt{obj: set(tt.rv, "cached")}); got != tt.want {
			t.Errorf("cache at resourceVersion %s, write at 7: get returned the %s copy, want the %s one", tt.rv, got, tt.want)
		}
	}
	if _, kept := w.m.Load(key); kept {
		t.Error("the copy of the write is kept after the cache caught up with it")
	}
	w.store(set("11", "written"))
	w.forget(key)
	if got := get(&w, cacheAt{obj: set("6", "cached")}); got != "cached" {
		t.Errorf("after forget, get returned the %s copy", got)
	}

	// The informer may deliver the write, and drop its copy, after the cache was read and
	// before the pass looks for the copy. The pass must still start from the write.
	w.store(set("13", "written"))
	h := w.handler()
	deliver := func() {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: set("12", "cached"), ObjectNew: set("13", "written")}, nil)
	}
	if got := get(&w, cacheAt{obj: set("12", "cached"), during: deliver}); got != "written" {
		t.Errorf("the informer delivered the write at 13 while the pass read 12 from the cache: get returned the %s copy", got)
	}
	if _, kept := w.m.Load(key); kept {
		t.Error("the copy of the write is kept after the informer delivered it")
	}
}

// No pass may follow an object's last write: the Application's watch ignores status-only
// updates. The informer's handler shows the cache's copy to the remembered writes, so the copy
// of that write is dropped once the cache has it, and kept while the cache lags behind it.
func TestTheCacheCatchingUpDropsTheCopyOfTheLastWrite(t *testing.T) {
	app := func(rv string) *navarchv1.Application {
		return &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv}}
	}
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	var w ownWrites[*navarchv1.Application]
	h := w.handler()
	update := func(rv string) {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: app("1"), ObjectNew: app(rv)}, nil)
	}
	w.store(app("7"))
	update("6")
	if _, kept := w.m.Load(key); !kept {
		t.Fatal("the copy of the write at resourceVersion 7 is dropped when the cache shows resourceVersion 6")
	}
	update("7")
	if _, kept := w.m.Load(key); kept {
		t.Fatal("the copy of the write is kept after the cache showed it")
	}
	w.store(app("9"))
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: app("1"), ObjectNew: &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "12"}}}, nil)
	if _, kept := w.m.Load(key); !kept {
		t.Fatal("an update of another kind dropped the copy of an Application's write")
	}
}
