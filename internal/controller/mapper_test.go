package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scheme"
)

// countingMapper counts the RESTMapping calls that reach it.
type countingMapper struct {
	meta.RESTMapper
	calls int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.calls++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// The mapping of a kind compiled into the binary is asked for once, then answered from
// memory; a kind the binary does not know (a CRD's), or a lookup without its version, is asked
// for every time, so that a CRD that changes is seen.
func TestTheMappingsOfCompiledKindsAreAskedForOnce(t *testing.T) {
	app := navarchv1.GroupVersion.WithKind("Application")
	secret := corev1.SchemeGroupVersion.WithKind("Secret")
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	known := meta.NewDefaultRESTMapper([]schema.GroupVersion{app.GroupVersion(), secret.GroupVersion(), widget.GroupVersion()})
	known.Add(app, meta.RESTScopeNamespace)
	known.Add(secret, meta.RESTScopeNamespace)
	known.Add(widget, meta.RESTScopeRoot)
	delegate := &countingMapper{RESTMapper: known}
	m := &compiledKindsMapper{RESTMapper: delegate, scheme: scheme.New()}

	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want int // calls that reach the delegate in three lookups
	}{{app, 1}, {secret, 1}, {widget, 3}} {
		delegate.calls = 0
		for range 3 {
			got, err := m.RESTMapping(tc.gvk.GroupKind(), tc.gvk.Version)
			if err != nil {
				t.Fatalf("%s: %v", tc.gvk, err)
			}
			if got.GroupVersionKind != tc.gvk {
				t.Fatalf("%s: mapped to %s", tc.gvk, got.GroupVersionKind)
			}
		}
		if delegate.calls != tc.want {
			t.Errorf("%s: %d lookups reached the discovery mapper, want %d", tc.gvk, delegate.calls, tc.want)
		}
	}

	delegate.calls = 0
	for range 2 {
		if _, err := m.RESTMapping(app.GroupKind()); err != nil {
			t.Fatal(err)
		}
	}
	if delegate.calls != 2 {
		t.Errorf("lookups without a version: %d reached the discovery mapper, want 2", delegate.calls)
	}
	if _, err := m.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Gadget"}, "v1"); !meta.IsNoMatchError(err) {
		t.Errorf("an unknown kind: %v, want a no-match error", err)
	}
}
