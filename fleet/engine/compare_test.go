package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/navarch-io/navarch/fleet/diff"
)

// crd returns a CustomResourceDefinition of apiVersion defining kind in group with scope.
func crd(apiVersion, group, kind, scope string) *unstructured.Unstructured {
	obj := object(apiVersion, "CustomResourceDefinition", "", "crd-"+kind, nil)
	obj.Object["spec"] = map[string]any{
		"group": group,
		"scope": scope,
		"names": map[string]any{"kind": kind, "plural": "things"},
	}
	return obj
}

func TestCRDScopes(t *testing.T) {
	tests := []struct {
		name string
		objs []*unstructured.Unstructured
		want map[schema.GroupKind]string
	}{
		{name: "none", want: map[schema.GroupKind]string{}},
		{
			name: "namespaced and cluster-scoped kinds",
			objs: []*unstructured.Unstructured{
				object("v1", "Namespace", "", "shop", nil),
				crd("apiextensions.k8s.io/v1", "example.com", "Widget", "Namespaced"),
				object("v1", "ConfigMap", "shop", "config", nil),
				crd("apiextensions.k8s.io/v1", "infra.example.com", "Gadget", "Cluster"),
			},
			want: map[schema.GroupKind]string{
				{Group: "example.com", Kind: "Widget"}:       "Namespaced",
				{Group: "infra.example.com", Kind: "Gadget"}: "Cluster",
			},
		},
		{
			name: "v1beta1 CRD",
			objs: []*unstructured.Unstructured{crd("apiextensions.k8s.io/v1beta1", "example.com", "Widget", "Cluster")},
			want: map[schema.GroupKind]string{{Group: "example.com", Kind: "Widget"}: "Cluster"},
		},
		{
			name: "a CustomResourceDefinition kind of another group is not a CRD",
			objs: []*unstructured.Unstructured{crd("example.com/v1", "example.com", "Widget", "Cluster")},
			want: map[schema.GroupKind]string{},
		},
		{
			name: "same kind in two groups",
			objs: []*unstructured.Unstructured{
				crd("apiextensions.k8s.io/v1", "a.example.com", "Widget", "Namespaced"),
				crd("apiextensions.k8s.io/v1", "b.example.com", "Widget", "Cluster"),
			},
			want: map[schema.GroupKind]string{
				{Group: "a.example.com", Kind: "Widget"}: "Namespaced",
				{Group: "b.example.com", Kind: "Widget"}: "Cluster",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := crdScopes(tc.objs); !maps.Equal(got, tc.want) {
				t.Errorf("crdScopes = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTransient(t *testing.T) {
	configMaps := schema.GroupResource{Resource: "configmaps"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm",
		field.ErrorList{field.Invalid(field.NewPath("data"), "x", "bad")})
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "invalid", err: invalid, want: false},
		{name: "bad request", err: apierrors.NewBadRequest("no"), want: false},
		{name: "not found", err: apierrors.NewNotFound(configMaps, "cm"), want: false},
		{name: "forbidden", err: apierrors.NewForbidden(configMaps, "cm", errors.New("RBAC")), want: false},
		{name: "already exists", err: apierrors.NewAlreadyExists(configMaps, "cm"), want: false},
		{name: "wrapped not found", err: fmt.Errorf("dry run: %w", apierrors.NewNotFound(configMaps, "cm")), want: false},
		{name: "internal error", err: apierrors.NewInternalError(errors.New("etcd")), want: true},
		{name: "service unavailable", err: apierrors.NewServiceUnavailable("starting"), want: true},
		{name: "too many requests", err: apierrors.NewTooManyRequests("slow down", 1), want: true},
		{name: "timeout", err: apierrors.NewTimeoutError("took too long", 1), want: true},
		{name: "server timeout", err: apierrors.NewServerTimeout(configMaps, "create", 1), want: true},
		{name: "wrapped service unavailable", err: fmt.Errorf("apply: %w", apierrors.NewServiceUnavailable("x")), want: true},
		{name: "status without a code", err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Message: "?"}}, want: true},
		{name: "connection refused", err: errors.New("dial tcp: connection refused"), want: true},
		{
			name: "wrapped url error",
			err:  fmt.Errorf("get: %w", &url.Error{Op: "Get", URL: "https://10.0.0.1:6443/api", Err: errors.New("i/o timeout")}),
			want: true,
		},
		{name: "deadline exceeded", err: context.DeadlineExceeded, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := transient(tc.err); got != tc.want {
				t.Errorf("transient(%v) = %t, want %t", tc.err, got, tc.want)
			}
		})
	}
}

