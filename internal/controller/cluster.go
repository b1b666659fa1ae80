package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
)

// +kubebuilder:rbac:groups=navarch.io,resources=clusters/status,verbs=get;update;patch

// ClusterReconciler connects to each registered Cluster through the cluster cache and probes it
// periodically, reporting Ready with a typed reason, the server version and the probe time.
type ClusterReconciler struct {
	Client client.Client
	// SecretReader reads kubeconfig Secrets (uncached: navarch does not watch Secrets).
	SecretReader client.Reader
	// Clusters is the cluster cache.
	Clusters *clustercache.Cache
	// ProbeInterval is how often a ready cluster is probed. Unready ones are probed more often.
	ProbeInterval time.Duration
	// Shards, when replicas share the fleet, is this replica's share: it connects to and
	// probes only the Clusters it holds.
	Shards *shards

	connected sync.Map // Cluster name → connection: what its Remote was made from
}

// connection is what a Cluster's Remote was connected with: the Cluster's version and its
// kubeconfig Secret's. A probe that finds both unchanged, and the cache still holding that
// Remote, reads the Secret's metadata only: every Cluster is probed every 30 seconds, and a
// kubeconfig Secret, its certificates and keys, is kilobytes to send and decode.
type connection struct {
	cluster, secret types.UID
	generation      int64
	resourceVersion string // the Secret's
	remote          *clustercache.Remote
}

