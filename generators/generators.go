// Package generators turns the generators of an ApplicationSet into parameter sets, the maps
// that templates render into one Application each.
//
// The package is pure: it reads Git, Clusters, pull requests and generator plugins only through
// the small interfaces in Inputs, so the controller (backed by its caches) and the offline
// `navarch generate` (backed by files or live reads) run the same code. Parameters have the
// names and shapes Argo CD's ApplicationSet controller gives them, so existing ApplicationSets
// render the same Applications:
//
//   - fasttemplate mode (the default): every parameter set is a flat map of strings whose keys
//     carry the structure in dots, e.g. "metadata.labels.env", "path.basename", "path[0]",
//     "values.region", or for a git file {"a": {"b": [1]}} the key "a.b.0".
//   - goTemplate mode: parameter sets are nested maps (map[string]any) holding the decoded
//     values, e.g. .metadata.labels.env, .path.basename, .path.segments ([]string).
//
// Use Generate for a whole ApplicationSet; New and NewNested bind one generator to its spec.
// Generate never returns a partial result: any generator error (Git unreachable, a list call
// failing, a malformed field) fails the whole call, so a caller never deletes Applications
// because of a transient failure. Parameter maps may share nested values and must be treated
// as read-only.
package generators

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Generator is one generator bound to its spec.
type Generator interface {
	// Params returns the generator's parameter sets in a stable order.
	Params(ctx context.Context, in Inputs) ([]map[string]any, error)
	// RequeueAfter is how long to wait before running the generator again without an event;
	// 0 means it is only re-run on events (watches, webhooks).
	RequeueAfter() time.Duration
}

// Result is what one entry of spec.generators produced.
type Result struct {
	// Generator is the index of the generator in spec.generators.
	Generator int
	// Params are its parameter sets, after its selector.
	Params []map[string]any
	// Template is the generator's template override, nil if none. Only the top-level
	// generator's override is returned: as in Argo CD, the overrides of matrix and merge
	// children are ignored.
	Template *navarchv1.GeneratorTemplate
	// RequeueAfter is the generator's periodic requeue interval; 0 means none.
	RequeueAfter time.Duration
}

// LimitError reports more parameter sets than Inputs.MaxParamSets allows.
type LimitError struct {
	// Field is where the limit was hit: "spec.generators" for the total, or a matrix.
	Field string
	// Count is the number of parameter sets; a lower bound when AtLeast is set.
	Count int
	// Limit is the cap in force.
	Limit int
	// AtLeast is set when generation stopped as soon as the cap was crossed.
	AtLeast bool
}

func (e *LimitError) Error() string {
	count := fmt.Sprint(e.Count)
	if e.AtLeast {
		count = "at least " + count
	}
	return fmt.Sprintf("%s: %s parameter sets exceed the limit of %d; narrow the generators (selectors, globs) or raise the limit",
		e.Field, count, e.Limit)
}

// Generate runs every generator of spec and returns one Result per entry of spec.generators,
// in order. Every generator is validated before any of them reads anything.
func Generate(ctx context.Context, spec *navarchv1.ApplicationSetSpec, in Inputs) ([]Result, error) {
	if spec == nil {
		return nil, errors.New("spec: must be set")
	}
	if len(spec.Generators) == 0 {
		return nil, errors.New("spec.generators: must have at least one generator")
	}
	in.GoTemplate = spec.GoTemplate
	in.Git = newSnapshotCache(in.Git)

	gens := make([]Generator, len(spec.Generators))
	for i := range spec.Generators {
		g, err := New(fmt.Sprintf("spec.generators[%d]", i), &spec.Generators[i])
		if err != nil {
			return nil, err
		}
		gens[i] = g
	}

	results := make([]Result, 0, len(gens))
	total := 0
	for i, g := range gens {
		params, err := g.Params(ctx, in)
		if err != nil {
			return nil, err
		}
		total += len(params)
		results = append(results, Result{
			Generator:    i,
			Params:       params,
			Template:     templateOverride(&spec.Generators[i]),
			RequeueAfter: g.RequeueAfter(),
		})
	}
	if limit := in.maxParamSets(); total > limit {
		return nil, &LimitError{Field: "spec.generators", Count: total, Limit: limit}
	}
	return results, nil
}

// MinRequeueAfter is the interval at which an ApplicationSet should be requeued: the smallest
// non-zero RequeueAfter of results, or 0 when no generator asks for periodic requeues.
func MinRequeueAfter(results []Result) time.Duration {
	var d time.Duration
	for _, r := range results {
		d = MinRequeue(d, r.RequeueAfter)
	}
	return d
}

// MinRequeue is the smaller of two requeue intervals, where 0 means "none".
func MinRequeue(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	default:
		return min(a, b)
	}
}

