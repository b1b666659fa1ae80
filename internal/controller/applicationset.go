// Package controller holds navarch's reconcilers: thin adapters that read API objects, call the
// pure packages (generators, templates, internal/appset) and write the results back. Run starts
// them in a controller-runtime manager, the same way for `navarch controller` and for tests.
package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/health"
	"github.com/navarch-io/navarch/generators"
	"github.com/navarch-io/navarch/internal/appset"
	"github.com/navarch-io/navarch/internal/scm"
	"github.com/navarch-io/navarch/templates"
)

// AnnotationConfirmDeletions confirms a deletion the budget blocked: its value must be the
// number of Applications the blocked pass would delete. It is cleared once used.
const AnnotationConfirmDeletions = "navarch.io/confirm-deletions"

// maxStatusApplications caps status.applications; the rest are counted.
const maxStatusApplications = 500

// The permissions of the controller (config/rbac is generated from these markers; more in
// application.go and cluster.go): cluster-wide access to navarch's kinds, and in its own
// namespace only, Secrets (repository credentials, kubeconfigs), Events and the
// leader-election Lease.
//
// +kubebuilder:rbac:groups=navarch.io,resources=applicationsets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=navarch.io,resources=applicationsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=navarch.io,resources=applications,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=navarch.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=navarch-system,resources=secrets,verbs=get;list
// +kubebuilder:rbac:groups="",namespace=navarch-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=navarch-system,resources=leases,verbs=get;list;watch;create;update;patch;delete

// ApplicationSetReconciler turns ApplicationSets into Applications and keeps them in line.
type ApplicationSetReconciler struct {
	Client client.Client
	// Projects checks each generated Application against its Project; optional.
	Projects appset.Projects
	// Git reads repositories for git generators.
	Git generators.GitReader
	// WriteConcurrency bounds the Application writes of one pass.
	WriteConcurrency int
	// MaxParamSets caps the parameter sets of one ApplicationSet.
	MaxParamSets int
	// ErrorRequeue is how soon a failed pass is retried.
	ErrorRequeue time.Duration
	// GitHub serves pullRequest and scmProvider generators and writes commit statuses;
	// without it those generators fail with an error naming their field.
	GitHub *scm.GitHub
	// Plugins asks generator plugins for the parameter sets of plugin generators; without it
	// those generators fail with an error naming their field.
	Plugins generators.PluginCaller
	// Events records rollout transitions as Kubernetes Events; optional.
	Events recorder.EventRecorder

	commitStatuses commitStatuses

	// written remembers each ApplicationSet as this controller's last write left it.
	written ownWrites[*navarchv1.ApplicationSet]
	// unseen are the Applications passes created that the cache has not shown yet.
	unseen unseenCreations
}

