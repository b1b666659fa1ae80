package controller

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/internal/membership"
)

// shards is this replica's share of the fleet when replicas share it (Options.ShardClusters;
// docs/scaling.md). internal/membership decides which Clusters this replica holds; shards
// starts and stops their workers and answers, for the router and the Cluster controller,
// whether a Cluster is this replica's to sync. A nil *shards owns every Cluster: one replica
// syncs the whole fleet.
type shards struct {
	membership *membership.Membership
	clusters   *clustercache.Cache
	apps       *ApplicationReconciler
	// acquired reconciles, through the Cluster controller, a Cluster this replica just took,
	// which connects to it; connecting requeues its Applications.
	acquired chan event.GenericEvent
	// elected is closed once this replica leads: the leader reports the Applications whose
	// destination names no Cluster, which no replica owns.
	elected <-chan struct{}
	log     logr.Logger
	ctx     context.Context

	mu    sync.RWMutex
	owned map[string]bool
	names []string // the Clusters last given to the membership, sorted
}

// newShards joins the membership of the replicas of the management cluster cfg reaches; the
// manager runs it on every replica, elected or not.
func newShards(ctx context.Context, mgr manager.Manager, cfg *rest.Config, opts Options) (*shards, error) {
	identity := opts.ReplicaIdentity
	if identity == "" {
		var err error
		if identity, err = defaultIdentity(); err != nil {
			return nil, err
		}
	}
	// Leases are judged by when their versions are seen, so they are read from the
	// apiserver, not from a cache.
	uncached, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("create the membership client: %w", err)
	}
	s := &shards{
		acquired: make(chan event.GenericEvent, 1024),
		elected:  mgr.Elected(),
		log:      opts.Logger.WithName("shards"),
		ctx:      ctx,
		owned:    map[string]bool{},
	}
	s.membership, err = membership.New(membership.Options{
		Client:        uncached,
		Namespace:     opts.SystemNamespace,
		Identity:      identity,
		LeaseDuration: opts.LeaseDuration,
		RenewDeadline: opts.RenewDeadline,
		RetryPeriod:   opts.RetryPeriod,
		Logger:        opts.Logger.WithName("membership"),
	}, s)
	if err != nil {
		return nil, err
	}
	if err := membership.RegisterMetrics(metrics.Registry); err != nil {
		return nil, err
	}
	if err := mgr.Add(everyReplica{manager.RunnableFunc(func(ctx context.Context) error {
		if err := s.followClusters(ctx, mgr.GetCache(), mgr.GetClient()); err != nil {
			return err
		}
		return s.membership.Start(ctx)
	})}); err != nil {
		return nil, err
	}
	return s, nil
}

// defaultIdentity is the Pod's name (POD_NAME, else the host name) and a random suffix, so
// that a replica restarted under the same name is a new member.
func defaultIdentity() (string, error) {
	name := os.Getenv("POD_NAME")
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("name this replica: %w", err)
		}
	}
	name = strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, name), "-")
	if len(name) > 200 {
		name = name[:200]
	}
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	if name == "" {
		name = "navarch"
	}
	return name + "-" + hex.EncodeToString(suffix), nil
}

// Owns says whether this replica syncs the named Cluster.
func (s *shards) Owns(cluster string) bool {
	if s == nil {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.owned[cluster]
}

// Leads says whether this replica reports what belongs to no Cluster: with sharding, the
// elected replica; without, the only one.
func (s *shards) Leads() bool {
	if s == nil {
		return true
	}
	select {
	case <-s.elected:
		return true
	default:
		return false
	}
}

// Identity names this replica; empty without sharding.
func (s *shards) Identity() string {
	if s == nil {
		return ""
	}
	return s.membership.Identity()
}

// Acquire implements membership.Handler: this replica now holds the Cluster's Lease. The
// Cluster controller connects to it, and the connection requeues its Applications.
func (s *shards) Acquire(cluster string) {
	s.mu.Lock()
	s.owned[cluster] = true
	s.mu.Unlock()
	if cluster == navarchv1.InClusterName {
		// The management cluster needs no Cluster object: its Applications connect on
		// their way through the router.
		s.apps.ClusterReady(s.ctx, cluster)
	}
	go func() {
		select {
		case s.acquired <- event.GenericEvent{Object: &navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}}:
		case <-s.ctx.Done():
		}
	}()
}

// Release implements membership.Handler: it gives the Cluster up, so the router no longer
// queues its Applications and the Cluster controller no longer connects to it, then stops its
// workers and waits for them.
func (s *shards) Release(ctx context.Context, cluster string) {
	s.mu.Lock()
	delete(s.owned, cluster)
	s.mu.Unlock()
	if err := s.clusters.Release(ctx, cluster); err != nil {
		s.log.Error(err, "Workers of a released Cluster did not stop in time", "cluster", cluster)
	}
}

// followClusters gives the membership the Clusters that exist now, and again whenever one is
// created, deleted or starts being deleted: not on every status write of a probe.
func (s *shards) followClusters(ctx context.Context, informers cache.Informers, c client.Reader) error {
	look := func() {
		if err := s.observe(ctx, c); err != nil && ctx.Err() == nil {
			s.log.Error(err, "Could not list the Clusters to share")
		}
	}
	informer, err := informers.GetInformer(ctx, &navarchv1.Cluster{})
	if err != nil {
		return fmt.Errorf("watch the Clusters to share: %w", err)
	}
	deleting := func(obj any) bool {
		o, ok := obj.(client.Object)
		return ok && !o.GetDeletionTimestamp().IsZero()
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { look() },
		DeleteFunc: func(any) { look() },
		UpdateFunc: func(old, obj any) {
			if deleting(old) != deleting(obj) {
				look()
			}
		},
	}); err != nil {
		return fmt.Errorf("watch the Clusters to share: %w", err)
	}
	look() // the management cluster, which needs no Cluster object, and a fleet of none
	return nil
}

// observe gives the membership the Clusters that exist, and the management cluster, which
// needs no Cluster object; it lists them from the manager's cache.
func (s *shards) observe(ctx context.Context, c client.Reader) error {
	var list navarchv1.ClusterList
	if err := c.List(ctx, &list); err != nil {
		return err
	}
	names := []string{navarchv1.InClusterName}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			names = append(names, list.Items[i].Name)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	s.mu.Lock()
	changed := !slices.Equal(s.names, names)
	s.names = names
	s.mu.Unlock()
	if changed {
		s.membership.SetClusters(names)
	}
	return nil
}

var _ membership.Handler = (*shards)(nil)

// relayRefresh hands a webhook push on to the replica that syncs app, when that is not this
// one, by asking for a refresh (the annotation navarch.io/refresh, which `navarch app refresh`
// sets too): that replica then looks the branch up anew. It reports whether app is another
// replica's; an Application whose destination names no Cluster is this replica's to report.
func (r *ApplicationReconciler) relayRefresh(ctx context.Context, app *navarchv1.Application) bool {
	name, err := r.destination(ctx, app)
	if err != nil || r.Shards.Owns(name) {
		return false
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`,
		navarchv1.AnnotationRefresh, time.Now().UTC().Format(time.RFC3339))))
	if err := r.Client.Patch(ctx, &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: app.Name}}, patch); err != nil {
		r.Shards.log.Error(err, "Could not hand a push on to the replica syncing the Application", "application", klog.KObj(app), "cluster", name)
	}
	return true
}
