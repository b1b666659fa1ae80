package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/engine"
	fleetsource "github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/destination"
	"github.com/navarch-io/navarch/internal/project"
)

// +kubebuilder:rbac:groups=navarch.io,resources=applications/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ApplicationReconciler syncs Applications to their clusters. Its controller-runtime side only
// routes: it finds an Application's destination cluster and queues the Application on that
// cluster's own queue in the cluster cache, whose workers run Process. A dead or slow cluster
// therefore never delays Applications of other clusters.
type ApplicationReconciler struct {
	Client   client.Client
	Clusters *clustercache.Cache
	Engine   *engine.Engine
	// Events records operation transitions as Kubernetes Events; optional.
	Events recorder.EventRecorder
	// UnavailableRequeue is how soon an Application whose cluster is unavailable is routed
	// again without an event; default 30s.
	UnavailableRequeue time.Duration
	// Shards, when replicas share the fleet, is this replica's share: it routes only the
	// Applications of the Clusters it holds, and, when elected, those whose destination
	// names no Cluster.
	Shards *shards

	// written remembers each Application as its last status write left it, so a worker never
	// acts on a cached copy older than its own last write.
	written ownWrites[*navarchv1.Application]

	// connected carries ClusterReady notices to the router.
	connected     chan event.GenericEvent
	connectedOnce sync.Once
}

// Reconcile routes one Application to its cluster's queue.
func (r *ApplicationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	app := &navarchv1.Application{}
	if err := r.Client.Get(ctx, req.NamespacedName, app); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.written.forget(req.NamespacedName)
			r.Engine.Forget(req.NamespacedName)
			r.Clusters.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	name, err := r.destination(ctx, app)
	if (err == nil && !r.Shards.Owns(name)) || (err != nil && !r.Shards.Leads()) {
		// Another replica syncs it and reports on it; when this replica takes its Cluster,
		// connecting requeues it.
		return ctrl.Result{}, nil
	}
	var remote *clustercache.Remote
	if err == nil {
		remote, err = r.remote(name)
	}
	if err == nil {
		err = remote.Ready()
	}
	if err == nil {
		remote.Enqueue(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if errors.Is(err, clustercache.ErrNotOwned) {
		return ctrl.Result{}, nil // given up meanwhile: its new holder reports on it
	}
	deleting := !app.DeletionTimestamp.IsZero()
	if deleting && errors.Is(err, destination.ErrNoCluster) {
		// The destination is no longer registered: nothing can delete its resources.
		return ctrl.Result{}, r.removeFinalizer(ctx, app)
	}
	// Report the unavailable cluster; its Cluster's next status change, or its connection,
	// requeues the Application.
	before := app.Status.DeepCopy()
	app.Status.Sync.Status = navarchv1.SyncStatusUnknown
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: navarchv1.ConditionReady, Status: metav1.ConditionFalse, Reason: navarchv1.ReasonClusterUnavailable,
		Message: truncate(err.Error(), 1024), ObservedGeneration: app.Generation,
	})
	if deleting && controllerutil.ContainsFinalizer(app, navarchv1.FinalizerResources) {
		r.deletionBlocked(ctx, app, err)
	}
	return ctrl.Result{RequeueAfter: cmp.Or(r.UnavailableRequeue, 30*time.Second)}, r.patchStatus(ctx, app, before)
}

// deletionBlocked says, in a condition and once in an Event and the log, why a deleted
// Application waits and what will happen.
func (r *ApplicationReconciler) deletionBlocked(ctx context.Context, app *navarchv1.Application, cause error) {
	msg := fmt.Sprintf("waiting to delete %d resources: the destination cluster is unavailable (%v); "+
		"deletion finishes when the cluster answers again; to give up on the resources instead, remove the finalizer %s",
		len(app.Status.Resources), cause, navarchv1.FinalizerResources)
	if c := meta.FindStatusCondition(app.Status.Conditions, navarchv1.ApplicationDeletionError); c == nil || c.Status != metav1.ConditionTrue {
		ctrl.LoggerFrom(ctx).Info("Deletion waits for an unavailable cluster", "application", klog.KObj(app), "reason", cause.Error())
		if r.Events != nil {
			r.Events.Eventf(app, nil, corev1.EventTypeWarning, "DeletionWaiting", "Delete", "%s", truncate(msg, 1024))
		}
	}
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: navarchv1.ApplicationDeletionError, Status: metav1.ConditionTrue, Reason: navarchv1.ReasonClusterUnavailable,
		Message: truncate(msg, 2048), ObservedGeneration: app.Generation,
	})
}

