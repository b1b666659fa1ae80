package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
)

// fakeCluster is an in-memory destination cluster for the engine's unit tests: the kinds it
// serves, its objects, and what was done to them. Server-side applies store the object as
// sent; dry runs return it with the stored object's resourceVersion. It does not validate.
type fakeCluster struct {
	served  map[schema.GroupKind]*meta.RESTMapping
	objects map[string]*unstructured.Unstructured // by objectKey
	// refuse makes applies and dry runs of the named objects ("Kind name") fail.
	refuse map[string]error
	// applied lists the objects applied (not dry-run), "Kind name", in order.
	applied []string
	// deleted lists the objects deleted, "Kind name", in order.
	deleted []string
	// dryRuns counts the dry runs served.
	dryRuns int
	version int
	// watchCache, when set, is what Live returns instead of the objects: a watch that lags,
	// e.g. after the cluster was unreachable.
	watchCache map[string]*unstructured.Unstructured
	// namespaces, when set, is the cluster's watch of its namespaces (NamespaceExists), which
	// need not agree with the objects; nil is a cluster without one.
	namespaces map[string]bool
	// gets lists the objects read with a GET, "Kind name", in order.
	gets []string
}

func (c *fakeCluster) NamespaceExists(name string) (exists, known bool) {
	return c.namespaces[name], c.namespaces != nil
}

// freezeWatch makes Live return the objects as they are now, whatever happens next.
func (c *fakeCluster) freezeWatch() {
	c.watchCache = map[string]*unstructured.Unstructured{}
	for k, o := range c.objects {
		c.watchCache[k] = o.DeepCopy()
	}
}

func newFakeCluster() *fakeCluster {
	c := &fakeCluster{served: map[schema.GroupKind]*meta.RESTMapping{}, objects: map[string]*unstructured.Unstructured{}, refuse: map[string]error{}}
	for _, k := range []struct {
		group, version, kind, resource string
		namespaced                     bool
	}{
		{"", "v1", "Namespace", "namespaces", false},
		{"", "v1", "ConfigMap", "configmaps", true},
		{"", "v1", "Service", "services", true},
		{"apps", "v1", "Deployment", "deployments", true},
		{"batch", "v1", "Job", "jobs", true},
		{"apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false},
	} {
		c.serve(k.group, k.version, k.kind, k.resource, k.namespaced)
	}
	return c
}

// serve makes the cluster serve a kind, as an established CRD does.
func (c *fakeCluster) serve(group, version, kind, resource string, namespaced bool) {
	scope := meta.RESTScopeRoot
	if namespaced {
		scope = meta.RESTScopeNamespace
	}
	c.served[schema.GroupKind{Group: group, Kind: kind}] = &meta.RESTMapping{
		Resource:         schema.GroupVersionResource{Group: group, Version: version, Resource: resource},
		GroupVersionKind: schema.GroupVersionKind{Group: group, Version: version, Kind: kind},
		Scope:            scope,
	}
}

func (c *fakeCluster) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	if m, ok := c.served[gvk.GroupKind()]; ok {
		return m, nil
	}
	return nil, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
}

func (c *fakeCluster) Resource(m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	return &fakeResource{c: c, m: m, ns: ns}
}

func (c *fakeCluster) Capabilities() (render.Capabilities, error) {
	return render.Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1", "apps/v1"}}, nil
}

func (c *fakeCluster) Live(_ context.Context, m *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error) {
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	if c.watchCache != nil {
		return c.watchCache[objectKey(m.Resource.GroupResource(), ns, name)], nil
	}
	return c.objects[objectKey(m.Resource.GroupResource(), ns, name)], nil
}

