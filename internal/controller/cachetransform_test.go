package controller

import (
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// TestCompactCached checks the manager cache's transform: managed fields gone, slices cut to
// their length, equal strings of two Applications sharing one copy.
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
	a, b := newApp("one"), newApp("two")
	for _, app := range []*navarchv1.Application{a, b} {
		out, err := compactCached(app)
		if err != nil || out != any(app) {
			t.Fatalf("compactCached(%s) = %v, %v; want the same object and no error", app.Name, out, err)
		}
		if app.ManagedFields != nil {
			t.Errorf("%s: managedFields kept: %v", app.Name, app.ManagedFields)
		}
		if len(app.Status.Resources) != 3 || cap(app.Status.Resources) != 3 {
			t.Errorf("%s: status.resources of length %d, capacity %d; want 3, 3", app.Name, len(app.Status.Resources), cap(app.Status.Resources))
		}
	}
	if unsafe.StringData(a.Status.Sync.Revision) != unsafe.StringData(b.Status.Sync.Revision) ||
		unsafe.StringData(a.Status.Resources[2].Kind) != unsafe.StringData(b.Status.Resources[2].Kind) {
		t.Error("the two Applications' revisions and kinds are separate copies")
	}
}