func TestIsMissingNamespace(t *testing.T) {
	namespaces := schema.GroupResource{Resource: "namespaces"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil"},
		{name: "namespace not found", err: apierrors.NewNotFound(namespaces, "x"), want: true},
		{name: "wrapped namespace not found", err: fmt.Errorf("dry run: %w", apierrors.NewNotFound(namespaces, "x")), want: true},
		{name: "configmap not found", err: apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "x")},
		{name: "namespace forbidden", err: apierrors.NewForbidden(namespaces, "x", errors.New("RBAC"))},
		{name: "namespace being deleted", err: apierrors.NewConflict(namespaces, "x", errors.New("terminating"))},
		{name: "not found without details", err: &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound,
		}}},
		{name: "plain error naming namespaces", err: errors.New(`namespaces "x" not found`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isMissingNamespace(tc.err); got != tc.want {
				t.Errorf("isMissingNamespace(%v) = %t, want %t", tc.err, got, tc.want)
			}
		})
	}
}

func TestDryRunCache(t *testing.T) {
	const key = "prod//ConfigMap/shop/config"
	stored := diff.Result{Paths: []string{"/data/a"}, Truncated: true}
	tests := []struct {
		name                       string
		key, desired, live, ignore string
		hit                        bool
	}{
		{name: "same key and hashes", key: key, desired: "d1", live: "l1", ignore: "i1", hit: true},
		{name: "desired changed", key: key, desired: "d2", live: "l1", ignore: "i1"},
		{name: "live changed", key: key, desired: "d1", live: "l2", ignore: "i1"},
		{name: "ignore rules changed", key: key, desired: "d1", live: "l1", ignore: "i2"},
		{name: "ignore rules removed", key: key, desired: "d1", live: "l1", ignore: ""},
		{name: "the same bytes split otherwise", key: key, desired: "d1l", live: "1", ignore: "i1"},
		{name: "other object", key: "prod//ConfigMap/shop/other", desired: "d1", live: "l1", ignore: "i1"},
		{name: "same object on another cluster", key: "staging//ConfigMap/shop/config", desired: "d1", live: "l1", ignore: "i1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c dryRunCache
			c.put(key, "d1", "l1", "i1", stored)
			got, ok := c.get(tc.key, tc.desired, tc.live, tc.ignore)
			if ok != tc.hit {
				t.Fatalf("get hit = %t, want %t", ok, tc.hit)
			}
			want := diff.Result{}
			if tc.hit {
				want = stored
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("get = %+v, want %+v", got, want)
			}
		})
	}

	t.Run("empty cache", func(t *testing.T) {
		var c dryRunCache
		if _, ok := c.get(key, "", "", ""); ok {
			t.Errorf("get on an empty cache hit")
		}
		c.forget(key) // must not panic
	})

	t.Run("put replaces the entry", func(t *testing.T) {
		var c dryRunCache
		c.put(key, "d1", "l1", "", diff.Result{Paths: []string{"/data/a"}})
		c.put(key, "d2", "l2", "", diff.Result{Equal: true})
		if _, ok := c.get(key, "d1", "l1", ""); ok {
			t.Errorf("the replaced entry still hits")
		}
		got, ok := c.get(key, "d2", "l2", "")
		if !ok || !got.Equal {
			t.Errorf("get = %+v, %t; want the new entry", got, ok)
		}
	})

	t.Run("forget removes only its key", func(t *testing.T) {
		var c dryRunCache
		c.put(key, "d", "l", "", diff.Result{Equal: true})
		c.put("other", "d", "l", "", diff.Result{Equal: true})
		c.forget(key)
		if _, ok := c.get(key, "d", "l", ""); ok {
			t.Errorf("a forgotten entry hits")
		}
		if _, ok := c.get("other", "d", "l", ""); !ok {
			t.Errorf("forget removed another key's entry")
		}
	})

	t.Run("each caller gets its own paths", func(t *testing.T) {
		var c dryRunCache
		c.put(key, "d", "l", "", diff.Result{Paths: []string{"/data/a", "/data/b"}, Truncated: true})
		first, _ := c.get(key, "d", "l", "")
		first.Paths[0] = "/changed"
		second, _ := c.get(key, "d", "l", "")
		if want := (diff.Result{Paths: []string{"/data/a", "/data/b"}, Truncated: true}); !reflect.DeepEqual(second, want) {
			t.Errorf("after a caller changed its paths, get = %+v; want %+v", second, want)
		}
		// The common results are one value, whatever the number of entries.
		c.put("equal", "d", "l", "", diff.Result{Equal: true})
		c.put("absent", "d", "l", "", diff.Result{})
		if c.entries[keyHash("equal")].result != &resultEqual || c.entries[keyHash("absent")].result != &resultZero {
			t.Errorf("an equal or absent result was stored on its own")
		}
	})
}