// object returns a stored object by kind, namespace and name.
func (c *fakeCluster) object(kind, ns, name string) *unstructured.Unstructured {
	for _, o := range c.objects {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	return nil
}

// add stores objects as if they had been created before the test.
func (c *fakeCluster) add(t *testing.T, manifests ...string) {
	t.Helper()
	for _, m := range manifests {
		obj := parse(t, m)
		mapping, err := c.Mapping(obj.GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		c.store(mapping, obj)
	}
}

func (c *fakeCluster) store(m *meta.RESTMapping, obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	c.version++
	obj.SetResourceVersion(fmt.Sprint(c.version))
	key := objectKey(m.Resource.GroupResource(), obj.GetNamespace(), obj.GetName())
	if old, ok := c.objects[key]; ok {
		obj.SetUID(old.GetUID())
	} else {
		obj.SetUID(types.UID(fmt.Sprintf("uid-%d", c.version)))
	}
	c.objects[key] = obj
	return obj.DeepCopy()
}

func objectKey(gr schema.GroupResource, ns, name string) string {
	return gr.String() + "/" + ns + "/" + name
}

// fakeResource implements what the engine uses of a dynamic resource client; the other
// methods panic.
type fakeResource struct {
	dynamic.ResourceInterface
	c  *fakeCluster
	m  *meta.RESTMapping
	ns string
}

func (r *fakeResource) key(name string) string {
	return objectKey(r.m.Resource.GroupResource(), r.ns, name)
}

func (r *fakeResource) notFound(name string) error {
	return apierrors.NewNotFound(r.m.Resource.GroupResource(), name)
}

func (r *fakeResource) Get(_ context.Context, name string, _ metav1.GetOptions, _ ...string) (*unstructured.Unstructured, error) {
	r.c.gets = append(r.c.gets, r.m.GroupVersionKind.Kind+" "+name)
	if obj, ok := r.c.objects[r.key(name)]; ok {
		return obj.DeepCopy(), nil
	}
	return nil, r.notFound(name)
}

func (r *fakeResource) Create(_ context.Context, obj *unstructured.Unstructured, _ metav1.CreateOptions, _ ...string) (*unstructured.Unstructured, error) {
	if _, ok := r.c.objects[r.key(obj.GetName())]; ok {
		return nil, apierrors.NewAlreadyExists(r.m.Resource.GroupResource(), obj.GetName())
	}
	r.c.applied = append(r.c.applied, obj.GetKind()+" "+obj.GetName())
	return r.c.store(r.m, obj), nil
}

func (r *fakeResource) Patch(_ context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, _ ...string) (*unstructured.Unstructured, error) {
	live, exists := r.c.objects[r.key(name)]
	if pt == types.JSONPatchType {
		// The engine sends JSON patches only to release the hook finalizer.
		if !exists {
			return nil, r.notFound(name)
		}
		live.SetFinalizers(slices.DeleteFunc(live.GetFinalizers(), func(f string) bool { return f == navarchv1.FinalizerHook }))
		return live.DeepCopy(), nil
	}
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &obj.Object); err != nil {
		return nil, err
	}
	if err := r.c.refuse[obj.GetKind()+" "+name]; err != nil {
		return nil, err
	}
	if len(opts.DryRun) > 0 {
		r.c.dryRuns++
		if exists {
			obj.SetResourceVersion(live.GetResourceVersion())
			obj.SetUID(live.GetUID())
		}
		return obj, nil
	}
	r.c.applied = append(r.c.applied, obj.GetKind()+" "+name)
	return r.c.store(r.m, obj), nil
}

func (r *fakeResource) Delete(_ context.Context, name string, _ metav1.DeleteOptions, _ ...string) error {
	obj, ok := r.c.objects[r.key(name)]
	if !ok {
		return r.notFound(name)
	}
	r.c.deleted = append(r.c.deleted, obj.GetKind()+" "+name)
	delete(r.c.objects, r.key(name))
	return nil
}

func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(strings.TrimSpace(manifest)), &obj.Object); err != nil {
		t.Fatalf("parse %q: %v", manifest, err)
	}
	return obj
}
