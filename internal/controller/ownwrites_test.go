package controller

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// A pass must start from its own last write when the cache lags behind it, and from the cache
// once the cache has caught up or moved past it (a user's edit); the copy is dropped then.
func TestOwnWritesPreferTheNewerCopy(t *testing.T) {
	set := func(rv, phrase string) *navarchv1.ApplicationSet {
		s := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ResourceVersion: rv}}
		s.Status.Conditions = []metav1.Condition{{Type: "ResourcesUpToDate", Message: phrase}}
		return s
	}
	var w ownWrites[*navarchv1.ApplicationSet]
	if got := w.latest(set("5", "cached")); got.Status.Conditions[0].Message != "cached" {
		t.Fatalf("with no write recorded, latest returned %q", got.Status.Conditions[0].Message)
	}
	w.store(set("7", "written"))
	for _, tt := range []struct{ rv, want string }{
		{"6", "written"}, // the cache has not seen the write
		{"7", "cached"},  // caught up
		{"9", "cached"},  // moved past it
	} {
		if got := w.latest(set(tt.rv, "cached")); got.Status.Conditions[0].Message != tt.want {
			t.Errorf("cache at resourceVersion %s, write at 7: latest is the %s copy, want the %s one", tt.rv, got.Status.Conditions[0].Message, tt.want)
		}
	}
	if _, kept := w.m.Load(types.NamespacedName{Namespace: "ns", Name: "s"}); kept {
		t.Error("the copy of the write is kept after the cache caught up with it")
	}
	w.store(set("11", "written"))
	w.forget(types.NamespacedName{Namespace: "ns", Name: "s"})
	if got := w.latest(set("6", "cached")); got.Status.Conditions[0].Message != "cached" {
		t.Errorf("after forget, latest returned the %s copy", got.Status.Conditions[0].Message)
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
