package controller

import (
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/project"
)

// +kubebuilder:rbac:groups=navarch.io,namespace=navarch-system,resources=projects,verbs=get;list;watch;create

// projects reads Projects from the manager's cache and compiles each version once. It
// implements engine.Projects and appset.Projects.
type projects struct {
	client    client.Reader
	namespace string // the controller's namespace, where Projects live

	mu       sync.Mutex
	compiled map[string]compiledProject // by name
}

// projectReads and clusterReads lend the objects that Policy reads (see lender): every pass,
// quiet ones included, asks for its Application's Project and Cluster.
var (
	projectReads lender[navarchv1.Project]
	clusterReads lender[navarchv1.Cluster]
)

type compiledProject struct {
	resourceVersion string
	policy          *project.Policy
	err             error
}

// Project returns the Project named name, compiled. The error is a refusal
// (*project.NotFoundError, *project.InvalidError) or a failure to read.
func (p *projects) Project(ctx context.Context, name string) (*project.Policy, error) {
	proj := projectReads.get()
	defer projectReads.put(proj)
	if err := p.client.Get(ctx, types.NamespacedName{Namespace: p.namespace, Name: name}, proj, sharedRead...); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &project.NotFoundError{Name: name, Namespace: p.namespace}
		}
		return nil, fmt.Errorf("read Project %s: %w", name, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.compiled[name]; ok && c.resourceVersion == proj.ResourceVersion {
		return c.policy, c.err
	}
	pol, err := project.Compile(proj.DeepCopy(), p.namespace) // its own copy: proj is lent
	if err != nil {
		err = &project.InvalidError{Name: name, Err: err}
	}
	if p.compiled == nil {
		p.compiled = map[string]compiledProject{}
	}
	p.compiled[name] = compiledProject{resourceVersion: proj.ResourceVersion, policy: pol, err: err}
	return pol, err
}

// destination returns the Cluster named cluster as Projects name it.
func (p *projects) destination(ctx context.Context, cluster string) (project.Destination, error) {
	if cluster == navarchv1.InClusterName {
		return project.ManagementCluster, nil
	}
	c := clusterReads.get()
	defer clusterReads.put(c)
	if err := p.client.Get(ctx, types.NamespacedName{Name: cluster}, c, sharedRead...); err != nil {
		return project.Destination{}, fmt.Errorf("read Cluster %s: %w", cluster, err)
	}
	return project.DestinationOf(c), nil
}

// Policy implements engine.Projects.
func (p *projects) Policy(ctx context.Context, app *navarchv1.Application, cluster string) (*project.Policy, project.Destination, error) {
	pol, err := p.Project(ctx, project.NameOf(&app.Spec))
	if err != nil {
		return nil, project.Destination{}, err
	}
	dest, err := p.destination(ctx, cluster)
	return pol, dest, err
}

// ProjectOf implements engine.Projects.
func (p *projects) ProjectOf(ctx context.Context, key types.NamespacedName) (string, bool, error) {
	var app navarchv1.Application
	if err := p.client.Get(ctx, key, &app); err != nil {
		if apierrors.IsNotFound(err) {
			return "", false, nil
		}
		return "", false, err
	}
	return project.NameOf(&app.Spec), true, nil
}

// ensureDefaultProject creates the default Project, which allows everything, unless a Project
// of that name exists: Applications without spec.project belong to it, so that YAML written
// before Projects keeps working. An existing default Project is never changed, so an
// administrator may narrow it.
func ensureDefaultProject(ctx context.Context, c client.Client, namespace string) error {
	def := &navarchv1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: navarchv1.DefaultProject, Namespace: namespace},
		Spec: navarchv1.ProjectSpec{
			Description:              "Applications without spec.project: everything is allowed",
			SourceRepos:              []string{"*"},
			Destinations:             []navarchv1.ProjectDestination{{Name: "*", Server: "*", Namespace: "*"}},
			ClusterResourceWhitelist: []navarchv1.GroupKind{{Group: "*", Kind: "*"}},
			SourceNamespaces:         []string{"*"},
		},
	}
	if err := c.Create(ctx, def); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the default Project in %s: %w", namespace, err)
	}
	return nil
}
