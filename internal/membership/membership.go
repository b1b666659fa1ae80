// Package membership lets several navarch controller replicas share the fleet, coordinated
// through coordination.k8s.io/v1 Leases in the management cluster's system namespace.
//
// Each replica is a member: it holds a Lease named navarch-member-<identity>, renewed every
// RetryPeriod, and deletes it when it stops cleanly. The Clusters are assigned to the live
// members by rendezvous hashing (Owner), so a replica joining or leaving moves only its share.
//
// Assignment alone does not keep two replicas off one Cluster: their views of who is live
// differ for a moment whenever a member joins, leaves or dies. So each Cluster also has a Lease,
// navarch-cluster-<name>, and a replica runs a Cluster's workers only while it holds that Lease:
//
//   - it takes the Lease only when it is free, released, already its own, or expired as judged
//     by its own clock (see observation), and only then starts the workers (Handler.Acquire);
//   - when the Cluster is assigned elsewhere it stops the workers first (Handler.Release,
//     which blocks until they have stopped) and only then releases the Lease;
//   - when it has not renewed a Lease for RenewDeadline, shorter than LeaseDuration, it stops
//     that Cluster's workers on its own: it may have been cut off from the management cluster,
//     and another replica may take the Lease once LeaseDuration has passed. This is what keeps
//     a partitioned replica from syncing alongside its successor (split brain).
//
// A replica that dies without releasing (SIGKILL) has its Clusters taken over once its Leases
// expire, within LeaseDuration of its last renewal plus a RetryPeriod. Because expiry is judged
// from when a replica first sees a Lease, a replica that starts counts every member Lease it
// finds as live for one LeaseDuration, including those of replicas that died earlier; their
// Clusters wait for that long, and their member Leases are deleted after another one.
//
// The controller runs a Membership as a manager Runnable, feeds it the Cluster names from its
// informer (SetClusters), and starts and stops each Cluster's workers from the Handler.
package membership

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels and names of the Leases.
const (
	// LabelPartOf and PartOf mark every Lease of this package.
	LabelPartOf = "app.kubernetes.io/part-of"
	PartOf      = "navarch"
	// LabelRole tells member Leases (RoleMember) from Cluster Leases (RoleCluster).
	LabelRole   = "navarch.io/role"
	RoleMember  = "member"
	RoleCluster = "cluster"
	// AnnotationCluster holds the Cluster name on a Cluster Lease, whose own name may be
	// shortened.
	AnnotationCluster = "navarch.io/cluster"

	memberPrefix  = "navarch-member-"
	clusterPrefix = "navarch-cluster-"
)

// Production defaults, as client-go's leader election and controller-runtime use them.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Options configure a Membership.
type Options struct {
	// Client reaches the management cluster. It must read Leases from the apiserver, not from
	// a cache (e.g. client.New, not a manager's client): the Leases are judged by when their
	// versions are seen.
	Client client.Client
	// Namespace holds the Leases, e.g. navarch-system.
	Namespace string
	// Identity names this replica, unique among live replicas: e.g. the Pod name and a random
	// suffix. It must make a valid Lease name after "navarch-member-".
	Identity string
	// LeaseDuration is how long other replicas wait, after they last saw a Lease renewed,
	// before they treat it as expired. Default 15s.
	LeaseDuration time.Duration
	// RenewDeadline is how long this replica keeps a Cluster's workers running without
	// renewing its Lease. RenewDeadline + RetryPeriod must be less than LeaseDuration: the
	// rest is the time the workers have to stop. Default 10s.
	RenewDeadline time.Duration
	// RetryPeriod is how often Leases are listed and renewed, and bounds each request.
	// Default 2s.
	RetryPeriod time.Duration
	// Clock is the time source. Default the real clock.
	Clock clock.Clock
	// Logger logs acquisitions, releases and failures.
	Logger logr.Logger
}

// Handler starts and stops the workers of Clusters.
type Handler interface {
	// Acquire starts the cluster's workers; this replica now holds its Lease. It must not
	// block.
	Acquire(cluster string)
	// Release stops the cluster's workers and returns only once they have stopped: the Lease
	// is released (or left to expire) right after. It should return well within
	// LeaseDuration - RenewDeadline - RetryPeriod.
	Release(ctx context.Context, cluster string)
}

