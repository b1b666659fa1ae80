package generators

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Test doubles: in-memory Git, Clusters and pull requests, and a renderer that substitutes
// `{{ key }}` (fasttemplate: flat keys) or `{{ .a.b }}` (goTemplate: a path through nested
// maps), leaving unknown tags as written. engine_test.go runs the same kinds of specs through
// the real templates.Engine.

type stubRenderer struct{ goTemplate bool }

func (r stubRenderer) RenderString(s string, params map[string]any) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return "", fmt.Errorf("unclosed tag in %q", s)
		}
		b.WriteString(s[:i])
		raw := s[i : i+j+2]
		key := strings.TrimSpace(raw[2 : len(raw)-2])
		if v, ok := r.lookup(params, key); ok {
			b.WriteString(v)
		} else {
			b.WriteString(raw)
		}
		s = s[i+j+2:]
	}
}

func (r stubRenderer) lookup(params map[string]any, key string) (string, bool) {
	if !r.goTemplate {
		v, ok := params[key].(string)
		return v, ok
	}
	if !strings.HasPrefix(key, ".") {
		return "", false
	}
	var cur any = params
	for _, part := range strings.Split(key[1:], ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = m[part]; !ok {
			return "", false
		}
	}
	return fmt.Sprint(cur), true
}

// memTree is a repository snapshot: files with content, and every directory above them plus
// any extra (empty) directories.
type memTree struct {
	commit string
	files  map[string]string
	extra  []string
}

func (t *memTree) Commit() string { return t.commit }

func (t *memTree) Dirs() []string {
	seen := map[string]bool{}
	for _, d := range t.extra {
		for ; d != "." && d != ""; d = path.Dir(d) {
			seen[d] = true
		}
	}
	for f := range t.files {
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			seen[d] = true
		}
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

func (t *memTree) Files() []string {
	out := make([]string, 0, len(t.files))
	for f := range t.files {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

func (t *memTree) ReadFile(p string) ([]byte, error) {
	c, ok := t.files[p]
	if !ok {
		return nil, fmt.Errorf("%s: no such file", p)
	}
	return []byte(c), nil
}

// memGit serves trees by "repoURL@revision" and counts reads.
type memGit struct {
	mu    sync.Mutex
	trees map[string]*memTree
	err   error
	reads []string
}

func (g *memGit) Snapshot(_ context.Context, repoURL, revision string) (GitTree, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := repoURL + "@" + revision
	g.reads = append(g.reads, key)
	if g.err != nil {
		return nil, g.err
	}
	t, ok := g.trees[key]
	if !ok {
		return nil, fmt.Errorf("revision %s not found in %s", revision, repoURL)
	}
	return t, nil
}

type clusterList struct {
	clusters []navarchv1.Cluster
	err      error
}

func (c clusterList) ListClusters(context.Context) ([]navarchv1.Cluster, error) {
	if c.err != nil {
		return nil, c.err
	}
	// A copy, as a cache would hand out: the generator sorts what it gets.
	return append([]navarchv1.Cluster(nil), c.clusters...), nil
}

type prList struct {
	prs []PullRequest
	err error
}

func (l prList) ListPullRequests(context.Context, *navarchv1.PullRequestGenerator) ([]PullRequest, error) {
	return l.prs, l.err
}

// scmRepos is an organisation's repositories; files maps "repo@branch" to its paths.
type scmRepos struct {
	repos   []Repository
	files   map[string][]string
	err     error
	lookups *int
}

func (s scmRepos) ListRepositories(context.Context, *navarchv1.SCMProviderGenerator) ([]Repository, error) {
	return s.repos, s.err
}

func (s scmRepos) PathExists(_ context.Context, _ *navarchv1.SCMProviderGenerator, repo Repository, path string) (bool, error) {
	if s.lookups != nil {
		*s.lookups++
	}
	for _, f := range s.files[repo.Name+"@"+repo.Branch] {
		if f == path || strings.HasPrefix(f, path+"/") {
			return true, nil
		}
	}
	return false, nil
}

// Builders for specs.

func cluster(name, server string, labels map[string]string) navarchv1.Cluster {
	return navarchv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       navarchv1.ClusterSpec{Server: server},
	}
}

// rawJSON marshals v (usually a YAML-ish literal map) into an apiextensions JSON value.
func rawJSON(t testing.TB, v any) *apiextensionsv1.JSON {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: b}
}

func elements(t testing.TB, els ...map[string]any) []apiextensionsv1.JSON {
	t.Helper()
	out := make([]apiextensionsv1.JSON, len(els))
	for i, el := range els {
		out[i] = *rawJSON(t, el)
	}
	return out
}

func listGen(t testing.TB, els ...map[string]any) *navarchv1.ListGenerator {
	return &navarchv1.ListGenerator{Elements: elements(t, els...)}
}

func gitDirs(repo string, paths ...navarchv1.GitPathItem) *navarchv1.GitGenerator {
	return &navarchv1.GitGenerator{RepoURL: repo, Revision: "main", Directories: paths}
}

// gitFiles is a files generator on the test repository.
func gitFiles(paths ...navarchv1.GitPathItem) *navarchv1.GitGenerator {
	return &navarchv1.GitGenerator{RepoURL: repo, Revision: "main", Files: paths}
}

func include(p string) navarchv1.GitPathItem { return navarchv1.GitPathItem{Path: p} }
func exclude(p string) navarchv1.GitPathItem { return navarchv1.GitPathItem{Path: p, Exclude: true} }

// nestedMatrix returns a matrix child holding a nested matrix of children.
func nestedMatrix(t testing.TB, children ...navarchv1.NestedGenerator) navarchv1.NestedGenerator {
	return navarchv1.NestedGenerator{Matrix: rawJSON(t, navarchv1.MatrixGenerator{Generators: children})}
}

// generate runs Generate on generators and returns every parameter set, in order.
func generate(t testing.TB, goTemplate bool, in Inputs, gens ...navarchv1.ApplicationSetGenerator) ([]map[string]any, error) {
	t.Helper()
	if in.Renderer == nil {
		in.Renderer = stubRenderer{goTemplate: goTemplate}
	}
	results, err := Generate(context.Background(), &navarchv1.ApplicationSetSpec{GoTemplate: goTemplate, Generators: gens}, in)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, r := range results {
		out = append(out, r.Params...)
	}
	return out, nil
}

// checkParams fails unless got equals want, printing both as JSON for readable diffs.
func checkParams(t testing.TB, got, want []map[string]any) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(normalizeJSON(t, got), normalizeJSON(t, want)) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("parameter sets:\n got %s\nwant %s", g, w)
	}
}

// normalizeJSON round-trips v through JSON so []string and []any, map[string]any and
// map[string]string compare equal.
func normalizeJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkErr fails unless err is nil when want is empty, or contains want otherwise.
func checkErr(t testing.TB, err error, want string) bool {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
	return err == nil
}

func ptr[T any](v T) *T { return &v }
