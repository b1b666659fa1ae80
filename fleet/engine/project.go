package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/project"
)

// Projects tells the engine what the Project of each Application allows.
type Projects interface {
	// Policy returns app's Project, compiled, and app's destination cluster (named cluster)
	// as Projects name it. The error is a refusal (project.IsRefusal: the Project does not
	// exist or is invalid) or a failure to read.
	Policy(ctx context.Context, app *navarchv1.Application, cluster string) (*project.Policy, project.Destination, error)
	// ProjectOf returns the Project of the Application key names, and whether that
	// Application exists; the error is a failure to read.
	ProjectOf(ctx context.Context, key types.NamespacedName) (string, bool, error)
}

// policy is what one Application may do in one pass: its Project's policy, bound to its
// destination. A nil *policy allows everything (an Engine without Projects).
type policy struct {
	*project.Policy
	dest project.Destination
}

// policyOf returns what app may do, or the refusal of its Project: the Project is missing or
// invalid, or does not allow app's namespace, sources or destination.
func (e *Engine) policyOf(ctx context.Context, app *navarchv1.Application, remote *cluster) (*policy, error) {
	if e.opts.Projects == nil {
		return nil, nil
	}
	pol, dest, err := e.opts.Projects.Policy(ctx, app, remote.Name)
	if err != nil {
		return nil, err
	}
	if err := pol.CheckApplication(app.Namespace, &app.Spec, dest); err != nil {
		return nil, err
	}
	return &policy{Policy: pol, dest: dest}, nil
}

// checkSources checks the sources an operation names itself (an explicit source, or a
// rollback to a history entry's).
func (p *policy) checkSources(app *navarchv1.Application, sources []navarchv1.ApplicationSource) error {
	if p == nil {
		return nil
	}
	spec := app.Spec.DeepCopy()
	spec.Source, spec.Sources = navarchv1.ApplicationSource{}, sources
	return p.CheckApplication(app.Namespace, spec, p.dest)
}

// allowRepository says whether rendering may read the repository at url beyond the sources
// (a remote base, a chart dependency); a nil policy allows any.
func (p *policy) allowRepository(url string) error {
	if p == nil {
		return nil
	}
	if err := p.CheckRepository(url); err != nil {
		return fmt.Errorf("%w (reached while rendering)", err)
	}
	return nil
}

// checkObject says whether app may create or change r.
func (p *policy) checkObject(app *navarchv1.Application, r *resource) error {
	if p == nil {
		return nil
	}
	return p.CheckObject(app.Namespace, p.dest, project.Object{Group: r.gvk.Group, Kind: r.gvk.Kind, Name: r.ref.Name, Namespace: r.ref.Namespace})
}

// police marks the objects and hooks the Project does not allow app to create or change.
func (p *policy) police(app *navarchv1.Application, desired, hooks []*resource) {
	for _, r := range slices.Concat(desired, hooks) {
		r.forbidden = p.checkObject(app, r)
	}
}

// gate evaluates the Project's sync windows for app now.
func (p *policy) gate(app *navarchv1.Application, now time.Time) project.Gate {
	if p == nil {
		return project.Gate{Automated: true, Manual: true}
	}
	return p.Gate(app.Name, app.Spec.Destination.Namespace, p.dest, now)
}

// refuse records that app's Project refuses it: nothing is rendered or synced. A requested
// operation fails with the refusal, as does a running one.
func (e *Engine) refuse(app *navarchv1.Application, err error, res *Result) {
	reason := navarchv1.ReasonNotPermitted
	var nf *project.NotFoundError
	var inv *project.InvalidError
	if errors.As(err, &nf) || errors.As(err, &inv) {
		reason = navarchv1.ReasonProjectNotFound
	}
	msg := "refused by its Project: " + err.Error()
	if app.Operation != nil {
		res.ClearOperation = true
		if st := app.Status.OperationState; st == nil || st.Phase != navarchv1.OperationRunning {
			e.startOperation(app, *app.Operation, "")
		}
	}
	if st := app.Status.OperationState; st != nil && st.Phase == navarchv1.OperationRunning {
		e.finish(app, navarchv1.OperationFailed, msg)
	}
	app.Status.Sync.Status = navarchv1.SyncStatusUnknown
	if app.Status.Health.Status == "" {
		app.Status.Health = navarchv1.HealthStatus{Status: navarchv1.HealthUnknown}
	}
	e.Forget(types.NamespacedName{Namespace: app.Namespace, Name: app.Name}) // it renders nothing
	setCondition(app, navarchv1.ApplicationInvalidSpecError, metav1.ConditionTrue, reason, msg)
	removeCondition(app, navarchv1.ApplicationSyncBlocked)
	setReady(app)
}

// blocked records, or clears, the sync window that stops app's syncs.
func blocked(app *navarchv1.Application, g project.Gate, stopsAutomated bool) {
	if stopsAutomated && !g.Automated {
		setCondition(app, navarchv1.ApplicationSyncBlocked, metav1.ConditionTrue, navarchv1.ReasonSyncWindow, "syncs wait: "+g.Reason)
		return
	}
	removeCondition(app, navarchv1.ApplicationSyncBlocked)
}

// untilChange is how long until the gate may change, for a requeue; 0 if it never will.
func (e *Engine) untilChange(g project.Gate) time.Duration {
	if g.Change.IsZero() {
		return 0
	}
	return max(g.Change.Sub(e.opts.Now()), time.Second)
}

