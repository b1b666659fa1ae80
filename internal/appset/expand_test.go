package appset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
	"github.com/navarch-io/navarch/internal/gitrepo"
	"github.com/navarch-io/navarch/internal/gitserver"
)

// seedGuideAppSet is the seed guide's "one app per directory under apps/" ApplicationSet, with
// its repoURL pointed at the local Git server.
const seedGuideAppSet = `
metadata: { name: all-apps, namespace: gitops }
spec:
  generators:
    - git:
        repoURL: REPO
        revision: main
        directories: [{ path: "apps/*" }]
  template:
    metadata: { name: '{{path.basename}}' }
    spec:
      source: { repoURL: REPO, targetRevision: main, path: '{{path}}' }
      destination: { server: 'https://kubernetes.default.svc', namespace: '{{path.basename}}' }
      syncPolicy: { automated: { prune: true, selfHeal: true } }
`

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func startGit(t *testing.T) (*gitserver.Server, *gitrepo.Reader) {
	t.Helper()
	srv, err := gitserver.Start(gitserver.Options{Root: t.TempDir()})
	if err != nil {
		t.Fatalf("start git server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	r, err := gitrepo.New(gitrepo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return srv, r
}

func appSet(t *testing.T, y, repo string) *navarchv1.ApplicationSet {
	t.Helper()
	set := &navarchv1.ApplicationSet{}
	if err := yaml.UnmarshalStrict([]byte(strings.ReplaceAll(y, "REPO", repo)), set); err != nil {
		t.Fatal(err)
	}
	return set
}

func names(apps []*navarchv1.Application) []string {
	out := make([]string, len(apps))
	for i, a := range apps {
		out[i] = a.Name
	}
	return out
}

func TestGitDirectoriesFollowTheRepository(t *testing.T) {
	srv, reader := startGit(t)
	tree := writeTree(t, map[string]string{
		"apps/api/kustomization.yaml":    "resources: []\n",
		"apps/web/kustomization.yaml":    "resources: []\n",
		"apps/worker/kustomization.yaml": "resources: []\n",
		"README.md":                      "deploy repo\n",
	})
	if _, err := srv.CreateRepo("deploy", tree); err != nil {
		t.Fatal(err)
	}
	set := appSet(t, seedGuideAppSet, srv.RepoURL("deploy"))
	in := generators.Inputs{Git: GitReader(reader, nil)}
	ctx := context.Background()

	exp, err := Expand(ctx, set, in)
	if err != nil {
		t.Fatalf("expand: %v", err)
	}
	if got := strings.Join(names(exp.Applications), ","); got != "api,web,worker" {
		t.Fatalf("one Application per directory: got %s, want api,web,worker", got)
	}
	web := exp.Applications[1]
	if web.Namespace != "gitops" || web.Labels[navarchv1.LabelApplicationSet] != "all-apps" ||
		web.Spec.Source.Path != "apps/web" || web.Spec.Destination.Namespace != "web" {
		t.Errorf("web Application rendered wrong: %+v", web)
	}

	// A pushed directory adds an Application; a deleted one removes it.
	if _, err := srv.Update("deploy", "add billing, drop worker", func(dir string) error {
		if err := os.MkdirAll(filepath.Join(dir, "apps/billing"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "apps/billing/kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
			return err
		}
		return os.RemoveAll(filepath.Join(dir, "apps/worker"))
	}); err != nil {
		t.Fatal(err)
	}
	exp, err = Expand(ctx, set, in)
	if err != nil {
		t.Fatalf("expand after push: %v", err)
	}
	if got := strings.Join(names(exp.Applications), ","); got != "api,billing,web" {
		t.Fatalf("after the push: got %s, want api,billing,web", got)
	}

	// An unreachable server is an error, never an empty result.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	exp, err = Expand(ctx, set, in)
	if err == nil {
		t.Fatalf("Git server down: got %d Applications and no error", len(exp.Applications))
	}
	if !errors.Is(err, gitrepo.ErrUnreachable) || !strings.Contains(err.Error(), "spec.generators[0].git") {
		t.Errorf("Git server down: error should be ErrUnreachable naming the generator, got: %v", err)
	}
}

func TestGitFilesAndClustersMatrix(t *testing.T) {
	srv, reader := startGit(t)
	tree := writeTree(t, map[string]string{
		"config/api.yaml":  "app: api\nreplicas: 2\nteam: {name: core}\n",
		"config/web.json":  `{"app": "web", "replicas": 3, "team": {"name": "edge"}}`,
		"config/list.yaml": "- {app: batch-a, replicas: 1, team: {name: data}}\n- {app: batch-b, replicas: 1, team: {name: data}}\n",
	})
	if _, err := srv.CreateRepo("config", tree); err != nil {
		t.Fatal(err)
	}
	set := appSet(t, `
metadata: { name: by-file, namespace: gitops }
spec:
  generators:
  - matrix:
      generators:
      - git: {repoURL: REPO, files: [{path: "config/*"}]}
      - clusters: {selector: {matchLabels: {env: prod}}}
  template:
    metadata: { name: '{{app}}-{{name}}', labels: {team: '{{team.name}}'} }
    spec:
      source: { repoURL: REPO, path: 'apps/{{app}}' }
      destination: { name: '{{name}}', namespace: '{{app}}' }
`, srv.RepoURL("config"))
	clusters := clusterList{
		cluster("prod-eu", map[string]string{"env": "prod"}),
		cluster("dev-eu", map[string]string{"env": "dev"}),
	}
	exp, err := Expand(context.Background(), set, generators.Inputs{Git: GitReader(reader, nil), Clusters: clusters})
	if err != nil {
		t.Fatalf("expand: %v", err)
	}
	want := "api-prod-eu,batch-a-prod-eu,batch-b-prod-eu,web-prod-eu"
	if got := strings.Join(sortedNames(exp.Applications), ","); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	for _, app := range exp.Applications {
		if app.Labels["team"] == "" || strings.Contains(app.Labels["team"], "{{") {
			t.Errorf("%s: team label %q not rendered from the file", app.Name, app.Labels["team"])
		}
	}
}

func TestProblemsDoNotStopTheOthers(t *testing.T) {
	set := appSet(t, `
metadata: { name: s, namespace: gitops }
spec:
  generators:
  - list:
      elements:
      - {name: a, cluster: prod-eu}
      - {name: a, cluster: prod-eu}
      - {name: "", cluster: prod-eu}
      - {name: Not_Valid, cluster: prod-eu}
      - {name: b, cluster: nowhere}
      - {name: c, cluster: prod-eu}
  template:
    metadata: { name: '{{name}}' }
    spec:
      source: { repoURL: 'https://git.example/r.git' }
      destination: { name: '{{cluster}}' }
`, "")
	exp, err := Expand(context.Background(), set, generators.Inputs{Clusters: clusterList{cluster("prod-eu", nil)}})
	if err != nil {
		t.Fatalf("expand: %v", err)
	}
	if got := strings.Join(names(exp.Applications), ","); got != "c" {
		t.Errorf("valid Applications: got %q, want c", got)
	}
	var msgs []string
	for _, p := range exp.Problems {
		msgs = append(msgs, p.Err.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		`"a" is generated by 2 parameter sets`,
		"rendered to an empty name (parameter set 2 of generator 0)",
		`"Not_Valid" is not a valid name`,
		`spec.destination.name: no Cluster named "nowhere"`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
}

func TestTemplateErrorNamesFieldAndParameterSet(t *testing.T) {
	set := appSet(t, `
metadata: { name: s, namespace: gitops }
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
  - list: {elements: [{name: a, path: x}]}
  - list: {elements: [{name: b, path: y}, {name: c}]}
  template:
    metadata: { name: '{{.name}}' }
    spec:
      source: { repoURL: 'https://git.example/r.git', path: '{{.path}}' }
      destination: { name: in-cluster }
`, "")
	_, err := Expand(context.Background(), set, generators.Inputs{})
	want := `spec.template.spec.source.path: map has no entry for key "path" (parameter set 1 of generator 1)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error containing %q", err, want)
	}
}

type clusterList []navarchv1.Cluster

func (c clusterList) ListClusters(context.Context) ([]navarchv1.Cluster, error) { return c, nil }

func cluster(name string, labels map[string]string) navarchv1.Cluster {
	return navarchv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       navarchv1.ClusterSpec{Server: "https://" + name + ".example:6443", InCluster: true},
	}
}

func sortedNames(apps []*navarchv1.Application) []string {
	n := names(apps)
	slices.Sort(n)
	return n
}
