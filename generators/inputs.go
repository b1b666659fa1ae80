package generators

import (
	"context"
	"errors"
	"fmt"
	"sync"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Renderer renders a templated string with one parameter set. templates.Engine implements it;
// it must be configured in the same mode (fasttemplate or goTemplate) as Inputs.GoTemplate.
type Renderer interface {
	RenderString(s string, params map[string]any) (string, error)
}

// GitReader reads a repository at a revision (internal/gitrepo implements it via an adapter).
// An unreachable server or an unknown revision must be an error, never an empty tree.
type GitReader interface {
	Snapshot(ctx context.Context, repoURL, revision string) (GitTree, error)
}

// GitTree is one commit of a repository. Paths are relative to the repository root,
// "/"-separated, without a leading "./" or "/".
type GitTree interface {
	// Commit is the commit's hash.
	Commit() string
	// Dirs lists every directory except the root.
	Dirs() []string
	// Files lists every file.
	Files() []string
	// ReadFile returns the content of a file listed by Files.
	ReadFile(path string) ([]byte, error)
}

// ClusterLister lists registered Clusters (controller: from the cache; CLI: from a file or live).
type ClusterLister interface {
	ListClusters(ctx context.Context) ([]navarchv1.Cluster, error)
}

// Inputs is what generators read besides their own spec. Generate fills GoTemplate from the
// ApplicationSet's spec; the readers may be nil when no generator needs them, in which case a
// generator that does fails with an error naming its field.
type Inputs struct {
	// Renderer renders clusters/git `values` and the fields of a matrix child that use an
	// earlier child's parameters.
	Renderer Renderer
	// Git reads repositories for git generators.
	Git GitReader
	// Clusters lists Clusters for clusters generators.
	Clusters ClusterLister
	// PullRequests lists pull requests for pullRequest generators.
	PullRequests PullRequestLister
	// SCMProviders lists repositories for scmProvider generators.
	SCMProviders SCMProvider
	// Plugins asks generator plugins for parameter sets, for plugin generators.
	Plugins PluginCaller
	// ApplicationSetName names the ApplicationSet being generated to plugins.
	ApplicationSetName string
	// GoTemplate selects nested parameter maps (goTemplate: true) instead of flat maps of
	// strings with dotted keys (the default, fasttemplate).
	GoTemplate bool
	// MaxParamSets caps the parameter sets of one ApplicationSet; 0 means DefaultMaxParamSets.
	MaxParamSets int

	// outer holds the parameters of the enclosing matrices while a nested matrix runs.
	outer map[string]any
}

// DefaultMaxParamSets is the default cap on the parameter sets of one ApplicationSet.
const DefaultMaxParamSets = 10000

func (in Inputs) maxParamSets() int {
	if in.MaxParamSets > 0 {
		return in.MaxParamSets
	}
	return DefaultMaxParamSets
}

// render renders s with params, skipping strings that hold no template action so that plain
// values need no Renderer.
func (in Inputs) render(s string, params map[string]any) (string, error) {
	if !isTemplated(s) {
		return s, nil
	}
	if in.Renderer == nil {
		return "", errors.New("no template renderer configured")
	}
	return in.Renderer.RenderString(s, params)
}

// snapshotCache reads each (repoURL, revision) once per Generate call, so a git generator
// inside a matrix does not fetch again for every earlier parameter set and every generator of
// one pass sees the same commit.
type snapshotCache struct {
	git   GitReader
	mu    sync.Mutex
	trees map[[2]string]GitTree
}

func newSnapshotCache(git GitReader) GitReader {
	if git == nil {
		return nil
	}
	if c, ok := git.(*snapshotCache); ok {
		return c
	}
	return &snapshotCache{git: git, trees: map[[2]string]GitTree{}}
}

// Snapshot implements GitReader. Errors are not cached: the whole Generate call fails anyway.
func (c *snapshotCache) Snapshot(ctx context.Context, repoURL, revision string) (GitTree, error) {
	key := [2]string{repoURL, revision}
	c.mu.Lock()
	tree, ok := c.trees[key]
	c.mu.Unlock()
	if ok {
		return tree, nil
	}
	tree, err := c.git.Snapshot(ctx, repoURL, revision)
	if err != nil {
		return nil, err
	}
	if tree == nil {
		return nil, fmt.Errorf("git reader returned no tree for %s at %s", repoURL, revision)
	}
	c.mu.Lock()
	c.trees[key] = tree
	c.mu.Unlock()
	return tree, nil
}
