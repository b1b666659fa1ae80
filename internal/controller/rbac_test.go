package controller

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

// TestGeneratedRBACIsEnoughAndNoMore installs config/rbac as `kubectl apply -k config/default`
// would, then acts as the controller's ServiceAccount: everything a pass does is allowed, and
// Secrets outside the controller's namespace are not readable.
func TestGeneratedRBACIsEnoughAndNoMore(t *testing.T) {
	ctx := context.Background()
	for _, f := range []string{"service_account.yaml", "role.yaml", "role_binding.yaml"} {
		for _, obj := range readManifests(t, filepath.Join("..", "..", "config", "rbac", f)) {
			if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("apply %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	cfg := env.Management.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:navarch-system:navarch-controller"}
	as, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}

	ns := testenv.Namespace(t, env.Client)
	set := applyAppSet(t, ns, listAppSet("a"))
	allowed := []struct {
		what string
		do   func() error
	}{
		{"list ApplicationSets", func() error { return as.List(ctx, &navarchv1.ApplicationSetList{}) }},
		{"patch ApplicationSet status", func() error {
			s := set.DeepCopy()
			return as.Status().Patch(ctx, s, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"applicationCount":1}}`)))
		}},
		{"clear an ApplicationSet annotation", func() error {
			return as.Patch(ctx, set.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"x":null}}}`)))
		}},
		{"create an Application", func() error {
			app := &navarchv1.Application{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rbac-probe"},
				Spec: navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{RepoURL: "https://x"},
					Destination: navarchv1.ApplicationDestination{Name: "in-cluster"}},
			}
			if err := as.Create(ctx, app); err != nil {
				return err
			}
			app.Spec.Source.Path = "p"
			if err := as.Update(ctx, app); err != nil {
				return err
			}
			return as.Delete(ctx, app)
		}},
		{"list Clusters", func() error { return as.List(ctx, &navarchv1.ClusterList{}) }},
		{"list repository Secrets in navarch-system", func() error {
			return as.List(ctx, &corev1.SecretList{}, client.InNamespace("navarch-system"))
		}},
	}
	for _, a := range allowed {
		if err := a.do(); err != nil {
			t.Errorf("%s: the generated RBAC does not allow it: %v", a.what, err)
		}
	}
	if err := as.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Errorf("reading Secrets outside navarch-system: got %v, want Forbidden", err)
	}
	if err := as.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting a namespace: got %v, want Forbidden", err)
	}
}

func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}