// remote returns the cluster cache's Remote of the named destination cluster.
func (r *ApplicationReconciler) remote(name string) (*clustercache.Remote, error) {
	if remote, err := r.Clusters.Get(name); err == nil || name != navarchv1.InClusterName {
		return remote, err
	}
	return r.Clusters.InCluster()
}

// destination resolves spec.destination to a Cluster name.
func (r *ApplicationReconciler) destination(ctx context.Context, app *navarchv1.Application) (string, error) {
	if destination.InCluster(app.Spec.Destination) {
		return navarchv1.InClusterName, nil
	}
	if name := app.Spec.Destination.Name; name != "" {
		// Every route and every pass asks: read the one Cluster, not a copy of them all.
		var c navarchv1.Cluster
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, &c); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return "", err
			}
			return destination.Resolve(app.Spec.Destination, nil)
		}
		return destination.Resolve(app.Spec.Destination, []navarchv1.Cluster{c})
	}
	var clusters navarchv1.ClusterList
	if err := r.Client.List(ctx, &clusters); err != nil {
		return "", err
	}
	return destination.Resolve(app.Spec.Destination, clusters.Items)
}

// Process reconciles one Application on its cluster: it runs on the cluster's own workers.
func (r *ApplicationReconciler) Process(ctx context.Context, remote *clustercache.Remote, key types.NamespacedName) (time.Duration, error) {
	app, err := r.written.get(ctx, r.Client, key, &navarchv1.Application{}) // the cache may not have seen our last write yet
	if err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if name, err := r.destination(ctx, app); err != nil || name != remote.Name {
		return 0, nil //nolint:nilerr // routed elsewhere meanwhile: the router queued it there
	}
	if remote.Ready() != nil {
		// The cluster is down (the router reports it). Look again soon: events that arrive
		// meanwhile must not be lost when the cluster answers again.
		return 5 * time.Second, nil //nolint:nilerr // the router reports the cluster's error
	}
	if !app.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, app, remote)
	}
	before := app.Status.DeepCopy()
	_, refresh := app.Annotations[navarchv1.AnnotationRefresh]
	res, err := r.Engine.Reconcile(ctx, app, remote, refresh)
	if err == nil && res.Quiet {
		return res.RequeueAfter, nil // nothing changed, nothing to write
	}
	app.Status.ObservedGeneration = app.Generation

	// The writes go in this order (docs/sync-waves-and-hooks.md, "Requesting one"): first the
	// request is cleared (and the refresh, the pause of a rollback), then the status records
	// the operation, and only then are the annotations it acknowledges removed. Whoever sees
	// an operation's state, finished or not, therefore sees its request gone.
	patchApp := func(edit func(*navarchv1.Application) bool) error {
		patch := client.MergeFrom(app.DeepCopy())
		if !edit(app) {
			return nil
		}
		status := app.Status.DeepCopy() // the response carries the stored status
		if err := r.Client.Patch(ctx, app, patch); err != nil {
			return fmt.Errorf("update the operation and annotations of %s: %w", key, err)
		}
		r.written.store(app)
		app.Status = *status
		return nil
	}
	setAnnotations := func(a *navarchv1.Application, remove bool) (changed bool) {
		for k, v := range res.Annotations {
			_, has := a.Annotations[k]
			switch {
			case remove && v == "" && has:
				delete(a.Annotations, k)
			case !remove && v != "" && a.Annotations[k] != v:
				if a.Annotations == nil {
					a.Annotations = map[string]string{}
				}
				a.Annotations[k] = v
			default:
				continue
			}
			changed = true
		}
		return changed
	}
	if perr := patchApp(func(a *navarchv1.Application) bool {
		cleared := res.ClearOperation && a.Operation != nil
		if cleared {
			a.Operation = nil
		}
		delete(a.Annotations, navarchv1.AnnotationRefresh)
		return setAnnotations(a, false) || cleared || refresh
	}); perr != nil {
		return 0, errors.Join(err, perr)
	}
	if err := errors.Join(err, r.patchStatus(ctx, app, before)); err != nil {
		return 0, err // a step that hit a transient error is saved, then retried with backoff
	}
	r.observe(ctx, app, before.OperationState, app.Status.OperationState)
	if err := patchApp(func(a *navarchv1.Application) bool { return setAnnotations(a, true) }); err != nil {
		return 0, err
	}
	r.Engine.Settled(key, res)
	return res.RequeueAfter, nil
}

