package controller

import (
	"context"
	"strings"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

func sameBytes(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// decoded is an Application of namespace fleet-apps as a decoder makes it: strings of its own.
// Its destination namespace is "to-" and its name.
func decoded(name, uid string) *navarchv1.Application {
	return &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "fleet-apps", Name: strings.Clone(name), UID: types.UID(strings.Clone(uid)),
			ResourceVersion: strings.Clone("1234"),
		},
		Spec: navarchv1.ApplicationSpec{Destination: navarchv1.ApplicationDestination{Namespace: "to-" + name}},
	}
}

func TestSharedNamesAreTheCachedVersions(t *testing.T) {
	idx := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	held := decoded("e1-c1", "u-1")
	if err := idx.Add(held); err != nil {
		t.Fatal(err)
	}
	n := &sharedNames{}
	update := decoded("e1-c1", "u-1")
	own := update.Name
	n.share(update)
	if !sameBytes(update.Name, own) {
		t.Fatal("an sharedNames without an indexer changed the Application")
	}

	n.useIndexer(idx)
	version := update.ResourceVersion
	n.share(update)
	if !sameBytes(update.Name, held.Name) || !sameBytes(string(update.UID), string(held.UID)) ||
		!sameBytes(update.Spec.Destination.Namespace, held.Spec.Destination.Namespace) {
		t.Errorf("an update of a cached Application has strings of its own, not the cached version's")
	}
	if update.ResourceVersion != "1234" || sameBytes(update.ResourceVersion, version) {
		t.Errorf("the resource version %q is not a packed copy of 1234", update.ResourceVersion)
	}
	moved := decoded("e1-c1", "u-1")
	moved.Spec.Destination.Namespace = "elsewhere"
	n.share(moved)
	if moved.Spec.Destination.Namespace != "elsewhere" || !sameBytes(moved.Name, held.Name) {
		t.Errorf("an update that changes the destination namespace reads %q", moved.Spec.Destination.Namespace)
	}

	recreated := decoded("e1-c1", "u-2")
	first, second := decoded("e2-c1", "u-3"), decoded("e3-c1", "u-4")
	for _, app := range []*navarchv1.Application{recreated, first, second} {
		n.share(app)
	}
	if sameBytes(recreated.Name, held.Name) || recreated.Name != "e1-c1" || recreated.UID != "u-2" {
		t.Errorf("a recreated Application (another UID) took the strings of the one it replaces")
	}
	// New Applications' strings are packed one after the other.
	dest := first.Spec.Destination.Namespace
	end := unsafe.Add(unsafe.Pointer(unsafe.StringData(dest)), len(dest))
	if first.Name != "e2-c1" || first.UID != "u-3" || dest != "to-e2-c1" || second.Name != "e3-c1" || unsafe.Pointer(unsafe.StringData(second.Name)) != end {
		t.Errorf("new Applications' strings are not packed together: %q %q %q %q", first.Name, first.UID, dest, second.Name)
	}

	var none *sharedNames
	none.share(update) // no names: nothing to do
}

// TestTheCacheSharesNamesAcrossUpdates runs the manager's cache, as Run sets it up,
// against the API server: a cached Application's name, UID and destination namespace, after an
// update, are the bytes the cache held before it.
func TestTheCacheSharesNamesAcrossUpdates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	names := &sharedNames{}
	c, err := cache.New(env.Management.RESTConfig(), cache.Options{Scheme: scheme.New(), DefaultTransform: compactCached(&statusPacker{}, names)})
	if err != nil {
		t.Fatal(err)
	}
	if err := shareAppNames(ctx, c, names); err != nil {
		t.Fatal(err)
	}
	if names.cached.Load() == nil {
		t.Fatal("the manager's cache has no single informer of Applications to share names with")
	}
	go func() { _ = c.Start(ctx) }()

	ns := testenv.Namespace(t, env.Client)
	app := &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared-names"},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: "http://git.example/fleet.git", Path: "app"},
			Destination: navarchv1.ApplicationDestination{Name: "in-cluster", Namespace: "default"},
		},
	}
	if err := env.Client.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	cachedAt := func(rv string) *navarchv1.Application {
		t.Helper()
		got := &navarchv1.Application{}
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := c.Get(ctx, client.ObjectKeyFromObject(app), got, client.UnsafeDisableDeepCopy)
			if err == nil && got.ResourceVersion == rv {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cache did not get resourceVersion %s: %v, has %q", rv, err, got.ResourceVersion)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	before := cachedAt(app.ResourceVersion)
	app.Labels = map[string]string{"updated": "yes"}
	if err := env.Client.Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	after := cachedAt(app.ResourceVersion)
	if after.Labels["updated"] != "yes" || !sameBytes(after.Name, before.Name) || !sameBytes(string(after.UID), string(before.UID)) ||
		!sameBytes(after.Spec.Destination.Namespace, before.Spec.Destination.Namespace) {
		t.Errorf("the updated Application's name, UID and destination namespace are copies of their own, not the cached version's (labels %v)", after.Labels)
	}
}
