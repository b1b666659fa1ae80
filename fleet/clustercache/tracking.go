package clustercache

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// TrackingID is the value of the navarch.io/tracking-id annotation navarch puts on obj when
// Application app applies it: `<app namespace>_<app name>:<group>/<kind>:<namespace>/<name>`.
// Namespaces and names cannot contain `_`, so the value parses back unambiguously, and the
// object's own coordinates in it expose copies (an object copied elsewhere keeps the value).
func TrackingID(app types.NamespacedName, obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	return app.Namespace + "_" + app.Name + ":" + gvk.Group + "/" + gvk.Kind + ":" + obj.GetNamespace() + "/" + obj.GetName()
}

// TrackedBy returns the Application that tracks obj, if its tracking-id annotation is
// well-formed and describes obj itself.
func TrackedBy(obj *unstructured.Unstructured) (types.NamespacedName, bool) {
	if obj == nil {
		return types.NamespacedName{}, false
	}
	id := obj.GetAnnotations()[navarchv1.AnnotationTrackingID]
	appPart, rest, ok := strings.Cut(id, ":")
	if !ok {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(appPart, "_")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	app := types.NamespacedName{Namespace: ns, Name: name}
	if rest != strings.TrimPrefix(TrackingID(app, obj), appPart+":") {
		return types.NamespacedName{}, false
	}
	return app, true
}