// Membership is one replica's membership. Start runs it; the other methods are safe for
// concurrent use.
type Membership struct {
	opts    Options
	handler Handler
	log     logr.Logger
	wake    chan struct{}

	// Used by Start's goroutine only.
	observer      *observer
	held          map[string]time.Time // Cluster → when its last successful Lease write was sent
	memberRenewed time.Time            // when the last successful member Lease write was sent

	// abandon makes Start return without releasing anything, as if the process were killed.
	abandon atomic.Bool

	mu       sync.Mutex
	clusters map[string]bool
	owned    []string
	members  []string
}

// New returns the membership of the replica opts.Identity, which will start and stop the
// workers of its Clusters through h.
func New(opts Options, h Handler) (*Membership, error) {
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.RenewDeadline <= 0 {
		opts.RenewDeadline = DefaultRenewDeadline
	}
	if opts.RetryPeriod <= 0 {
		opts.RetryPeriod = DefaultRetryPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	switch {
	case opts.Client == nil:
		return nil, errors.New("membership: no client")
	case h == nil:
		return nil, errors.New("membership: no handler")
	case opts.Namespace == "":
		return nil, errors.New("membership: no namespace")
	case opts.RenewDeadline+opts.RetryPeriod >= opts.LeaseDuration:
		return nil, fmt.Errorf("membership: RenewDeadline (%s) + RetryPeriod (%s) must be less than LeaseDuration (%s), "+
			"so that workers stop before other replicas take their Clusters", opts.RenewDeadline, opts.RetryPeriod, opts.LeaseDuration)
	}
	if errs := validation.IsDNS1123Subdomain(memberPrefix + opts.Identity); opts.Identity == "" || len(errs) > 0 {
		return nil, fmt.Errorf("membership: identity %q does not make a valid Lease name: %v", opts.Identity, errs)
	}
	return &Membership{
		opts:     opts,
		handler:  h,
		log:      opts.Logger.WithValues("member", opts.Identity),
		wake:     make(chan struct{}, 1),
		observer: newObserver(),
		held:     map[string]time.Time{},
		clusters: map[string]bool{},
	}, nil
}

// SetClusters sets the Clusters that exist, e.g. from the Cluster informer; Clusters not in
// names are released. Assignment starts with the first call.
func (m *Membership) SetClusters(names []string) {
	m.mu.Lock()
	m.clusters = map[string]bool{}
	for _, n := range names {
		m.clusters[n] = true
	}
	m.mu.Unlock()
	m.nudge()
}

// Owned returns the Clusters whose workers this replica runs, sorted.
func (m *Membership) Owned() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.owned)
}

// Members returns the live members as this replica last saw them, itself included, sorted.
func (m *Membership) Members() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.members)
}

// Identity returns this replica's identity.
func (m *Membership) Identity() string { return m.opts.Identity }

func (m *Membership) nudge() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Start holds the membership until ctx is done, then stops the workers of every Cluster it
// holds, releases their Leases and deletes its member Lease. It always returns nil.
func (m *Membership) Start(ctx context.Context) error {
	defer forgetMetrics(m.opts.Identity)
	for {
		wait := m.round(ctx)
		timer := m.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-m.wake:
		case <-timer.C():
		}
		timer.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	if m.abandon.Load() {
		return nil
	}
	m.shutdown()
	return nil
}

