package appset

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
)

// memTree is an in-memory Git tree, so the benchmark measures generation and rendering, not
// Git.
type memTree struct{ dirs []string }

func (t memTree) Commit() string                  { return "0123456789abcdef0123456789abcdef01234567" }
func (t memTree) Dirs() []string                  { return t.dirs }
func (t memTree) Files() []string                 { return nil }
func (t memTree) ReadFile(string) ([]byte, error) { return nil, fmt.Errorf("no files") }
func (t memTree) Snapshot(context.Context, string, string) (generators.GitTree, error) {
	return t, nil
}

// BenchmarkExpand10k is the bench/README.md budget "render 10,000 Applications ≤ 0.5 s": an
// ApplicationSet whose matrix of 100 Git directories × 100 clusters gives 10,000
// Applications, generated and rendered end to end, in both template modes.
func BenchmarkExpand10k(b *testing.B) {
	tree := memTree{dirs: []string{"apps"}}
	for i := range 100 {
		tree.dirs = append(tree.dirs, fmt.Sprintf("apps/app-%03d", i))
	}
	var clusters clusterList
	for i := range 100 {
		clusters = append(clusters, cluster(fmt.Sprintf("cluster-%03d", i), map[string]string{"env": "prod", "region": fmt.Sprint("r", i%5)}))
	}
	modes := map[string]string{
		"fasttemplate": `
metadata: {name: fleet, namespace: gitops}
spec:
  generators:
  - matrix:
      generators:
      - git: {repoURL: 'https://git.example/deploy.git', revision: main, directories: [{path: 'apps/*'}]}
      - clusters: {selector: {matchLabels: {env: prod}}}
  template:
    metadata: {name: '{{path.basename}}-{{name}}', labels: {app: '{{path.basename}}', env: '{{metadata.labels.env}}'}}
    spec:
      source: {repoURL: 'https://git.example/deploy.git', targetRevision: main, path: '{{path}}/overlays/{{metadata.labels.env}}'}
      destination: {name: '{{name}}', namespace: '{{path.basename}}'}
      syncPolicy: {automated: {prune: true, selfHeal: true}, syncOptions: [CreateNamespace=true]}`,
		"goTemplate": `
metadata: {name: fleet, namespace: gitops}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - matrix:
      generators:
      - git: {repoURL: 'https://git.example/deploy.git', revision: main, directories: [{path: 'apps/*'}]}
      - clusters: {selector: {matchLabels: {env: prod}}}
  template:
    metadata: {name: '{{.path.basename}}-{{.name}}', labels: {app: '{{.path.basename}}', env: '{{.metadata.labels.env}}'}}
    spec:
      source: {repoURL: 'https://git.example/deploy.git', targetRevision: main, path: '{{.path.path}}/overlays/{{.metadata.labels.env}}'}
      destination: {name: '{{.name}}', namespace: '{{.path.basename}}'}
      syncPolicy: {automated: {prune: true, selfHeal: true}, syncOptions: [CreateNamespace=true]}`,
	}
	for _, mode := range []string{"fasttemplate", "goTemplate"} {
		b.Run(mode, func(b *testing.B) {
			set := &navarchv1.ApplicationSet{}
			if err := yaml.UnmarshalStrict([]byte(modes[mode]), set); err != nil {
				b.Fatal(err)
			}
			in := generators.Inputs{Git: tree, Clusters: clusters}
			b.ReportAllocs()
			for b.Loop() {
				exp, err := Expand(context.Background(), set, in)
				if err != nil {
					b.Fatal(err)
				}
				if len(exp.Applications) != 10000 || len(exp.Problems) != 0 {
					b.Fatalf("got %d Applications, %d problems", len(exp.Applications), len(exp.Problems))
				}
			}
		})
	}
}
