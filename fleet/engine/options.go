package engine

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// syncOptions are parsed `Name=value` sync options: the Application's, overridden by the
// operation's, overridden per resource by its sync-options annotation.
type syncOptions map[string]string

func parseSyncOptions(lists ...[]navarchv1.SyncOption) syncOptions {
	opts := syncOptions{}
	for _, list := range lists {
		for _, o := range list {
			name, value, _ := strings.Cut(string(o), "=")
			opts[name] = value
		}
	}
	return opts
}

// withAnnotation returns opts overridden by obj's navarch.io/sync-options (or Argo CD's)
// annotation, a comma-separated list like `Prune=false,Replace=true`.
func (o syncOptions) withAnnotation(obj *unstructured.Unstructured) syncOptions {
	value := annotation(obj, navarchv1.AnnotationSyncOptions, navarchv1.ArgoAnnotationSyncOptions)
	if value == "" {
		return o
	}
	out := syncOptions{}
	for k, v := range o {
		out[k] = v
	}
	for item := range strings.SplitSeq(value, ",") {
		name, v, _ := strings.Cut(item, "=")
		if name = strings.TrimSpace(name); name != "" {
			out[name] = strings.TrimSpace(v)
		}
	}
	return out
}

func (o syncOptions) on(name string) bool { return strings.EqualFold(o[name], "true") }

func (o syncOptions) off(name string) bool { return strings.EqualFold(o[name], "false") }

// annotation returns the first of the named annotations obj carries.
func annotation(obj *unstructured.Unstructured, names ...string) string {
	if obj == nil {
		return ""
	}
	a := obj.GetAnnotations()
	for _, n := range names {
		if v, ok := a[n]; ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