// takeovers records the objects an Application renders that another Application tracks and
// whose taking over the Projects refuse, so that the owner's status says so too.
type takeovers struct {
	mu sync.Mutex
	// byOwner maps an owner to the Applications refused its objects, with what they render.
	byOwner map[types.NamespacedName]map[types.NamespacedName][]string
	// requeue queues an Application of the cluster of each refused Application.
	requeue map[types.NamespacedName]func(types.NamespacedName)
}

// set replaces what intruder was refused, and requeues the owners whose record changed, with
// requeue (nil: the one intruder's last record gave).
func (t *takeovers) set(intruder types.NamespacedName, refused map[types.NamespacedName][]string, requeue func(types.NamespacedName)) {
	for _, owner := range t.update(intruder, refused, requeue) {
		owner.requeue(owner.key)
	}
}

type ownerRequeue struct {
	key     types.NamespacedName
	requeue func(types.NamespacedName)
}

func (t *takeovers) update(intruder types.NamespacedName, refused map[types.NamespacedName][]string, requeue func(types.NamespacedName)) []ownerRequeue {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byOwner == nil {
		t.byOwner = map[types.NamespacedName]map[types.NamespacedName][]string{}
		t.requeue = map[types.NamespacedName]func(types.NamespacedName){}
	}
	if requeue == nil {
		requeue = t.requeue[intruder]
	}
	if len(refused) > 0 {
		t.requeue[intruder] = requeue
	} else {
		delete(t.requeue, intruder)
	}
	var changed []types.NamespacedName
	for owner, claims := range t.byOwner {
		if _, still := refused[owner]; !still && claims[intruder] != nil {
			delete(claims, intruder)
			if len(claims) == 0 {
				delete(t.byOwner, owner)
			}
			changed = append(changed, owner)
		}
	}
	for owner, objs := range refused {
		claims := t.byOwner[owner]
		if claims == nil {
			claims = map[types.NamespacedName][]string{}
			t.byOwner[owner] = claims
		}
		if !slices.Equal(claims[intruder], objs) {
			claims[intruder] = objs
			changed = append(changed, owner)
		}
	}
	if requeue == nil {
		return nil
	}
	out := make([]ownerRequeue, 0, len(changed))
	for _, owner := range changed {
		out = append(out, ownerRequeue{owner, requeue})
	}
	return out
}

// of says which Applications were refused owner's objects.
func (t *takeovers) of(owner types.NamespacedName) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, intruder := range slices.SortedFunc(maps.Keys(t.byOwner[owner]), func(a, b types.NamespacedName) int {
		return strings.Compare(a.String(), b.String())
	}) {
		out = append(out, fmt.Sprintf("Application %s also renders %s, tracked by this Application; its Project may not take them over",
			intruder, strings.Join(t.byOwner[owner][intruder], ", ")))
	}
	return out
}

// takeoverError refuses an object another Application tracks.
type takeoverError struct {
	owner              types.NamespacedName
	what, theirs, mine string
}

func (e *takeoverError) Error() string {
	return fmt.Sprintf("%s is tracked by Application %s of Project %s, which does not let Project %s take it over", e.what, e.owner, e.theirs, e.mine)
}

// takeover says whether app may take over r, which another Application tracks: only when
// that one is in the default Project (today's warn-and-apply) or in app's own Project, and
// does not live in the controller's namespace while app does not.
func (e *Engine) takeover(ctx context.Context, app *navarchv1.Application, pol *policy, r *resource) error {
	if e.opts.Projects == nil || pol == nil {
		return nil
	}
	ns, name, _ := strings.Cut(r.sharedWith, "/")
	owner := types.NamespacedName{Namespace: ns, Name: name}
	mine := project.NameOf(&app.Spec)
	what := r.ref.Kind + " " + objName(r.obj)
	theirs, exists, err := e.opts.Projects.ProjectOf(ctx, owner)
	switch {
	case err != nil:
		return fmt.Errorf("%s is tracked by Application %s, whose Project cannot be read: %w", what, owner, err)
	case !exists:
		return nil
	case owner.Namespace == pol.ControlNamespace() && app.Namespace != owner.Namespace:
		return &takeoverError{owner: owner, what: what, theirs: theirs, mine: mine}
	case theirs == navarchv1.DefaultProject || theirs == mine:
		return nil
	}
	return &takeoverError{owner: owner, what: what, theirs: theirs, mine: mine}
}

// checkTakeovers refuses each compared object that another Application tracks and app may
// not take over.
func (e *Engine) checkTakeovers(ctx context.Context, app *navarchv1.Application, pol *policy, resources []*resource) {
	for _, r := range resources {
		if r.sharedWith != "" && r.forbidden == nil && !r.prune {
			r.forbidden = e.takeover(ctx, app, pol, r)
		}
	}
}

// recordTakeovers remembers the objects of app the comparison c refused to take over, so that
// their owners' status says so too, and requeues the owners whose record changed.
func (e *Engine) recordTakeovers(app *navarchv1.Application, c *comparison, requeue func(types.NamespacedName)) {
	refused := map[types.NamespacedName][]string{}
	for _, r := range c.resources {
		if te := (*takeoverError)(nil); errors.As(r.forbidden, &te) {
			refused[te.owner] = append(refused[te.owner], te.what)
		}
	}
	e.takeovers.set(types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, refused, requeue)
}

// Forget drops what the engine remembers of a deleted Application: the objects of other
// Applications it was refused, whose owners are requeued to clear their warning.
func (e *Engine) Forget(app types.NamespacedName) {
	e.takeovers.set(app, nil, nil)
	e.quiet.set(app, quietPass{}, false)
}