// observe turns operation transitions into log lines, Kubernetes Events and metrics: each
// operation's start, every retry, and its end are logged once, at the default level, with the
// revision and the reason. The logger of ctx names the Application, its cluster and the
// reconcile.
func (r *ApplicationReconciler) observe(ctx context.Context, app *navarchv1.Application, before, after *navarchv1.OperationState) {
	if after == nil {
		return
	}
	log := ctrl.LoggerFrom(ctx).WithValues("revision", after.SyncResult.Revision)
	rev := fleetsource.ShortRevision(after.SyncResult.Revision)
	event := func(typ, reason, msg string) {
		if r.Events != nil {
			r.Events.Eventf(app, nil, typ, reason, "Sync", "%s", truncate(msg, 1024))
		}
	}
	started := before == nil || !before.StartedAt.Equal(&after.StartedAt)
	// An operation that starts and ends in the same pass was never seen running: its end's
	// Event says who started it, and no OperationStarted precedes it.
	startedBy := ""
	if started {
		who := "a user"
		switch {
		case after.Operation.InitiatedBy.Automated:
			who = "automated sync"
		case after.Operation.InitiatedBy.Username != "":
			who = after.Operation.InitiatedBy.Username
		}
		log.Info("Operation started", "initiatedBy", who)
		if after.Phase == navarchv1.OperationRunning {
			event(corev1.EventTypeNormal, "OperationStarted", fmt.Sprintf("sync of %s started by %s", rev, who))
		} else {
			startedBy = " (started by " + who + ")"
		}
	}
	if !started && after.RetryCount > before.RetryCount {
		next := ""
		if after.NextRetryAt != nil {
			next = after.NextRetryAt.UTC().Format(time.RFC3339)
		}
		log.Info("Operation failed; retrying", "retry", after.RetryCount, "nextRetryAt", next, "reason", after.Message)
		event(corev1.EventTypeWarning, "OperationRetrying", after.Message)
	}
	if after.Phase == navarchv1.OperationRunning || (!started && before.Phase == after.Phase) {
		return
	}
	if after.Phase == navarchv1.OperationSucceeded {
		log.Info("Operation succeeded", "message", after.Message)
		event(corev1.EventTypeNormal, "OperationSucceeded", fmt.Sprintf("synced %s%s: %s", rev, startedBy, after.Message))
	} else {
		log.Info("Operation ended", "phase", after.Phase, "reason", after.Message, "retries", after.RetryCount)
		msg := after.Message
		if startedBy != "" {
			msg = fmt.Sprintf("sync of %s%s: %s", rev, startedBy, msg)
		}
		event(corev1.EventTypeWarning, "Operation"+string(after.Phase), msg)
	}
	operationResults.WithLabelValues(string(after.Phase)).Inc()
	if after.FinishedAt != nil {
		operationDuration.WithLabelValues(string(after.Phase)).Observe(after.FinishedAt.Sub(after.StartedAt.Time).Seconds())
	}
}

// finalize deletes a deleted Application's resources, then lets it go.
func (r *ApplicationReconciler) finalize(ctx context.Context, app *navarchv1.Application, remote *clustercache.Remote) (time.Duration, error) {
	if !controllerutil.ContainsFinalizer(app, navarchv1.FinalizerResources) {
		return 0, nil
	}
	remaining, err := r.Engine.Delete(ctx, app, remote)
	if err != nil {
		return 0, err
	}
	if remaining > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for resources to be deleted", "remaining", remaining)
		return 5 * time.Second, nil // deletions also arrive as watch events
	}
	return 0, r.removeFinalizer(ctx, app)
}