// Reconcile connects to one Cluster and probes it.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !r.Shards.Owns(req.Name) {
		// Another replica syncs it, or none yet; membership releases what this replica held
		// and reconciles the Cluster again when it takes it. This replica's probe series of
		// it would only go stale.
		forgetClusterMetrics(req.Name)
		r.connected.Delete(req.Name)
		return ctrl.Result{}, nil
	}
	cluster := &navarchv1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Clusters.Remove(req.Name)
			forgetClusterMetrics(req.Name)
			r.connected.Delete(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cluster.DeletionTimestamp.IsZero() {
		r.Clusters.Remove(cluster.Name)
		forgetClusterMetrics(cluster.Name)
		r.connected.Delete(cluster.Name)
		return ctrl.Result{}, nil
	}
	before := cluster.Status.DeepCopy()
	version, err := r.probe(ctx, cluster)
	now := metav1.Now()
	reason := clustercache.ProbeReason(err)
	clusterProbes.WithLabelValues(cluster.Name, reason).Inc()
	clusterLastProbe.WithLabelValues(cluster.Name).Set(float64(now.Unix()))
	cluster.Status.ObservedGeneration = cluster.Generation
	cond := metav1.Condition{Type: navarchv1.ConditionReady, Status: metav1.ConditionTrue, Reason: reason,
		Message: "the API server answers", ObservedGeneration: cluster.Generation}
	if err != nil {
		cond.Status, cond.Message = metav1.ConditionFalse, truncate(err.Error(), 1024)
	} else {
		cluster.Status.ServerVersion = version
	}
	meta.SetStatusCondition(&cluster.Status.Conditions, cond)

	next := r.ProbeInterval
	if err != nil {
		next = min(next, 5*time.Second)
	}
	// A probe that finds the cluster as the status describes it writes nothing: an idle fleet
	// costs no writes. lastProbeTime is the probe that last changed the status; the metrics
	// count every probe.
	if before.LastProbeTime != nil && equality.Semantic.DeepEqual(withoutProbeTime(before), withoutProbeTime(&cluster.Status)) {
		return ctrl.Result{RequeueAfter: next}, nil
	}
	cluster.Status.LastProbeTime = &now
	patch := client.MergeFrom(&navarchv1.Cluster{ObjectMeta: cluster.ObjectMeta, Status: *before})
	if err := r.Client.Status().Patch(ctx, cluster, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("update the status of Cluster %s: %w", cluster.Name, err)
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// probe connects to the cluster and asks for its version.
func (r *ClusterReconciler) probe(ctx context.Context, cluster *navarchv1.Cluster) (string, error) {
	var kubeconfig []byte
	var conn connection
	if ref := cluster.Spec.KubeconfigSecretRef; ref != nil && !cluster.Spec.InCluster {
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		secretMeta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}
		if err := r.SecretReader.Get(ctx, key, secretMeta); err != nil {
			return "", secretError(cluster, ref, err)
		}
		conn = connection{cluster: cluster.UID, generation: cluster.Generation, secret: secretMeta.UID, resourceVersion: secretMeta.ResourceVersion}
		if remote, ok := r.stillConnected(cluster.Name, conn); ok {
			return remote.Probe(ctx)
		}
		secret := &corev1.Secret{}
		if err := r.SecretReader.Get(ctx, key, secret); err != nil {
			return "", secretError(cluster, ref, err)
		}
		// What was read, should the Secret have changed since its metadata was.
		conn.secret, conn.resourceVersion = secret.UID, secret.ResourceVersion
		dataKey := ref.Key
		if dataKey == "" {
			dataKey = "value"
		}
		if kubeconfig = secret.Data[dataKey]; len(kubeconfig) == 0 {
			return "", &clustercache.ConfigError{Cluster: cluster.Name, Err: fmt.Errorf("spec.kubeconfigSecretRef: Secret %s/%s has no key %q", ref.Namespace, ref.Name, dataKey)}
		}
	} else if !cluster.Spec.InCluster {
		return "", &clustercache.ConfigError{Cluster: cluster.Name, Err: fmt.Errorf("spec: set kubeconfigSecretRef or inCluster")}
	}
	remote, err := r.Clusters.Connect(cluster, kubeconfig)
	if err != nil {
		r.connected.Delete(cluster.Name)
		return "", err
	}
	if conn.secret != "" {
		conn.remote = remote
		r.connected.Store(cluster.Name, conn)
	}
	return remote.Probe(ctx)
}

// stillConnected returns the Remote of the Cluster named name when it was connected with what
// conn describes and the cache still holds it (it drops a Remote whose Cluster another replica
// took, or that was removed).
func (r *ClusterReconciler) stillConnected(name string, conn connection) (*clustercache.Remote, bool) {
	v, ok := r.connected.Load(name)
	if !ok {
		return nil, false
	}
	last := v.(connection)
	conn.remote = last.remote
	if last != conn {
		return nil, false
	}
	if current, err := r.Clusters.Get(name); err != nil || current != last.remote {
		return nil, false
	}
	return last.remote, true
}

func secretError(cluster *navarchv1.Cluster, ref *navarchv1.KubeconfigSecretRef, err error) error {
	return &clustercache.ConfigError{Cluster: cluster.Name, Err: fmt.Errorf("spec.kubeconfigSecretRef: read Secret %s/%s: %w", ref.Namespace, ref.Name, err)}
}

func withoutProbeTime(s *navarchv1.ClusterStatus) *navarchv1.ClusterStatus {
	c := s.DeepCopy()
	c.LastProbeTime = nil
	for i := range c.Conditions {
		c.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return c
}

// SetupWithManager registers the controller; each Cluster is probed by its own reconcile, so
// a slow cluster holds up one worker only.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.SecretReader == nil || r.Clusters == nil {
		return errMissingDependency("ClusterReconciler needs Client, SecretReader and Clusters")
	}
	if r.ProbeInterval <= 0 {
		r.ProbeInterval = 30 * time.Second
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&navarchv1.Cluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	opts := controller.Options{MaxConcurrentReconciles: 4}
	if r.Shards != nil {
		// Every replica probes the Clusters it holds, elected or not.
		b = b.WatchesRawSource(source.Channel(r.Shards.acquired, &handler.EnqueueRequestForObject{}))
		opts.NeedLeaderElection = new(false)
	}
	return b.WithOptions(opts).Named("cluster").Complete(r)
}
