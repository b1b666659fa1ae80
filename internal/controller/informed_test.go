package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// informedApps holds the informer's latest object of each Application, the very object, and
// forgets a deleted one, also when the informer only learns of the deletion late (a tombstone).
func TestInformedAppsHoldTheInformersObjects(t *testing.T) {
	var x informedApps
	var handler toolscache.ResourceEventHandler = &x
	appAt := func(name, rv string) *navarchv1.Application {
		return &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, ResourceVersion: rv}}
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "team", Name: name} }

	first, second := appAt("web", "1"), appAt("web", "2")
	handler.OnAdd(first, true)
	handler.OnAdd(appAt("db", "5"), false)
	if got := x.get(key("web")); got != first {
		t.Fatalf("after the add: %v, want the added object", got)
	}
	handler.OnUpdate(first, second)
	if got := x.get(key("web")); got != second {
		t.Fatalf("after the update: %v, want the new object", got)
	}
	handler.OnDelete(second)
	if got := x.get(key("web")); got != nil {
		t.Errorf("after the delete: %v, want nil", got)
	}
	handler.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "team/db", Obj: appAt("db", "5")})
	if got := x.get(key("db")); got != nil {
		t.Errorf("after a tombstone: %v, want nil", got)
	}
	handler.OnAdd(&navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, false)
	if got := x.get(types.NamespacedName{Name: "web"}); got != nil {
		t.Errorf("another kind was taken in: %v", got)
	}
}
