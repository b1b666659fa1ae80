// Package appset expands an ApplicationSet into the Applications it generates: it runs the
// generators, renders the template once per parameter set and checks each result. It is pure
// (it reads through the generators' small interfaces), so the ApplicationSet controller and the
// offline `navarch generate` produce exactly the same Applications.
package appset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/generators"
	"github.com/navarch-io/navarch/internal/destination"
	"github.com/navarch-io/navarch/internal/project"
	"github.com/navarch-io/navarch/templates"
)

// Expansion is what one pass over an ApplicationSet produced.
type Expansion struct {
	// Applications are the valid generated Applications, in generation order.
	Applications []*navarchv1.Application
	// Problems are generated Applications that cannot be written (empty or invalid name,
	// duplicate name, unknown destination). The others may be created and updated, but a
	// controller must delete nothing while there is any problem: a broken name leaves no way
	// to tell which existing Applications are really gone.
	Problems []Problem
	// RequeueAfter is the smallest periodic requeue interval any generator asks for; 0 if none.
	RequeueAfter time.Duration
}

// Problem is one generated Application that cannot be written.
type Problem struct {
	// Name is the generated name; empty when the name itself is the problem.
	Name string
	// Err says what is wrong, naming the field and the parameter set.
	Err error
}

// The limits of one pass over an ApplicationSet, on top of the templates package's limits on
// every string and Application (templates.MaxFieldSize and the others).
const (
	// DefaultRenderTime is how long rendering may take in total in one pass: the templates of
	// every Application, and the generators' templated fields. Reading Git and listing
	// Clusters do not count.
	DefaultRenderTime = 5 * time.Second
	// DefaultRenderBytes is about how many bytes rendering may make in one pass: the
	// Applications, as large as their JSON, and the values template functions make.
	DefaultRenderBytes = 256 << 20
)

// Option changes a limit of Expand.
type Option func(*limits)

type limits struct {
	renderTime  time.Duration
	renderBytes int64
	projects    Projects
}

// Projects returns Projects by name, compiled. The error is a refusal (project.IsRefusal: the
// Project does not exist or is invalid) or a failure to read.
type Projects interface {
	Project(ctx context.Context, name string) (*project.Policy, error)
}

// WithProjects checks each generated Application against its Project (which needs
// Inputs.Clusters): one that its Project refuses becomes a Problem.
func WithProjects(p Projects) Option { return func(l *limits) { l.projects = p } }

// WithRenderTime sets how long rendering may take in one pass (DefaultRenderTime); 0 means
// no limit.
func WithRenderTime(d time.Duration) Option { return func(l *limits) { l.renderTime = d } }

// WithRenderBytes sets about how many bytes rendering may make in one pass
// (DefaultRenderBytes); 0 means no limit.
func WithRenderBytes(n int64) Option { return func(l *limits) { l.renderBytes = n } }

