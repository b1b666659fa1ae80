package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// TestCompactCached checks the manager cache's transform: managed fields gone, the status
// lists encoded (statuspack_test.go), slices cut to their length by internal/compact, whose
// own tests check the sharing of strings (which depends on its table's random seed).
func TestCompactCached(t *testing.T) {
	newApp := func(name string) *navarchv1.Application {
		resources := make([]navarchv1.ResourceStatus, 0, 4)
		for _, kind := range []string{"ConfigMap", "Secret", "Service"} {
			resources = append(resources, navarchv1.ResourceStatus{ResourceRef: navarchv1.ResourceRef{Version: "v1", Kind: string([]byte(kind)), Name: name}})
		}
		return &navarchv1.Application{
			ObjectMeta: metav1.ObjectMeta{Name: name, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "navarch"}}},
			Status: navarchv1.ApplicationStatus{
				Sync:      navarchv1.SyncStatus{Revision: string([]byte("9f1c2e7a5b3d4c6e8f0a1b2c3d4e5f6a7b8c9d0e"))},
				Resources: resources,
			},
		}
	}
	p := &statusPacker{}
	a, b := newApp("one"), newApp("two")
	for _, app := range []*navarchv1.Application{a, b} {
		app.Finalizers = append(make([]string, 0, 4), navarchv1.FinalizerResources)
		cached(t, p, app)
		if name := packedLists(app); name == nil || len(app.ManagedFields) != 1 {
			t.Errorf("%s: managedFields %v; want only the encoded status lists", app.Name, app.ManagedFields)
		}
		if len(app.Finalizers) != 1 || cap(app.Finalizers) != 1 {
			t.Errorf("%s: finalizers of length %d, capacity %d; want 1, 1", app.Name, len(app.Finalizers), cap(app.Finalizers))
		}
	}
	got, err := p.unpacked(b)
	if err != nil || len(got.Status.Resources) != 3 || got.Status.Resources[2].Kind != "Service" || got.ManagedFields != nil {
		t.Errorf("unpacked(two) = %+v, %v; want its three resources back", got, err)
	}
}

// TestCompactCachedOnce checks that the transform leaves an object it has transformed already
// as it is, which informers may pass to it twice (a list streamed by a watch): the first pass
// may have made parts of it blocks that other cached objects share, so a second may write
// nothing. An Application with no status lists to encode is told by its managed fields, gone.
func TestCompactCachedOnce(t *testing.T) {
	p := &statusPacker{}
	for _, obj := range []client.Object{
		&navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "new"}},
		&navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}},
	} {
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
		obj.SetFinalizers(append(make([]string, 0, 4), "navarch.io/resources-finalizer"))
		transform := compactCached(p, nil)
		if _, err := transform(obj); err != nil || obj.GetManagedFields() != nil || cap(obj.GetFinalizers()) != 1 {
			t.Fatalf("%T: first pass: %v, managedFields %v, finalizers' capacity %d; want them dropped, and 1", obj, err, obj.GetManagedFields(), cap(obj.GetFinalizers()))
		}
		obj.SetFinalizers(append(make([]string, 0, 4), obj.GetFinalizers()...))
		if _, err := transform(obj); err != nil || cap(obj.GetFinalizers()) != 4 {
			t.Errorf("%T: a second pass changed the object (finalizers' capacity %d), or failed: %v", obj, cap(obj.GetFinalizers()), err)
		}
	}
}