// round lists the Leases, renews this replica's own, and brings the Clusters it holds in line
// with the assignment. It returns how long to wait before the next round.
func (m *Membership) round(ctx context.Context) time.Duration {
	m.fence(ctx)
	var list coordinationv1.LeaseList
	err := m.request(ctx, func(ctx context.Context) error {
		return m.opts.Client.List(ctx, &list, client.InNamespace(m.opts.Namespace), client.MatchingLabels{LabelPartOf: PartOf})
	})
	if err != nil {
		leaseFailures.WithLabelValues(m.opts.Identity, opList).Inc()
		m.log.Error(err, "Could not list the Leases")
		return m.nextRound()
	}
	now := m.opts.Clock.Now()
	var own *coordinationv1.Lease
	memberObs := map[string]observation{}
	clusterLeases := map[string]*coordinationv1.Lease{}
	clusterObs := map[string]observation{}
	names := map[string]bool{}
	for i := range list.Items {
		l := &list.Items[i]
		names[l.Name] = true
		obs := m.observer.observe(l.Name, l.ResourceVersion, holderOf(l), durationOf(l, m.opts.LeaseDuration), now)
		switch l.Labels[LabelRole] {
		case RoleMember:
			if l.Name == memberPrefix+m.opts.Identity {
				own = l
			} else {
				memberObs[l.Name] = obs
			}
		case RoleCluster:
			if c := l.Annotations[AnnotationCluster]; c != "" {
				clusterLeases[c], clusterObs[c] = l, obs
			}
		}
	}
	m.observer.keepOnly(names)

	m.renewMember(ctx, own)
	live := m.liveMembers(memberObs, now)
	m.mu.Lock()
	exists := maps.Clone(m.clusters)
	m.mu.Unlock()
	desired := map[string]bool{}
	for c := range exists {
		if Owner(c, live) == m.opts.Identity {
			desired[c] = true
		}
	}

	// Renew first, so that releasing (which waits for workers) cannot delay the renewals of
	// the Clusters this replica keeps.
	for _, c := range slices.Sorted(maps.Keys(m.held)) {
		if desired[c] {
			m.renew(ctx, c, clusterLeases[c])
		}
	}
	for _, c := range slices.Sorted(maps.Keys(m.held)) {
		if !desired[c] {
			m.release(ctx, c, !exists[c], "assigned to another member")
		}
	}
	for _, c := range slices.Sorted(maps.Keys(desired)) {
		if _, ok := m.held[c]; !ok {
			m.acquire(ctx, c, clusterLeases[c], clusterObs[c], now)
		}
	}
	m.collectMembers(ctx, list.Items, memberObs, now)
	m.publish(live)
	return m.nextRound()
}

// request runs one API request, bounded by RetryPeriod so that a hung connection cannot hold
// the loop past a Lease's deadline (see fence).
func (m *Membership) request(ctx context.Context, do func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, m.opts.RetryPeriod)
	defer cancel()
	return do(ctx)
}

// nextRound is how long to wait until the next round: RetryPeriod, or less if the renewal
// deadline of a held Cluster comes sooner, so that fence runs on time.
func (m *Membership) nextRound() time.Duration {
	wait := m.opts.RetryPeriod
	now := m.opts.Clock.Now()
	for _, renewed := range m.held {
		if d := renewed.Add(m.opts.RenewDeadline).Sub(now); d < wait {
			wait = d
		}
	}
	return max(wait, time.Millisecond)
}

// fence stops the workers of every Cluster whose Lease this replica has not renewed for
// RenewDeadline. Other replicas may take such a Lease once LeaseDuration has passed since they
// saw it renewed, which is never before LeaseDuration after the renewal was sent; stopping at
// RenewDeadline leaves the workers that difference to stop.
func (m *Membership) fence(ctx context.Context) {
	now := m.opts.Clock.Now()
	for _, c := range slices.Sorted(maps.Keys(m.held)) {
		if now.Sub(m.held[c]) >= m.opts.RenewDeadline {
			m.log.Info("Stopping the workers of a Cluster whose Lease could not be renewed in time", "cluster", c, "renewDeadline", m.opts.RenewDeadline)
			m.stop(ctx, c)
		}
	}
}

// stop stops the workers of cluster and forgets that this replica holds its Lease.
func (m *Membership) stop(ctx context.Context, cluster string) {
	m.handler.Release(ctx, cluster)
	delete(m.held, cluster)
	m.setOwned()
}

// renewMember creates or renews this replica's member Lease.
func (m *Membership) renewMember(ctx context.Context, own *coordinationv1.Lease) {
	sent := m.opts.Clock.Now()
	var lease *coordinationv1.Lease
	if own == nil {
		lease = m.newLease(memberPrefix+m.opts.Identity, RoleMember, "", sent)
	} else {
		lease = own.DeepCopy()
		m.hold(lease, sent)
	}
	err := m.request(ctx, func(ctx context.Context) error {
		if own == nil {
			return m.opts.Client.Create(ctx, lease)
		}
		return m.opts.Client.Update(ctx, lease)
	})
	if err != nil {
		leaseFailures.WithLabelValues(m.opts.Identity, opMember).Inc()
		m.log.Error(err, "Could not renew the member Lease")
		return
	}
	m.memberRenewed = sent
}