// Reconcile runs one generation pass: generate → render → check → create/update/delete.
func (r *ApplicationSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	start := time.Now()
	set, err := r.written.get(ctx, r.Client, req.NamespacedName, &navarchv1.ApplicationSet{}) // the cache may not have seen our last write yet
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.written.forget(req.NamespacedName)
			r.unseen.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !set.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // owner references let the garbage collector delete the Applications
	}
	outcome := "error" // until the pass succeeds
	defer func() { reconcileDuration.WithLabelValues(outcome).Observe(time.Since(start).Seconds()) }()
	_, refresh := set.Annotations[navarchv1.AnnotationRefresh]
	if err := r.clearAnnotation(ctx, set, navarchv1.AnnotationRefresh); err != nil {
		return ctrl.Result{}, err
	}

	before := set.Status.DeepCopy()
	in := generators.Inputs{
		Git:                r.Git,
		Clusters:           clusterLister{r.Client},
		Plugins:            r.Plugins,
		ApplicationSetName: set.Name,
		MaxParamSets:       r.MaxParamSets,
	}
	var github *scm.Providers
	if r.GitHub != nil {
		github = r.GitHub.For(set.Namespace)
		if refresh {
			github.Fresh()
		}
		in.PullRequests, in.SCMProviders = github, github
	}
	var opts []appset.Option
	if r.Projects != nil {
		opts = append(opts, appset.WithProjects(r.Projects))
	}
	exp, genErr := appset.Expand(ctx, set, in, opts...)
	requeue := r.rateLimits(set, github, genErr)
	if genErr != nil {
		reason := navarchv1.ReasonGeneratorError
		var fe *templates.FieldError
		if errors.As(genErr, &fe) {
			reason = navarchv1.ReasonTemplateError
		}
		generatorErrors.WithLabelValues(reason).Inc()
		log.Error(genErr, "Generation failed; no Application is created, updated or deleted", "applicationSet", klog.KObj(set))
		setCondition(set, navarchv1.ApplicationSetErrorOccurred, true, reason, genErr.Error())
		setCondition(set, navarchv1.ApplicationSetParametersGenerated, false, reason, genErr.Error())
		setCondition(set, navarchv1.ApplicationSetResourcesUpToDate, false, reason, "generation failed; Applications left as they were")
		return ctrl.Result{RequeueAfter: max(r.ErrorRequeue, requeue)}, r.patchStatus(ctx, set, before)
	}
	setCondition(set, navarchv1.ApplicationSetParametersGenerated, true, navarchv1.ReasonParametersGenerated,
		fmt.Sprintf("%d Applications generated", len(exp.Applications)))

	existing, err := r.ownedApplications(ctx, set)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Under a rollout the generated Applications do not sync on their own: the rollout starts
	// their syncs with the settings of the automated policy their template asks for.
	var settings map[string]syncSettings
	if rollingSync(set) {
		settings = make(map[string]syncSettings, len(exp.Applications))
		for _, app := range exp.Applications {
			settings[app.Name] = withoutAutomatedSync(app)
		}
	}
	p := r.plan(set, exp, existing, r.unseen.awaited(req.NamespacedName, existing, time.Now()))
	done := r.execute(ctx, &p)
	r.unseen.add(req.NamespacedName, done.createdNames, time.Now())
	for _, app := range p.delete {
		r.commitStatuses.written.Delete(app.UID)
	}
	writeErrs := done.errs
	for name, err := range p.errs {
		writeErrs[name] = err
	}
	if errs := len(writeErrs) + len(exp.Problems); errs > 0 || done.created+done.updated+done.deleted > 0 || p.held > 0 || p.deferred > 0 {
		kv := []any{"applicationSet", klog.KObj(set), "created", done.created, "updated", done.updated, "deleted", done.deleted,
			"errors", errs, "heldDeletions", p.held, "deferredDeletions", p.deferred, "awaitedCreations", p.awaited}
		if first := firstProblem(writeErrs, exp.Problems); first != "" {
			kv = append(kv, "firstError", first) // the others are in the status
		}
		log.Info("Applied ApplicationSet", kv...)
	}
	if p.heldBy == holdNone {
		// Used, or not needed: a stale confirmation must not approve a later deletion. A held
		// pass keeps it for the pass after the hold.
		if err := r.clearAnnotation(ctx, set, AnnotationConfirmDeletions); err != nil {
			return ctrl.Result{}, err
		}
	}
	applicationsPerSet.WithLabelValues(set.Namespace, set.Name).Set(float64(len(exp.Applications)))

	r.summarise(set, exp, existing, p, writeErrs)
	var rolloutRequeue time.Duration
	if rollingSync(set) {
		rolloutRequeue = r.rollout(ctx, set, exp.Applications, settings, existing)
	} else if set.Status.Rollout != nil || len(set.Status.ApplicationStatus) > 0 {
		set.Status.Rollout, set.Status.ApplicationStatus = nil, nil
		meta.RemoveStatusCondition(&set.Status.Conditions, navarchv1.ApplicationSetRolloutProgressing)
	}
	set.Status.ObservedGeneration = set.Generation
	if err := r.patchStatus(ctx, set, before); err != nil {
		return ctrl.Result{}, err
	}
	// A promotion is recorded in the status written above; only then is its request removed.
	if err := r.clearAnnotation(ctx, set, navarchv1.AnnotationPromote); err != nil {
		return ctrl.Result{}, err
	}
	statusFailed := r.reportCommitStatuses(ctx, set, github, existing)
	if len(writeErrs) > 0 || statusFailed {
		return ctrl.Result{RequeueAfter: r.ErrorRequeue}, nil
	}
	outcome = "success"
	after := generators.MinRequeue(max(exp.RequeueAfter, requeue), rolloutRequeue)
	if p.awaited > 0 {
		// Their watch events queue the next pass; this one only ends the wait of one the
		// cache never shows.
		after = generators.MinRequeue(after, unseenFor)
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// rateLimits sets the RateLimited condition from what GitHub reported during the pass, and
// returns how long the next pass should wait for GitHub: until a low or exhausted rate limit
// resets, or a secondary limit's Retry-After passes.
func (r *ApplicationSetReconciler) rateLimits(set *navarchv1.ApplicationSet, github *scm.Providers, genErr error) time.Duration {
	if github == nil {
		return 0
	}
	until, message := github.Throttle()
	var limited *scm.RateLimitedError
	if errors.As(genErr, &limited) {
		until, message = limited.Until, limited.Error()
	}
	if message == "" {
		if meta.FindStatusCondition(set.Status.Conditions, navarchv1.ApplicationSetRateLimited) != nil {
			setCondition(set, navarchv1.ApplicationSetRateLimited, false, navarchv1.ReasonRateLimitOK, "GitHub's rate limits leave room")
		}
		return 0
	}
	setCondition(set, navarchv1.ApplicationSetRateLimited, true, navarchv1.ReasonRateLimitLow, message)
	return time.Until(until) + time.Second
}

// plan is what one pass will write.
type plan struct {
	create, update, delete []*navarchv1.Application
	// live holds the live Application each update is computed from, for its merge patch.
	live map[string]*navarchv1.Application
	// held counts the deletions this pass holds back, heldBy says why.
	held   int
	heldBy hold
	// budget is the deletion budget when heldBy is holdBudget.
	budget int
	// errs are Applications that cannot be planned (a bad ignoreApplicationDifferences rule).
	errs map[string]error
	// deferred counts deletions that wait for a later step's (deletionOrder Reverse).
	deferred int
	// awaited counts the generated Applications an earlier pass created that the cache does not
	// show yet: they are neither created again nor reported.
	awaited int
}

// hold is why a pass deletes none of the Applications that are no longer generated.
type hold int

const (
	holdNone hold = iota
	// holdProblems: a parameter set has a problem (a name that is invalid or generated twice,
	// an unknown destination). The Applications that look gone may be the very ones whose new
	// rendering broke: one mistake in the name template would otherwise delete them all.
	holdProblems
	// holdBudget: more deletions than spec.syncPolicy.maxDeletions allows, unconfirmed.
	holdBudget
	// holdWrites: a create or update failed, e.g. the API server refused a new rendering.
	// As with holdProblems, the Applications that look gone may be the ones it replaces.
	holdWrites
)

func (r *ApplicationSetReconciler) plan(set *navarchv1.ApplicationSet, exp *appset.Expansion, existing map[string]*navarchv1.Application, awaited map[string]bool) plan {
	policy := navarchv1.ApplicationsSyncSync
	preserve := false
	if sp := set.Spec.SyncPolicy; sp != nil {
		if sp.ApplicationsSync != nil {
			policy = *sp.ApplicationsSync
		}
		preserve = sp.PreserveResourcesOnDeletion
	}
	mayUpdate := policy == navarchv1.ApplicationsSyncSync || policy == navarchv1.ApplicationsSyncCreateUpdate
	mayDelete := policy == navarchv1.ApplicationsSyncSync || policy == navarchv1.ApplicationsSyncCreateDelete

	p := plan{errs: map[string]error{}, live: map[string]*navarchv1.Application{}}
	generated := map[string]bool{}
	for _, app := range exp.Applications {
		generated[app.Name] = true
		desired := r.desired(set, app, preserve)
		live, ok := existing[app.Name]
		if !ok && awaited[app.Name] {
			p.awaited++
			continue
		}
		if !ok {
			p.create = append(p.create, desired)
			continue
		}
		if !mayUpdate {
			continue
		}
		updated, changed, err := merged(set, desired, live)
		switch {
		case err != nil:
			p.errs[app.Name] = err
		case changed:
			p.update = append(p.update, updated)
			p.live[app.Name] = live
		}
	}
	for _, pr := range exp.Problems {
		generated[pr.Name] = true // never delete an Application because its new rendering is broken
	}
	if !mayDelete {
		return p
	}
	for name, live := range existing {
		if !generated[name] && live.DeletionTimestamp.IsZero() {
			p.delete = append(p.delete, live)
		}
	}
	sort.Slice(p.delete, func(i, j int) bool { return p.delete[i].Name < p.delete[j].Name })
	if len(p.delete) == 0 {
		return p
	}
	if len(exp.Problems) > 0 {
		p.held, p.heldBy, p.delete = len(p.delete), holdProblems, nil
		return p
	}
	budget, limited := deletionBudget(set, len(existing))
	if limited && len(p.delete) > budget && set.Annotations[AnnotationConfirmDeletions] != fmt.Sprint(len(p.delete)) {
		p.held, p.heldBy, p.budget, p.delete = len(p.delete), holdBudget, budget, nil
		return p
	}
	p.delete, p.deferred = deletionsInOrder(set, p.delete, existing)
	return p
}

// deletionsInOrder applies strategy.deletionOrder Reverse: of the Applications to delete,
// only those of the last step that has any go now (Applications no step matches first), and
// only once no Application of a later step is still being deleted. It returns the deletions
// of this pass and how many wait.
func deletionsInOrder(set *navarchv1.ApplicationSet, deletes []*navarchv1.Application, existing map[string]*navarchv1.Application) (now []*navarchv1.Application, deferred int) {
	if !rollingSync(set) || set.Spec.Strategy.DeletionOrder != navarchv1.DeletionOrderReverse || len(deletes) == 0 {
		return deletes, 0
	}
	steps, err := compileSteps(set)
	if err != nil {
		return deletes, 0 // the rollout reports the error; deletions keep Argo CD's default order
	}
	// rank orders deletion: no step first, then the last step down to the first.
	rank := func(app *navarchv1.Application) int {
		if i := stepOf(steps, app); i >= 0 {
			return len(steps) - i
		}
		return 0
	}
	first := len(steps) + 1
	for _, app := range deletes {
		first = min(first, rank(app))
	}
	for _, app := range existing {
		if !app.DeletionTimestamp.IsZero() {
			first = min(first, rank(app)) // a later step still going: wait for it
		}
	}
	for _, app := range deletes {
		if rank(app) == first {
			now = append(now, app)
		} else {
			deferred++
		}
	}
	return now, deferred
}

// desired completes a rendered Application with what the controller owns: the owner
// reference and, unless resources are preserved, the resources finalizer.
func (r *ApplicationSetReconciler) desired(set *navarchv1.ApplicationSet, app *navarchv1.Application, preserve bool) *navarchv1.Application {
	app.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, navarchv1.GroupVersion.WithKind("ApplicationSet"))}
	if !preserve {
		controllerutil.AddFinalizer(app, navarchv1.FinalizerResources)
	}
	return app
}

