package generators

import (
	"context"
	"fmt"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// BenchmarkGenerate10k generates the 10,000 parameter sets of 100 clusters x 100 app
// directories, the scale of the 10k-Application render budget (bench/README.md), in both modes.
func BenchmarkGenerate10k(b *testing.B) {
	var clusters []navarchv1.Cluster
	for i := range 100 {
		clusters = append(clusters, cluster(fmt.Sprintf("cluster-%03d", i), fmt.Sprintf("https://c%03d.example.com", i),
			map[string]string{"env": "prod", "region": fmt.Sprintf("r%d", i%5)}))
	}
	files := map[string]string{}
	for i := range 100 {
		files[fmt.Sprintf("apps/app-%03d/kustomization.yaml", i)] = ""
	}
	git := &memGit{trees: map[string]*memTree{repo + "@main": {files: files}}}

	for _, goTemplate := range []bool{false, true} {
		values := map[string]string{"ns": "{{name}}-{{metadata.labels.region}}"}
		if goTemplate {
			values = map[string]string{"ns": "{{.name}}-{{.metadata.labels.region}}"}
		}
		spec := &navarchv1.ApplicationSetSpec{GoTemplate: goTemplate, Generators: []navarchv1.ApplicationSetGenerator{{
			Matrix: &navarchv1.MatrixGenerator{Generators: []navarchv1.NestedGenerator{
				{Clusters: &navarchv1.ClusterGenerator{Values: values}},
				{Git: gitDirs(repo, include("apps/*"))},
			}},
		}}}
		in := Inputs{Renderer: engine(b, goTemplate), Git: git, Clusters: clusterList{clusters: clusters}}
		b.Run(fmt.Sprintf("goTemplate=%v", goTemplate), func(b *testing.B) {
			for b.Loop() {
				results, err := Generate(context.Background(), spec, in)
				if err != nil {
					b.Fatal(err)
				}
				if n := len(results[0].Params); n != 10000 {
					b.Fatalf("got %d parameter sets, want 10000", n)
				}
			}
		})
	}
}
