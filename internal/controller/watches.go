package controller

import (
	"context"
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// indexUsesClusters indexes ApplicationSets that have a clusters generator at any depth, so a
// Cluster event looks at those only instead of scanning every ApplicationSet.
const indexUsesClusters = "navarch.io/uses-clusters"

// SetupWithManager registers the reconciler and its watches. sources are more events to
// reconcile on, such as the ApplicationSets a webhook delivery concerns.
func (r *ApplicationSetReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int, sources ...source.Source) error {
	if r.Client == nil || r.Git == nil {
		return errMissingDependency("ApplicationSetReconciler needs Client and Git")
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &navarchv1.ApplicationSet{}, indexUsesClusters,
		func(o client.Object) []string {
			if len(clusterSelectors(&o.(*navarchv1.ApplicationSet).Spec)) > 0 {
				return []string{"true"}
			}
			return nil
		}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("applicationset").
		For(&navarchv1.ApplicationSet{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Owns(&navarchv1.Application{}, builder.WithPredicates(applicationChanged())).
		Watches(&navarchv1.ApplicationSet{}, r.written.handler()).
		Watches(&navarchv1.Cluster{}, r.clusterHandler()).
		Watches(&navarchv1.Project{}, r.projectHandler())
	for _, src := range sources {
		b = b.WatchesRawSource(src)
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: max(1, concurrency)}).Complete(r)
}

type errMissingDependency string

func (e errMissingDependency) Error() string { return string(e) }

// applicationChanged passes the Application events an ApplicationSet cares about: its spec or
// metadata edited (to revert it), deletion, and sync, health or operation changes (for its
// status and the commit statuses of previews).
func applicationChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*navarchv1.Application), e.ObjectNew.(*navarchv1.Application)
			return o.Generation != n.Generation ||
				!labels.Equals(o.Labels, n.Labels) ||
				!mapsEqual(o.Annotations, n.Annotations) ||
				!n.DeletionTimestamp.IsZero() ||
				o.Status.Sync.Status != n.Status.Sync.Status ||
				o.Status.Sync.Revision != n.Status.Sync.Revision ||
				o.Status.Health.Status != n.Status.Health.Status ||
				operationPhase(o) != operationPhase(n)
		},
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// clusterHandler requeues the ApplicationSets whose clusters generators select a Cluster,
// with its labels before or after the change.
func (r *ApplicationSetReconciler) clusterHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		var sets navarchv1.ApplicationSetList
		if err := r.Client.List(ctx, &sets, client.MatchingFields{indexUsesClusters: "true"}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List ApplicationSets for a Cluster event")
			return
		}
		for i := range sets.Items {
			set := &sets.Items[i]
			if selectsAny(set, objs) {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: set.Namespace, Name: set.Name}})
			}
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, n := e.ObjectOld.(*navarchv1.Cluster), e.ObjectNew.(*navarchv1.Cluster)
			if o.Generation == n.Generation && labels.Equals(o.Labels, n.Labels) && mapsEqual(o.Annotations, n.Annotations) {
				return // a status-only change: generators do not read status
			}
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

func selectsAny(set *navarchv1.ApplicationSet, objs []client.Object) bool {
	for _, sel := range clusterSelectors(&set.Spec) {
		for _, o := range objs {
			if sel.Matches(labels.Set(o.GetLabels())) {
				return true
			}
		}
	}
	return false
}

// clusterSelectors returns the selector of every clusters generator in spec, nested ones
// included. A selector that does not parse selects everything, so a change is never missed.
func clusterSelectors(spec *navarchv1.ApplicationSetSpec) []labels.Selector {
	var out []labels.Selector
	for _, g := range generatorsOf(spec) {
		if g.Clusters == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&g.Clusters.Selector)
		if err != nil {
			sel = labels.Everything()
		}
		out = append(out, sel)
	}
	return out
}

// generatorsOf returns every generator of spec, each as a NestedGenerator: the top-level ones
// and the children of matrix and merge generators, at any depth. A child that does not parse
// is left out; the ApplicationSet's pass reports it.
func generatorsOf(spec *navarchv1.ApplicationSetSpec) []navarchv1.NestedGenerator {
	var out []navarchv1.NestedGenerator
	var nested func(children []navarchv1.NestedGenerator)
	nested = func(children []navarchv1.NestedGenerator) {
		for _, c := range children {
			out = append(out, c)
			for _, raw := range [][]byte{rawOf(c.Matrix), rawOf(c.Merge)} {
				if len(raw) == 0 {
					continue
				}
				var inner struct {
					Generators []navarchv1.NestedGenerator `json:"generators"`
				}
				if json.Unmarshal(raw, &inner) == nil {
					nested(inner.Generators)
				}
			}
		}
	}
	for _, g := range spec.Generators {
		out = append(out, navarchv1.NestedGenerator{
			List: g.List, Clusters: g.Clusters, Git: g.Git, PullRequest: g.PullRequest, SCMProvider: g.SCMProvider, Selector: g.Selector,
		})
		switch {
		case g.Matrix != nil:
			nested(g.Matrix.Generators)
		case g.Merge != nil:
			nested(g.Merge.Generators)
		}
	}
	return out
}

func rawOf(j *apiextensionsv1.JSON) []byte {
	if j == nil {
		return nil
	}
	return j.Raw
}

func operationPhase(app *navarchv1.Application) navarchv1.OperationPhase {
	if app.Status.OperationState == nil {
		return ""
	}
	return app.Status.OperationState.Phase
}

// projectHandler requeues every ApplicationSet when a Project is created, changed or
// deleted: templates may compute spec.project, so which ApplicationSets a Project concerns is
// known only by rendering them. Projects change rarely.
func (r *ApplicationSetReconciler) projectHandler() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var sets navarchv1.ApplicationSetList
		if err := r.Client.List(ctx, &sets); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List ApplicationSets for a Project event")
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(sets.Items))
		for i := range sets.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sets.Items[i])})
		}
		return reqs
	})
}