// merged returns live with desired's spec, labels, annotations, the resources finalizer and
// the owner reference applied, and whether that changes anything. ignoreApplicationDifferences
// fields keep their live value. Labels and annotations are replaced wholesale, as Argo CD does,
// except the preserved ones (keptMetadata): a key the template no longer sets is removed.
func merged(set *navarchv1.ApplicationSet, desired, live *navarchv1.Application) (*navarchv1.Application, bool, error) {
	if err := appset.IgnoreDifferences(set.Spec.IgnoreApplicationDifferences, desired, live); err != nil {
		return nil, false, err
	}
	out := live.DeepCopy()
	changed := false
	if !equality.Semantic.DeepEqual(out.Spec, desired.Spec) {
		out.Spec = desired.Spec
		changed = true
	}
	var preserved navarchv1.ApplicationPreservedFields
	if set.Spec.PreservedFields != nil {
		preserved = *set.Spec.PreservedFields
	}
	for _, m := range []struct {
		have *map[string]string
		want map[string]string
	}{
		{&out.Labels, keptMetadata(desired.Labels, live.Labels, preserved.Labels)},
		{&out.Annotations, keptMetadata(desired.Annotations, live.Annotations, slices.Concat(preserved.Annotations, argoPreservedAnnotations))},
	} {
		if !maps.Equal(*m.have, m.want) {
			*m.have = m.want
			changed = true
		}
	}
	for _, f := range desired.Finalizers {
		if controllerutil.AddFinalizer(out, f) {
			changed = true
		}
	}
	// The resources finalizer is the controller's to manage: preserveResourcesOnDeletion
	// turned on removes it (other finalizers are left to whoever added them).
	if !slices.Contains(desired.Finalizers, navarchv1.FinalizerResources) && controllerutil.RemoveFinalizer(out, navarchv1.FinalizerResources) {
		changed = true
	}
	if ref := desired.OwnerReferences[0]; !slices.ContainsFunc(out.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == ref.UID }) {
		out.OwnerReferences = append(out.OwnerReferences, ref)
		changed = true
	}
	return out, changed, nil
}

