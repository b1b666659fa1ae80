package render_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
)

// Render an overlay that builds on a base in a sibling directory, with extra options from the
// Application. In the controller, repo is the snapshot of the Application's revision.
func ExampleRender() {
	repo := fstest.MapFS{
		"base/kustomization.yaml": {Data: []byte("resources: [deploy.yaml]\n")},
		"base/deploy.yaml": {Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook
spec:
  selector:
    matchLabels: {app: guestbook}
  template:
    metadata:
      labels: {app: guestbook}
    spec:
      containers:
      - name: guestbook
        image: nginx:1.24
`)},
		"envs/prod/kustomization.yaml": {Data: []byte("resources: [../../base]\nnamespace: prod\n")},
	}

	objs, err := render.Render(context.Background(), repo, navarchv1.ApplicationSource{
		RepoURL: "https://git.example.com/apps.git",
		Path:    "envs/prod",
		Kustomize: &navarchv1.ApplicationSourceKustomize{
			NamePrefix: "web-",
			Images:     []string{"nginx=nginx:1.25"},
		},
	}, render.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, obj := range objs {
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		image, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
		fmt.Println(obj.GetKind(), obj.GetNamespace(), obj.GetName(), image)
	}

	// Errors name the file and the document.
	_, err = render.Render(context.Background(), fstest.MapFS{
		"apps/web/deploy.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n")},
	}, navarchv1.ApplicationSource{Path: "apps/web"}, render.Options{})
	fmt.Println(err)

	// Output:
	// Deployment prod web-guestbook nginx:1.25
	// apps/web/deploy.yaml: document 2: missing kind
}