// liveMembers returns the identities of the live members: those whose Lease has a holder and
// has not expired by this replica's clock, and this replica itself while its own member Lease
// is renewed within RenewDeadline.
func (m *Membership) liveMembers(others map[string]observation, now time.Time) []string {
	var live []string
	if !m.memberRenewed.IsZero() && now.Sub(m.memberRenewed) < m.opts.RenewDeadline {
		live = append(live, m.opts.Identity)
	}
	for _, obs := range others {
		if obs.holder != "" && obs.holder != m.opts.Identity && !obs.expired(now) {
			live = append(live, obs.holder)
		}
	}
	slices.Sort(live)
	return slices.Compact(live)
}

// renew renews the Lease of a held cluster. If another replica holds it now, the workers stop
// at once.
func (m *Membership) renew(ctx context.Context, cluster string, lease *coordinationv1.Lease) {
	m.fence(ctx) // an earlier request of this round may have taken up to RetryPeriod
	if _, ok := m.held[cluster]; !ok {
		return
	}
	if lease == nil || holderOf(lease) != m.opts.Identity {
		m.log.Error(errors.New("the Cluster's Lease is no longer this replica's"), "Stopping the workers of a lost Cluster", "cluster", cluster)
		m.stop(ctx, cluster)
		return
	}
	sent := m.opts.Clock.Now()
	lease = lease.DeepCopy()
	m.hold(lease, sent)
	if err := m.request(ctx, func(ctx context.Context) error { return m.opts.Client.Update(ctx, lease) }); err != nil {
		leaseFailures.WithLabelValues(m.opts.Identity, opRenew).Inc()
		m.log.Error(err, "Could not renew a Cluster's Lease", "cluster", cluster)
		return
	}
	m.held[cluster] = sent
}

// acquire takes the Lease of cluster if it is free, released, already this replica's, or
// expired by this replica's clock, and then starts the cluster's workers.
func (m *Membership) acquire(ctx context.Context, cluster string, lease *coordinationv1.Lease, obs observation, now time.Time) {
	if lease != nil {
		if h := holderOf(lease); h != "" && h != m.opts.Identity && !obs.expired(now) {
			m.log.V(1).Info("Waiting for a Cluster's Lease", "cluster", cluster, "holder", h)
			return
		}
	}
	sent := m.opts.Clock.Now()
	var err error
	if lease == nil {
		lease = m.newLease(clusterLeaseName(cluster), RoleCluster, cluster, sent)
		err = m.request(ctx, func(ctx context.Context) error { return m.opts.Client.Create(ctx, lease) })
	} else {
		previous := holderOf(lease)
		lease = lease.DeepCopy()
		if previous != m.opts.Identity {
			lease.Spec.AcquireTime = new(metav1.NewMicroTime(sent))
			lease.Spec.LeaseTransitions = new(ptrValue(lease.Spec.LeaseTransitions) + 1)
		}
		m.hold(lease, sent)
		// The update carries the resourceVersion that was judged free or expired: if the
		// holder renewed meanwhile, or another replica took it first, it conflicts.
		err = m.request(ctx, func(ctx context.Context) error { return m.opts.Client.Update(ctx, lease) })
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			leaseFailures.WithLabelValues(m.opts.Identity, opAcquire).Inc()
			m.log.Error(err, "Could not acquire a Cluster's Lease", "cluster", cluster)
		}
		return
	}
	m.held[cluster] = sent
	m.log.Info("Acquired a Cluster", "cluster", cluster)
	m.handler.Acquire(cluster)
	m.setOwned()
}

// release stops the workers of cluster and then releases its Lease, deleting it when the
// Cluster is gone. If the Lease cannot be released, other replicas wait for it to expire.
func (m *Membership) release(ctx context.Context, cluster string, gone bool, why string) {
	m.log.Info("Releasing a Cluster", "cluster", cluster, "reason", why)
	m.stop(ctx, cluster)
	err := m.request(ctx, func(ctx context.Context) error {
		lease := &coordinationv1.Lease{}
		if err := m.opts.Client.Get(ctx, client.ObjectKey{Namespace: m.opts.Namespace, Name: clusterLeaseName(cluster)}, lease); err != nil {
			return client.IgnoreNotFound(err)
		}
		if holderOf(lease) != m.opts.Identity {
			return nil
		}
		if gone {
			return client.IgnoreNotFound(m.opts.Client.Delete(ctx, lease, client.Preconditions{ResourceVersion: &lease.ResourceVersion}))
		}
		lease.Spec.HolderIdentity = nil
		return m.opts.Client.Update(ctx, lease)
	})
	if err != nil {
		leaseFailures.WithLabelValues(m.opts.Identity, opRelease).Inc()
		m.log.Error(err, "Could not release a Cluster's Lease; other replicas will take it once it expires", "cluster", cluster)
	}
}