// argoPreservedAnnotations are annotations other tools write on Applications that an update
// keeps, whatever the template says, as Argo CD's ApplicationSet controller does: Argo CD
// Notifications' delivery state, and a refresh request not yet handled.
var argoPreservedAnnotations = []string{"notified.notifications.argoproj.io", "argocd.argoproj.io/refresh"}

// keptMetadata is what the labels (or annotations) of a live Application become on update:
// the template's, plus two kinds of live keys with their live values. The live keys the
// template does not set that navarch or kubectl own: navarch.io/ keys, which navarch's
// controllers and CLI write (refresh, terminate-operation, automated-sync-paused,
// prune-confirmed, ...), and kubectl's last-applied-configuration. And the preserved keys
// (preservedFields, argoPreservedAnnotations), whose live value wins even over the template's.
func keptMetadata(desired, live map[string]string, preserved []string) map[string]string {
	out := maps.Clone(desired)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range live {
		if _, templated := desired[k]; !templated && (strings.HasPrefix(k, "navarch.io/") || k == corev1.LastAppliedConfigAnnotation) {
			out[k] = v
		}
	}
	for _, k := range preserved {
		if v, ok := live[k]; ok {
			out[k] = v
		}
	}
	return out
}

// deletionBudget is how many Applications one pass may delete, and whether there is a limit.
// A count means the same quoted or not ("3" and 3), as the schema allows both.
func deletionBudget(set *navarchv1.ApplicationSet, existing int) (int, bool) {
	if set.Spec.SyncPolicy == nil || set.Spec.SyncPolicy.MaxDeletions == nil {
		return 0, false
	}
	maxDeletions := intstr.Parse(set.Spec.SyncPolicy.MaxDeletions.String())
	budget, err := intstr.GetScaledValueFromIntOrPercent(&maxDeletions, existing, false)
	if err != nil {
		return 0, true // the schema prevents this; refuse deletions rather than guess
	}
	return budget, true
}

