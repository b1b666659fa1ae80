package render_test

import (
	"context"
	"fmt"
	"io/fs"
	"testing/fstest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/render"
)

// Render an overlay whose base lives in another Git repository. Options.Remote gives the
// snapshot of that repository at the ref; in the controller, it reads it from Git.
func ExampleRender_remoteBase() {
	platform := fstest.MapFS{
		"web/kustomization.yaml": {Data: []byte("resources: [service.yaml]\n")},
		"web/service.yaml":       {Data: []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n")},
	}
	remote := func(_ context.Context, repoURL, ref string) (fs.FS, error) {
		if repoURL == "https://github.com/org/platform.git" && ref == "v1.2.0" {
			return platform, nil
		}
		return nil, fmt.Errorf("no ref %q in %s", ref, repoURL)
	}
	repo := fstest.MapFS{
		"envs/prod/kustomization.yaml": {Data: []byte("resources:\n- github.com/org/platform//web?ref=v1.2.0\nnamespace: prod\n")},
		"envs/next/kustomization.yaml": {Data: []byte("resources:\n- github.com/org/platform//web?ref=v2.0.0\n")},
	}

	objs, err := render.Render(context.Background(), repo, navarchv1.ApplicationSource{Path: "envs/prod"}, render.Options{Remote: remote})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, obj := range objs {
		fmt.Println(obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}

	// A base that cannot be fetched is an error of the kustomization that names it.
	_, err = render.Render(context.Background(), repo, navarchv1.ApplicationSource{Path: "envs/next"}, render.Options{Remote: remote})
	fmt.Println(err)

	// Output:
	// Service prod web
	// envs/next/kustomization.yaml: resources[0] "github.com/org/platform//web?ref=v2.0.0": no ref "v2.0.0" in https://github.com/org/platform.git
}