// collectMembers deletes the member Leases that have stayed expired for another
// LeaseDuration: replicas that died without deleting theirs. Identities carry a random
// suffix, so nothing else would remove them.
func (m *Membership) collectMembers(ctx context.Context, leases []coordinationv1.Lease, obs map[string]observation, now time.Time) {
	for i := range leases {
		l := &leases[i]
		o, ok := obs[l.Name]
		if !ok || now.Before(o.at.Add(2*o.duration)) {
			continue
		}
		err := m.request(ctx, func(ctx context.Context) error {
			return m.opts.Client.Delete(ctx, l, client.Preconditions{ResourceVersion: &l.ResourceVersion})
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			m.log.Error(err, "Could not delete the Lease of a departed member", "lease", l.Name)
		}
	}
}

// shutdown stops the workers of every held Cluster, releases their Leases and deletes the
// member Lease, so that the other replicas take over at once rather than after expiry.
func (m *Membership) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.LeaseDuration)
	defer cancel()
	for _, c := range slices.Sorted(maps.Keys(m.held)) {
		m.release(ctx, c, false, "stopping")
	}
	own := &coordinationv1.Lease{}
	own.Name, own.Namespace = memberPrefix+m.opts.Identity, m.opts.Namespace
	if err := m.request(ctx, func(ctx context.Context) error { return client.IgnoreNotFound(m.opts.Client.Delete(ctx, own)) }); err != nil {
		m.log.Error(err, "Could not delete the member Lease; it expires by itself")
	}
	m.publish(nil)
}

// publish records the live members and the owned Clusters for Members, Owned and the metrics.
func (m *Membership) publish(live []string) {
	m.mu.Lock()
	m.members = slices.Clone(live)
	m.mu.Unlock()
	liveMembers.WithLabelValues(m.opts.Identity).Set(float64(len(live)))
	m.setOwned()
}

func (m *Membership) setOwned() {
	owned := slices.Sorted(maps.Keys(m.held))
	m.mu.Lock()
	m.owned = owned
	m.mu.Unlock()
	ownedClusters.WithLabelValues(m.opts.Identity).Set(float64(len(owned)))
}

// newLease returns a Lease held by this replica from now.
func (m *Membership) newLease(name, role, cluster string, now time.Time) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		Name:      name,
		Namespace: m.opts.Namespace,
		Labels:    map[string]string{LabelPartOf: PartOf, LabelRole: role},
	}}
	if cluster != "" {
		lease.Annotations = map[string]string{AnnotationCluster: cluster}
	}
	lease.Spec.AcquireTime = new(metav1.NewMicroTime(now))
	m.hold(lease, now)
	return lease
}

// hold makes lease this replica's, renewed at now. renewTime is for people reading the Lease;
// replicas judge expiry by when they see its version change (see observation).
func (m *Membership) hold(lease *coordinationv1.Lease, now time.Time) {
	lease.Spec.HolderIdentity = new(m.opts.Identity)
	// Rounded up: other replicas must never wait less than this replica assumes.
	lease.Spec.LeaseDurationSeconds = new(int32((m.opts.LeaseDuration + time.Second - 1) / time.Second))
	lease.Spec.RenewTime = new(metav1.NewMicroTime(now))
}

// clusterLeaseName is the name of cluster's Lease: navarch-cluster-<name>, shortened with a
// hash when that would exceed the 253 characters of an object name.
func clusterLeaseName(cluster string) string {
	name := clusterPrefix + cluster
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	return fmt.Sprintf("%s-%016x", strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-17], ".-"), weight("", cluster))
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func durationOf(l *coordinationv1.Lease, fallback time.Duration) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0 {
		return fallback
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