// applied is what execute did: the writes that succeeded and the ones that failed.
type applied struct {
	created, updated, deleted int
	// createdNames are the Applications created.
	createdNames []string
	// errs are the failed writes by Application name.
	errs map[string]error
}

// execute writes the plan with bounded concurrency: the creates and updates first, then the
// deletions, and those only if every create and update succeeded. Otherwise it holds them
// (holdWrites in p), so that a pass never deletes the Applications a refused one replaces.
func (r *ApplicationSetReconciler) execute(ctx context.Context, p *plan) applied {
	out := applied{errs: map[string]error{}}
	var writes []write
	for _, a := range p.create {
		writes = append(writes, write{a, "create"})
	}
	for _, a := range p.update {
		writes = append(writes, write{a, "update"})
	}
	r.writeAll(ctx, p, writes, &out)
	if len(p.delete) == 0 {
		return out
	}
	if len(out.errs) > 0 {
		p.held, p.heldBy, p.delete, p.deferred = len(p.delete)+p.deferred, holdWrites, nil, 0
		return out
	}
	deletes := make([]write, 0, len(p.delete))
	for _, a := range p.delete {
		deletes = append(deletes, write{a, "delete"})
	}
	r.writeAll(ctx, p, deletes, &out)
	return out
}

// write is one Application write of a pass.
type write struct {
	app *navarchv1.Application
	op  string
}

