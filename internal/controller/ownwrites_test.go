package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