func (r *ApplicationReconciler) removeFinalizer(ctx context.Context, app *navarchv1.Application) error {
	if !controllerutil.ContainsFinalizer(app, navarchv1.FinalizerResources) {
		return nil
	}
	patch := client.MergeFromWithOptions(app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(app, navarchv1.FinalizerResources)
	return client.IgnoreNotFound(r.Client.Patch(ctx, app, patch))
}

// patchStatus writes the status if it changed beyond the reconcile time.
func (r *ApplicationReconciler) patchStatus(ctx context.Context, app *navarchv1.Application, before *navarchv1.ApplicationStatus) error {
	after := app.Status.DeepCopy()
	after.ReconciledAt, before.ReconciledAt = nil, nil
	if equality.Semantic.DeepEqual(before, after) {
		return nil
	}
	patch := client.MergeFrom(&navarchv1.Application{ObjectMeta: app.ObjectMeta, Status: *before})
	if err := r.Client.Status().Patch(ctx, app, patch); err != nil {
		return fmt.Errorf("update the status of %s: %w", klog.KObj(app), err)
	}
	r.written.store(app)
	return nil
}

// SetupWithManager registers the router. Applications are routed when anything but their
// status changes; Clusters requeue their Applications when their readiness changes. sources
// are more events to route on, such as the Applications a webhook delivery concerns.
func (r *ApplicationReconciler) SetupWithManager(mgr ctrl.Manager, sources ...source.Source) error {
	if r.Client == nil || r.Clusters == nil || r.Engine == nil {
		return errMissingDependency("ApplicationReconciler needs Client, Clusters and Engine")
	}
	r.connectedOnce.Do(r.initConnected)
	b := ctrl.NewControllerManagedBy(mgr).
		For(&navarchv1.Application{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deleting{}))).
		Watches(&navarchv1.Application{}, r.written.handler()).
		Watches(&navarchv1.Cluster{}, r.clusterHandler()).
		Watches(&navarchv1.Project{}, r.projectHandler()).
		WatchesRawSource(source.Channel(r.connected, r.clusterHandler()))
	for _, src := range sources {
		b = b.WatchesRawSource(src)
	}
	opts := controller.Options{MaxConcurrentReconciles: 4}
	if r.Shards != nil {
		// Every replica routes the Applications of the Clusters it holds, elected or not.
		opts.NeedLeaderElection = new(false)
	}
	return b.WithOptions(opts).
		Named("application").
		Complete(r)
}

type handlerQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// deleting passes updates that start an object's deletion.
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// clusterHandler requeues the Applications of a Cluster whose readiness or spec changed.
func (r *ApplicationReconciler) clusterHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, c *navarchv1.Cluster, q handlerQueue) {
		var apps navarchv1.ApplicationList
		if err := r.Client.List(ctx, &apps, withoutStatusLists{}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List Applications for a Cluster event")
			return
		}
		for i := range apps.Items {
			d := apps.Items[i].Spec.Destination
			if destination.Names(d, c) || (c.Name == navarchv1.InClusterName && destination.InCluster(d)) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: apps.Items[i].Namespace, Name: apps.Items[i].Name}})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q handlerQueue) {
			enqueue(ctx, e.Object.(*navarchv1.Cluster), q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q handlerQueue) {
			o, n := e.ObjectOld.(*navarchv1.Cluster), e.ObjectNew.(*navarchv1.Cluster)
			if o.Generation == n.Generation && meta.IsStatusConditionTrue(o.Status.Conditions, navarchv1.ConditionReady) ==
				meta.IsStatusConditionTrue(n.Status.Conditions, navarchv1.ConditionReady) {
				return
			}
			enqueue(ctx, n, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q handlerQueue) {
			enqueue(ctx, e.Object.(*navarchv1.Cluster), q)
		},
		// Generic events come from the cluster cache when a cluster connects or answers again
		// (see ClusterReady), which a Cluster's status need not show: after a restart, it
		// already said Ready.
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q handlerQueue) {
			c := e.Object.(*navarchv1.Cluster)
			if c.Name != navarchv1.InClusterName {
				if err := r.Client.Get(ctx, types.NamespacedName{Name: c.Name}, c); err != nil {
					return // deleted meanwhile: its delete event requeues its Applications
				}
			}
			enqueue(ctx, c, q)
		},
	}
}

// projectHandler requeues the Applications of a Project that was created, changed or deleted,
// so that what it allows now applies at once.
func (r *ApplicationReconciler) projectHandler() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var apps navarchv1.ApplicationList
		if err := r.Client.List(ctx, &apps, withoutStatusLists{}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List Applications for a Project event")
			return nil
		}
		var reqs []reconcile.Request
		for i := range apps.Items {
			if project.NameOf(&apps.Items[i].Spec) == o.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&apps.Items[i])})
			}
		}
		return reqs
	})
}

func (r *ApplicationReconciler) initConnected() { r.connected = make(chan event.GenericEvent, 1024) }

// ClusterReady is the cluster cache's callback for a cluster that connected or answered again:
// it requeues the cluster's Applications, which may wait in the router for it.
func (r *ApplicationReconciler) ClusterReady(ctx context.Context, name string) {
	r.connectedOnce.Do(r.initConnected)
	go func() {
		select {
		case r.connected <- event.GenericEvent{Object: &navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}}:
		case <-ctx.Done():
		}
	}()
}