// Expand runs the generators of set and renders its Applications. A generator or template
// error fails the whole expansion: the caller must then create, update and delete nothing.
// in.Renderer is set from the ApplicationSet's template options. When in.Clusters is set,
// destinations are checked against the registered Clusters.
//
// Rendering is bounded, so that one ApplicationSet cannot exhaust the controller's memory or
// hold it for long: each pass gets a templates.Budget of DefaultRenderTime and
// DefaultRenderBytes (or what opts set). A template that exceeds a limit fails the pass with
// a *templates.FieldError naming the field, holding a *templates.LimitError naming the limit.
func Expand(ctx context.Context, set *navarchv1.ApplicationSet, in generators.Inputs, opts ...Option) (*Expansion, error) {
	l := limits{renderTime: DefaultRenderTime, renderBytes: DefaultRenderBytes}
	for _, o := range opts {
		o(&l)
	}
	topts := templates.OptionsFor(&set.Spec)
	topts.Budget = templates.NewBudget(l.renderTime, l.renderBytes)
	engine, err := templates.NewEngine(topts)
	if err != nil {
		return nil, err
	}
	in.Renderer = engine
	results, err := generators.Generate(ctx, &set.Spec, in)
	if err != nil {
		return nil, err
	}

	out := &Expansion{RequeueAfter: generators.MinRequeueAfter(results)}
	var base *templates.Template
	for _, r := range results {
		tmpl := base
		if r.Template != nil || base == nil {
			merged, err := templates.Merge(set.Spec.Template, r.Template)
			if err != nil {
				return nil, fmt.Errorf("spec.generators[%d].%w", r.Generator, err)
			}
			if tmpl, err = engine.Compile(merged, set.Spec.TemplatePatch); err != nil {
				return nil, err
			}
			if r.Template == nil {
				base = tmpl
			}
		}
		for i, params := range r.Params {
			app, err := tmpl.Render(params)
			if err != nil {
				return nil, templates.WithParamSet(err, i, r.Generator)
			}
			finish(app, set, params)
			if err := checkName(app.Name); err != nil {
				out.Problems = append(out.Problems, Problem{Name: app.Name,
					Err: fmt.Errorf("spec.template.metadata.name: %w (parameter set %d of generator %d)", err, i, r.Generator)})
				continue
			}
			out.Applications = append(out.Applications, app)
		}
	}
	out.dropDuplicates()
	if in.Clusters != nil {
		if err := out.checkDestinations(ctx, in.Clusters, l.projects); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// finish places a rendered Application in its ApplicationSet's namespace, labels it, and
// records the pull request it previews.
func finish(app *navarchv1.Application, set *navarchv1.ApplicationSet, params map[string]any) {
	app.Namespace = set.Namespace
	if app.Labels == nil {
		app.Labels = map[string]string{}
	}
	app.Labels[navarchv1.LabelApplicationSet] = set.Name
	if ref, ok := params[generators.ParamPullRequest].(string); ok {
		if app.Annotations == nil {
			app.Annotations = map[string]string{}
		}
		app.Annotations[navarchv1.AnnotationPullRequest] = ref
	}
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("rendered to an empty name")
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// dropDuplicates moves every Application whose name was generated more than once to Problems:
// writing one of them would silently lose the others.
func (e *Expansion) dropDuplicates() {
	count := map[string]int{}
	for _, app := range e.Applications {
		count[app.Name]++
	}
	kept := e.Applications[:0]
	reported := map[string]bool{}
	for _, app := range e.Applications {
		if count[app.Name] == 1 {
			kept = append(kept, app)
			continue
		}
		if !reported[app.Name] {
			reported[app.Name] = true
			e.Problems = append(e.Problems, Problem{Name: app.Name,
				Err: fmt.Errorf("spec.template.metadata.name: %q is generated by %d parameter sets; names must be unique", app.Name, count[app.Name])})
		}
	}
	e.Applications = kept
}

// checkDestinations moves to Problems the Applications whose destination names no registered
// Cluster and, with projects, those their Project refuses. It fails only when a Project
// cannot be read.
func (e *Expansion) checkDestinations(ctx context.Context, lister generators.ClusterLister, projects Projects) error {
	clusters, err := lister.ListClusters(ctx)
	if err != nil {
		return fmt.Errorf("list clusters: %w", err)
	}
	kept := e.Applications[:0]
	for _, app := range e.Applications {
		name, err := destination.Resolve(app.Spec.Destination, clusters)
		if err == nil && projects != nil {
			err = checkProject(ctx, projects, app, name, clusters)
			if err != nil && !project.IsRefusal(err) {
				return err
			}
		}
		if err != nil {
			e.Problems = append(e.Problems, Problem{Name: app.Name, Err: err})
			continue
		}
		kept = append(kept, app)
	}
	e.Applications = kept
	return nil
}

// checkProject asks app's Project whether app may be written: its namespace, sources and
// destination, the cluster named cluster.
func checkProject(ctx context.Context, projects Projects, app *navarchv1.Application, cluster string, clusters []navarchv1.Cluster) error {
	pol, err := projects.Project(ctx, project.NameOf(&app.Spec))
	if err != nil {
		return err
	}
	dest := project.ManagementCluster
	if i := slices.IndexFunc(clusters, func(c navarchv1.Cluster) bool { return c.Name == cluster }); i >= 0 {
		dest = project.DestinationOf(&clusters[i])
	}
	return pol.CheckApplication(app.Namespace, &app.Spec, dest)
}
