package helm_test

import (
	"context"
	"fmt"
	"testing/fstest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/helm"
	"github.com/navarch-io/navarch/fleet/render"
)

func ExampleRenderer_RenderChart() {
	repo := fstest.MapFS{
		"charts/web/Chart.yaml":  {Data: []byte("apiVersion: v2\nname: web\nversion: 1.0.0\n")},
		"charts/web/values.yaml": {Data: []byte("replicas: 1\n")},
		"charts/web/templates/deployment.yaml": {Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
`)},
		"charts/web/templates/service.yaml": {Data: []byte(`apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
`)},
		"charts/web/templates/NOTES.txt": {Data: []byte("Thanks for installing {{ .Release.Name }}.\n")},
	}
	r := helm.New(helm.Options{})
	objs, err := r.RenderChart(context.Background(), render.HelmRequest{
		Chart: render.HelmChart{FS: repo, Dir: "charts/web", Source: "charts/web"},
		Options: &navarchv1.ApplicationSourceHelm{
			Parameters: []navarchv1.HelmParameter{{Name: "replicas", Value: "3"}},
		},
		ReleaseName:  "shop",
		Namespace:    "shop",
		Capabilities: render.Capabilities{KubeVersion: "v1.37.2"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetKind(), o.GetName(), o.Object["spec"])
	}
	// Output:
	// Service shop <nil>
	// Deployment shop map[replicas:3]
}
