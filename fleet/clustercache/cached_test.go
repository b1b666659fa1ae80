package clustercache

import (
	"encoding/json"
	"reflect"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// The watch caches keep an object without managedFields and last-applied-configuration, as
// packed JSON that decodes back to everything else (integers stay integers), under the key the
// informer files it by; each decode is a copy of its own, and compacting twice is harmless.
func TestTheWatchCachesKeepAnObjectCompactAndGiveItBackWhole(t *testing.T) {
	app := types.NamespacedName{Namespace: "apps", Name: "web"}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata": map[string]any{
			"name": "web", "namespace": "shop", "resourceVersion": "42",
			"labels": map[string]any{LabelManaged: "true"},
			"annotations": map[string]any{
				lastApplied: `{"kind":"Service"}`,
				"team":      "payments",
			},
			"managedFields": []any{map[string]any{"manager": "navarch", "operation": "Apply"}},
		},
		"spec": map[string]any{
			"ports":    []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}},
			"selector": map[string]any{"app": "web"},
		},
	}}
	u.SetAnnotations(map[string]string{lastApplied: `{"kind":"Service"}`, "team": "payments", navarchv1.AnnotationTrackingID: TrackingID(app, u)})

	p := new(packer)
	cached, err := p.compact(u.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	o, ok := cached.(*cachedObject)
	if !ok {
		t.Fatalf("the cache keeps a %T", cached)
	}
	if !o.tracked || o.app() != app {
		t.Errorf("tracked by %v (%t), want %v", o.app(), o.tracked, app)
	}
	if key, err := toolscache.MetaNamespaceKeyFunc(o); err != nil || key != "shop/web" {
		t.Errorf("key %q, %v; want shop/web", key, err)
	}
	if o.resourceVersion() != "42" {
		t.Errorf("resourceVersion %q, want 42", o.resourceVersion())
	}
	if size := unsafe.Sizeof(*o); size > 32 {
		t.Errorf("a cached object takes %d bytes besides its block; want at most 32", size)
	}
	// The names live in the packed JSON's block, not in strings of their own.
	start := uintptr(unsafe.Pointer(unsafe.SliceData(o.encoding())))
	end := start + uintptr(len(o.encoding()))
	for _, s := range []string{o.name(), o.namespace(), o.resourceVersion(), o.app().Namespace, o.app().Name} {
		at := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		if at < end || at+uintptr(len(s)) > end+uintptr(len("webshop42appsweb")) {
			t.Errorf("%q is not packed after the JSON", s)
		}
	}
	if again, _ := p.compact(o); again != o {
		t.Error("compacting a compacted object changed it")
	}

	got, err := o.object()
	if err != nil {
		t.Fatal(err)
	}
	want := u.DeepCopy()
	unstructured.RemoveNestedField(want.Object, "metadata", "managedFields")
	ann := want.GetAnnotations()
	delete(ann, lastApplied)
	want.SetAnnotations(ann)
	if !reflect.DeepEqual(got.Object, want.Object) {
		t.Errorf("decoded\n%v\nwant\n%v", got.Object, want.Object)
	}
	if port, _, _ := unstructured.NestedSlice(got.Object, "spec", "ports"); reflect.TypeOf(port[0].(map[string]any)["port"]) != reflect.TypeFor[int64]() {
		t.Errorf("port decoded as %T, want int64", port[0].(map[string]any)["port"])
	}
	got.SetLabels(map[string]string{"changed": "by a caller"})
	if second, _ := o.object(); second.GetLabels()[LabelManaged] != "true" {
		t.Error("a caller's change to a decoded object reached the cache")
	}

	untracked := &unstructured.Unstructured{}
	untracked.SetAPIVersion("v1")
	untracked.SetKind("ConfigMap")
	untracked.SetName("loose")
	untracked.SetNamespace("shop")
	if c, _ := p.compact(untracked); c.(*cachedObject).tracked {
		t.Error("an object without a tracking id counts as tracked")
	}
	var _ metav1.ObjectMetaAccessor = o
}

// Each resource type's cache encodes its objects against the first one it kept, so an object
// like it keeps a fraction of its JSON, and still decodes whole.
func TestObjectsOfATypeArePackedAgainstTheFirst(t *testing.T) {
	service := func(ns, uid, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1",
			"kind":       "Service",
			"metadata": map[string]any{
				"name": "web", "namespace": ns, "uid": uid, "resourceVersion": rv,
				"creationTimestamp": "2026-12-04T05:00:00Z",
				"labels":            map[string]any{LabelManaged: "true"},
			},
			"spec": map[string]any{
				"clusterIP": "10.96.0.10", "clusterIPs": []any{"10.96.0.10"}, "internalTrafficPolicy": "Cluster",
				"ipFamilies": []any{"IPv4"}, "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None", "type": "ClusterIP",
				"ports":    []any{map[string]any{"port": int64(80), "protocol": "TCP", "targetPort": int64(80)}},
				"selector": map[string]any{"app": "web"},
			},
			"status": map[string]any{"loadBalancer": map[string]any{}},
		}}
		u.SetAnnotations(map[string]string{navarchv1.AnnotationTrackingID: TrackingID(types.NamespacedName{Namespace: "apps", Name: ns}, u)})
		return u
	}
	p := new(packer)
	if _, err := p.compact(service("c001-e001", "0b6f1c2e-8a1d-4c55-9f51-8b1d1f8a8a11", "1001")); err != nil {
		t.Fatal(err)
	}
	second := service("c002-e017", "71d2a9f0-33be-4e0a-b6c7-5e2f90d1c4a8", "1002")
	want, err := json.Marshal(second.Object)
	if err != nil {
		t.Fatal(err)
	}
	cached, err := p.compact(second.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	o := cached.(*cachedObject)
	if len(o.encoding())*3 > len(want) {
		t.Errorf("the second Service keeps %d bytes for %d of JSON; want under a third", len(o.encoding()), len(want))
	}
	got, err := o.object()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Object, second.Object) {
		t.Errorf("decoded\n%v\nwant\n%v", got.Object, second.Object)
	}
}
