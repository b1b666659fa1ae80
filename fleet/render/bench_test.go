package render

import (
	"fmt"
	"testing"
	"testing/fstest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// BenchmarkRenderDirectory renders a directory of 50 files of 4 documents each.
func BenchmarkRenderDirectory(b *testing.B) {
	repo := fstest.MapFS{}
	for i := range 50 {
		repo[fmt.Sprintf("app/%02d.yaml", i)] = file(deployment + "---\n" + service + "---\n" + cm("a") + "---\n" + cm("b"))
	}
	src := navarchv1.ApplicationSource{Path: "app"}
	for b.Loop() {
		if _, err := renderPlain(repo, src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderKustomize renders an overlay of a base, with options.
func BenchmarkRenderKustomize(b *testing.B) {
	repo := kustomizeRepo()
	src := navarchv1.ApplicationSource{Path: "overlays/prod", Kustomize: &navarchv1.ApplicationSourceKustomize{
		NamePrefix:   "team-",
		Images:       []string{"nginx=nginx:1.25"},
		CommonLabels: map[string]string{"team": "blue"},
	}}
	for b.Loop() {
		if _, err := renderPlain(repo, src); err != nil {
			b.Fatal(err)
		}
	}
}
