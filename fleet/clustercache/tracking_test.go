package clustercache_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

var guestbook = types.NamespacedName{Namespace: "argocd", Name: "guestbook"}

func object(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

// tracked returns obj carrying the tracking id value.
func tracked(obj *unstructured.Unstructured, value string) *unstructured.Unstructured {
	obj.SetAnnotations(map[string]string{navarchv1.AnnotationTrackingID: value, "example.com/other": "x"})
	return obj
}

func TestTrackingID(t *testing.T) {
	tests := []struct {
		name string
		app  types.NamespacedName
		obj  *unstructured.Unstructured
		want string
	}{
		{
			name: "namespaced object of a named group",
			app:  guestbook,
			obj:  object("apps/v1", "Deployment", "web", "frontend"),
			want: "argocd_guestbook:apps/Deployment:web/frontend",
		},
		{
			name: "namespaced core object",
			app:  guestbook,
			obj:  object("v1", "ConfigMap", "default", "settings"),
			want: "argocd_guestbook:/ConfigMap:default/settings",
		},
		{
			name: "cluster-scoped object of a named group",
			app:  types.NamespacedName{Namespace: "team-a", Name: "rbac"},
			obj:  object("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),
			want: "team-a_rbac:rbac.authorization.k8s.io/ClusterRole:/reader",
		},
		{
			name: "cluster-scoped core object",
			app:  guestbook,
			obj:  object("v1", "Namespace", "", "web"),
			want: "argocd_guestbook:/Namespace:/web",
		},
		{
			name: "custom resource",
			app:  guestbook,
			obj:  object("example.com/v1alpha1", "Widget", "web", "w-1"),
			want: "argocd_guestbook:example.com/Widget:web/w-1",
		},
		{
			name: "the version is not part of the id",
			app:  guestbook,
			obj:  object("apps/v1beta2", "Deployment", "web", "frontend"),
			want: "argocd_guestbook:apps/Deployment:web/frontend",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := clustercache.TrackingID(tc.app, tc.obj)
			if id != tc.want {
				t.Errorf("TrackingID = %q, want %q", id, tc.want)
			}
			app, ok := clustercache.TrackedBy(tracked(tc.obj, id))
			if !ok || app != tc.app {
				t.Errorf("TrackedBy(object carrying %q) = %v, %t; want %v, true", id, app, ok, tc.app)
			}
		})
	}
}

func TestTrackedBy(t *testing.T) {
	frontend := func() *unstructured.Unstructured { return object("apps/v1", "Deployment", "web", "frontend") }
	id := clustercache.TrackingID(guestbook, frontend())
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want types.NamespacedName // zero: not tracked
	}{
		{name: "own id", obj: tracked(frontend(), id), want: guestbook},
		{
			name: "another Application's id",
			obj:  tracked(frontend(), "prod_billing:apps/Deployment:web/frontend"),
			want: types.NamespacedName{Namespace: "prod", Name: "billing"},
		},
		{name: "same object read at another version", obj: tracked(object("apps/v1beta1", "Deployment", "web", "frontend"), id), want: guestbook},
		{name: "nil object"},
		{name: "no annotations", obj: frontend()},
		{name: "other annotations only", obj: func() *unstructured.Unstructured {
			o := frontend()
			o.SetAnnotations(map[string]string{"navarch.io/sync-wave": "1"})
			return o
		}()},
		{name: "empty value", obj: tracked(frontend(), "")},
		{name: "no colon", obj: tracked(frontend(), "argocd_guestbook")},
		{name: "no underscore", obj: tracked(frontend(), "argocdguestbook:apps/Deployment:web/frontend")},
		{name: "empty app namespace", obj: tracked(frontend(), "_guestbook:apps/Deployment:web/frontend")},
		{name: "empty app name", obj: tracked(frontend(), "argocd_:apps/Deployment:web/frontend")},
		{name: "missing object coordinates", obj: tracked(frontend(), "argocd_guestbook:apps/Deployment")},
		{name: "trailing garbage", obj: tracked(frontend(), id+"/extra")},
		{name: "argo CD style id", obj: tracked(frontend(), "guestbook:apps/Deployment:web/frontend")},
		{name: "copied to another name", obj: tracked(object("apps/v1", "Deployment", "web", "frontend-copy"), id)},
		{name: "copied to another namespace", obj: tracked(object("apps/v1", "Deployment", "staging", "frontend"), id)},
		{name: "copied to another kind", obj: tracked(object("apps/v1", "StatefulSet", "web", "frontend"), id)},
		{name: "copied to another group", obj: tracked(object("example.com/v1", "Deployment", "web", "frontend"), id)},
		{name: "copied to a cluster-scoped object", obj: tracked(object("apps/v1", "Deployment", "", "frontend"), id)},
		{
			name: "a namespaced copy of a cluster-scoped object",
			obj: tracked(object("v1", "Namespace", "web", "frontend"),
				clustercache.TrackingID(guestbook, object("v1", "Namespace", "", "frontend"))),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app, ok := clustercache.TrackedBy(tc.obj)
			wantOK := tc.want != types.NamespacedName{}
			if ok != wantOK || app != tc.want {
				t.Errorf("TrackedBy = %v, %t; want %v, %t", app, ok, tc.want, wantOK)
			}
		})
	}
}