// writeAll makes writes, at most WriteConcurrency at a time, and counts them in out.
func (r *ApplicationSetReconciler) writeAll(ctx context.Context, p *plan, writes []write, out *applied) {
	log := ctrl.LoggerFrom(ctx)
	errs := make([]error, len(writes))
	wrote := make([]bool, len(writes))
	g := errgroup.Group{}
	g.SetLimit(max(1, r.WriteConcurrency))
	for i, w := range writes {
		g.Go(func() error {
			var err error
			switch w.op {
			case "create":
				err = r.Client.Create(ctx, w.app)
			case "update":
				// A merge patch of the difference, guarded by the resourceVersion it was
				// computed from: a concurrent edit makes it fail and the next pass retries.
				err = r.Client.Patch(ctx, w.app, client.MergeFromWithOptions(p.live[w.app.Name], client.MergeFromWithOptimisticLock{}))
			case "delete":
				if err = r.Client.Delete(ctx, w.app); apierrors.IsNotFound(err) {
					return nil // already gone: nothing to do, nothing wrong
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("%s Application %s: %w", w.op, w.app.Name, err)
				return nil
			}
			wrote[i] = true
			log.V(1).Info("Wrote Application", "op", w.op, "application", klog.KObj(w.app))
			return nil
		})
	}
	_ = g.Wait()
	for i, w := range writes {
		if errs[i] != nil {
			out.errs[w.app.Name] = errs[i]
		}
		if !wrote[i] {
			continue
		}
		switch w.op {
		case "create":
			out.created++
			out.createdNames = append(out.createdNames, w.app.Name)
		case "update":
			out.updated++
		case "delete":
			out.deleted++
		}
	}
}

// firstProblem is the message of the first failed write or generation problem, by name.
func firstProblem(writeErrs map[string]error, problems []appset.Problem) string {
	first, msg := "", ""
	for name, err := range writeErrs {
		if msg == "" || name < first {
			first, msg = name, err.Error()
		}
	}
	for _, pr := range problems {
		if msg == "" || pr.Name < first {
			first, msg = pr.Name, fmt.Sprintf("%s: %v", pr.Name, pr.Err)
		}
	}
	return msg
}

// summarise sets the conditions and the Application list of the status.
func (r *ApplicationSetReconciler) summarise(set *navarchv1.ApplicationSet, exp *appset.Expansion,
	existing map[string]*navarchv1.Application, p plan, writeErrs map[string]error) {
	var problems []string
	entries := map[string]navarchv1.ApplicationSetApplicationStatus{}
	for _, app := range exp.Applications {
		e := navarchv1.ApplicationSetApplicationStatus{Name: app.Name, Cluster: destinationName(app)}
		if live, ok := existing[app.Name]; ok {
			e.Sync, e.Health = live.Status.Sync.Status, live.Status.Health.Status
		}
		if err := writeErrs[app.Name]; err != nil {
			e.Message = err.Error()
			problems = append(problems, err.Error())
		}
		entries[app.Name] = e
	}
	for _, pr := range exp.Problems {
		key := pr.Name
		if key == "" {
			key = "(empty name)"
		}
		entries[key] = navarchv1.ApplicationSetApplicationStatus{Name: key, Message: pr.Err.Error()}
		problems = append(problems, fmt.Sprintf("%s: %v", key, pr.Err))
	}
	for name, err := range writeErrs {
		if _, ok := entries[name]; !ok {
			problems = append(problems, err.Error())
		}
	}
	sort.Strings(problems)

	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	// Applications with a message first, so problems are never cut off by the cap.
	sort.Slice(names, func(i, j int) bool {
		mi, mj := entries[names[i]].Message != "", entries[names[j]].Message != ""
		if mi != mj {
			return mi
		}
		return names[i] < names[j]
	})
	set.Status.ApplicationCount = int64(len(exp.Applications))
	set.Status.Health = setHealth(exp.Applications, existing)
	set.Status.Applications = nil
	for i, n := range names {
		if i == maxStatusApplications {
			break
		}
		set.Status.Applications = append(set.Status.Applications, entries[n])
	}
	set.Status.OmittedApplications = int64(max(0, len(names)-maxStatusApplications))

	switch {
	case p.heldBy == holdBudget:
		msg := fmt.Sprintf("this pass would delete %d Applications, over the budget of %d (spec.syncPolicy.maxDeletions); raise the budget, or confirm with the annotation %s=%d",
			p.held, p.budget, AnnotationConfirmDeletions, p.held)
		setCondition(set, navarchv1.ApplicationSetErrorOccurred, true, navarchv1.ReasonDeletionBudgetExceeded, msg)
		setCondition(set, navarchv1.ApplicationSetResourcesUpToDate, false, navarchv1.ReasonDeletionBudgetExceeded, msg)
	case len(problems) > 0:
		msg := fmt.Sprintf("%d Applications could not be written: %s", len(problems), truncate(strings.Join(problems, "; "), 2000))
		switch p.heldBy {
		case holdProblems:
			msg = fmt.Sprintf("%d Applications could not be written, so deletions are held back: none of the %d Applications no longer generated is deleted until every parameter set renders a valid, unique name and a registered destination: %s",
				len(problems), p.held, truncate(strings.Join(problems, "; "), 2000))
		case holdWrites:
			msg = fmt.Sprintf("%d Applications could not be written, so deletions are held back: none of the %d Applications no longer generated is deleted until every Application is written: %s",
				len(problems), p.held, truncate(strings.Join(problems, "; "), 2000))
		}
		setCondition(set, navarchv1.ApplicationSetErrorOccurred, true, navarchv1.ReasonApplicationError, msg)
		setCondition(set, navarchv1.ApplicationSetResourcesUpToDate, false, navarchv1.ReasonApplicationError, msg)
	default:
		setCondition(set, navarchv1.ApplicationSetErrorOccurred, false, navarchv1.ReasonApplicationSetUpToDate, "no error")
		setCondition(set, navarchv1.ApplicationSetResourcesUpToDate, true, navarchv1.ReasonApplicationSetUpToDate,
			fmt.Sprintf("all %d Applications are up to date", len(exp.Applications)))
	}
}

func destinationName(app *navarchv1.Application) string {
	if app.Spec.Destination.Name != "" {
		return app.Spec.Destination.Name
	}
	return app.Spec.Destination.Server
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func setCondition(set *navarchv1.ApplicationSet, typ string, status bool, reason, msg string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&set.Status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: truncate(msg, 30000), ObservedGeneration: set.Generation,
	})
}