// kinds is one generator with the nested matrix/merge already decoded, shared by the
// top-level ApplicationSetGenerator and the NestedGenerator of a matrix or merge.
type kinds struct {
	list        *navarchv1.ListGenerator
	clusters    *navarchv1.ClusterGenerator
	git         *navarchv1.GitGenerator
	pullRequest *navarchv1.PullRequestGenerator
	scmProvider *navarchv1.SCMProviderGenerator
	plugin      *navarchv1.PluginGenerator
	matrix      *navarchv1.MatrixGenerator
	merge       *navarchv1.MergeGenerator
}

// New binds a top-level generator to its spec, validating it (and its children, however
// deep). field is its path, e.g. "spec.generators[0]", used in every error it returns.
func New(field string, g *navarchv1.ApplicationSetGenerator) (Generator, error) {
	if g == nil {
		return nil, fmt.Errorf("%s: must be set", field)
	}
	return build(field, kinds{
		list: g.List, clusters: g.Clusters, git: g.Git, pullRequest: g.PullRequest,
		scmProvider: g.SCMProvider, plugin: g.Plugin, matrix: g.Matrix, merge: g.Merge,
	}, g.Selector)
}

// NewNested binds a child of a matrix or merge generator to its spec, decoding and validating
// a nested matrix or merge. field is its path, e.g. "spec.generators[0].matrix.generators[1]".
func NewNested(field string, g *navarchv1.NestedGenerator) (Generator, error) {
	if g == nil {
		return nil, fmt.Errorf("%s: must be set", field)
	}
	k := kinds{list: g.List, clusters: g.Clusters, git: g.Git, pullRequest: g.PullRequest, scmProvider: g.SCMProvider, plugin: g.Plugin}
	if g.Matrix != nil {
		k.matrix = &navarchv1.MatrixGenerator{}
		if err := decodeStrict(g.Matrix.Raw, k.matrix); err != nil {
			return nil, fmt.Errorf("%s.matrix: %w", field, err)
		}
	}
	if g.Merge != nil {
		k.merge = &navarchv1.MergeGenerator{}
		if err := decodeStrict(g.Merge.Raw, k.merge); err != nil {
			return nil, fmt.Errorf("%s.merge: %w", field, err)
		}
	}
	return build(field, k, g.Selector)
}

func build(field string, k kinds, sel *metav1.LabelSelector) (Generator, error) {
	var set []string
	var g validatingGenerator
	if k.list != nil {
		set = append(set, "list")
		g = List{Spec: k.list, Field: field + ".list"}
	}
	if k.clusters != nil {
		set = append(set, "clusters")
		g = Clusters{Spec: k.clusters, Field: field + ".clusters"}
	}
	if k.git != nil {
		set = append(set, "git")
		g = Git{Spec: k.git, Field: field + ".git"}
	}
	if k.pullRequest != nil {
		set = append(set, "pullRequest")
		g = PullRequests{Spec: k.pullRequest, Field: field + ".pullRequest"}
	}
	if k.scmProvider != nil {
		set = append(set, "scmProvider")
		g = SCMProviders{Spec: k.scmProvider, Field: field + ".scmProvider"}
	}
	if k.plugin != nil {
		set = append(set, "plugin")
		g = Plugin{Spec: k.plugin, Field: field + ".plugin"}
	}
	if k.matrix != nil {
		set = append(set, "matrix")
		g = Matrix{Spec: k.matrix, Field: field + ".matrix"}
	}
	if k.merge != nil {
		set = append(set, "merge")
		g = Merge{Spec: k.merge, Field: field + ".merge"}
	}
	if len(set) != 1 {
		found := "none"
		if len(set) > 0 {
			found = strings.Join(set, ", ")
		}
		return nil, fmt.Errorf("%s: exactly one of list, clusters, git, pullRequest, scmProvider, plugin, matrix or merge must be set (found %s)", field, found)
	}
	if err := g.validate(); err != nil {
		return nil, err
	}
	if sel == nil {
		return g, nil
	}
	s, err := compileSelector(field+".selector", sel)
	if err != nil {
		return nil, err
	}
	return selected{Generator: g, selector: s, field: field}, nil
}

// validatingGenerator is a generator kind that can check its spec before reading anything.
type validatingGenerator interface {
	Generator
	validate() error
}

// templateOverride returns the template override of a top-level generator, nil if none.
func templateOverride(g *navarchv1.ApplicationSetGenerator) *navarchv1.GeneratorTemplate {
	switch {
	case g.List != nil:
		return g.List.Template
	case g.Clusters != nil:
		return g.Clusters.Template
	case g.Git != nil:
		return g.Git.Template
	case g.PullRequest != nil:
		return g.PullRequest.Template
	case g.SCMProvider != nil:
		return g.SCMProvider.Template
	case g.Plugin != nil:
		return g.Plugin.Template
	case g.Matrix != nil:
		return g.Matrix.Template
	case g.Merge != nil:
		return g.Merge.Template
	}
	return nil
}