// patchStatus writes the status only when it changed, so a no-op pass makes no write.
func (r *ApplicationSetReconciler) patchStatus(ctx context.Context, set *navarchv1.ApplicationSet, before *navarchv1.ApplicationSetStatus) error {
	if equality.Semantic.DeepEqual(before, &set.Status) {
		return nil
	}
	base := set.DeepCopy()
	base.Status = *before
	if err := r.Client.Status().Patch(ctx, set, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patch status: %w", err)
	}
	r.written.store(set)
	return nil
}

// clearAnnotation removes a one-shot annotation (refresh, confirm-deletions) once acted on.
func (r *ApplicationSetReconciler) clearAnnotation(ctx context.Context, set *navarchv1.ApplicationSet, key string) error {
	if _, ok := set.Annotations[key]; !ok {
		return nil
	}
	base := set.DeepCopy()
	delete(set.Annotations, key)
	if err := r.Client.Patch(ctx, set, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("clear annotation %s: %w", key, err)
	}
	r.written.store(set)
	return nil
}

// ownedApplications returns the Applications the ApplicationSet controls, by name, without
// their status lists: a pass reads their spec, sync, health and operation, and may list
// thousands.
func (r *ApplicationSetReconciler) ownedApplications(ctx context.Context, set *navarchv1.ApplicationSet) (map[string]*navarchv1.Application, error) {
	var list navarchv1.ApplicationList
	if err := r.Client.List(ctx, &list, client.InNamespace(set.Namespace),
		client.MatchingLabels{navarchv1.LabelApplicationSet: set.Name}, withoutStatusLists{}); err != nil {
		return nil, fmt.Errorf("list Applications: %w", err)
	}
	out := map[string]*navarchv1.Application{}
	for i := range list.Items {
		app := &list.Items[i]
		if ref := metav1.GetControllerOf(app); ref != nil && ref.UID == set.UID {
			out[app.Name] = app
		}
	}
	return out, nil
}

type clusterLister struct{ c client.Client }

func (l clusterLister) ListClusters(ctx context.Context) ([]navarchv1.Cluster, error) {
	var list navarchv1.ClusterList
	if err := l.c.List(ctx, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// setHealth is an ApplicationSet's own health: the worst health of its generated
// Applications, counting one not created yet as Missing, with the worst one named.
func setHealth(generated []*navarchv1.Application, existing map[string]*navarchv1.Application) *navarchv1.HealthStatus {
	healthy := 0
	worst, worstApp, why := navarchv1.HealthHealthy, "", ""
	for _, app := range generated {
		code, msg := navarchv1.HealthMissing, "not created yet"
		if live, ok := existing[app.Name]; ok {
			code, msg = live.Status.Health.Status, live.Status.Health.Message
			if code == "" {
				code, msg = navarchv1.HealthUnknown, "not assessed yet"
			}
		}
		if code == navarchv1.HealthHealthy {
			healthy++
		}
		if health.Worse(code, worst) {
			worst, worstApp, why = code, app.Name, msg
		}
	}
	out := &navarchv1.HealthStatus{Status: health.Worst(worst)}
	if worstApp != "" {
		out.Message = fmt.Sprintf("%d of %d Applications Healthy; %s is %s", healthy, len(generated), worstApp, out.Status)
		if why != "" {
			out.Message = truncate(out.Message+": "+why, 1024)
		}
	}
	return out
}
