package membership

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

// Short durations keep these tests quick; production defaults are 15s/10s/2s
// (DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod), and the same margins hold:
// RenewDeadline + RetryPeriod < LeaseDuration.
const (
	testLeaseDuration = 3 * time.Second
	testRenewDeadline = 2 * time.Second
	testRetryPeriod   = 500 * time.Millisecond
)

var sixClusters = []string{"prod-eu", "prod-us", "prod-ap", "staging-eu", "staging-us", "dev"}

// ledger records which replica runs each Cluster's workers, as the Handler calls tell it, and
// every moment two replicas ran one Cluster's workers at once.
type ledger struct {
	mu       sync.Mutex
	holder   map[string]string
	events   map[string]int // cluster → Acquire and Release calls
	overlaps []string
}

func newLedger() *ledger { return &ledger{holder: map[string]string{}, events: map[string]int{}} }

func (l *ledger) acquire(member, cluster string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.holder[cluster]; ok {
		l.overlaps = append(l.overlaps, fmt.Sprintf("%s started %s while %s still ran it", member, cluster, h))
	}
	l.holder[cluster] = member
	l.events[cluster]++
}

func (l *ledger) release(member, cluster string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder[cluster] != member {
		l.overlaps = append(l.overlaps, fmt.Sprintf("%s stopped %s, which %q ran", member, cluster, l.holder[cluster]))
		return
	}
	delete(l.holder, cluster)
	l.events[cluster]++
}

// crash forgets member's Clusters: its process died, and its workers with it.
func (l *ledger) crash(member string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	maps.DeleteFunc(l.holder, func(_, h string) bool { return h == member })
}

func (l *ledger) snapshot() (holder map[string]string, events map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.holder), maps.Clone(l.events)
}

// checkNoOverlap fails the test if two replicas ever ran one Cluster at once.
func (l *ledger) checkNoOverlap(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.overlaps {
		t.Errorf("two replicas synced one Cluster: %s", o)
	}
}

// ledgerHandler is one replica's Handler.
type ledgerHandler struct {
	l      *ledger
	member string
}

func (h ledgerHandler) Acquire(cluster string)                    { h.l.acquire(h.member, cluster) }
func (h ledgerHandler) Release(_ context.Context, cluster string) { h.l.release(h.member, cluster) }

// cutTransport fails every request while cut, as a broken connection to the management
// cluster does.
type cutTransport struct {
	next http.RoundTripper
	cut  atomic.Bool
}

func (c *cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errors.New("test: connection to the management cluster cut")
	}
	return c.next.RoundTrip(r)
}

// replica is one Membership running in this process, as a controller replica would.
type replica struct {
	*Membership
	link   *cutTransport
	cancel context.CancelFunc
	done   chan struct{}
}

// stop stops the replica cleanly and waits for Start to return.
func (r *replica) stop() {
	r.cancel()
	<-r.done
}

// kill stops the replica as SIGKILL would: nothing is released.
func (r *replica) kill() {
	r.abandon.Store(true)
	r.stop()
}

type fleet struct {
	t        *testing.T
	ns       string
	ledger   *ledger
	clusters []string
	replicas map[string]*replica
}

func newFleet(t *testing.T, clusters []string) *fleet {
	t.Helper()
	// A namespace of its own per run (go test -count=n runs a test again in one environment).
	ns := testenv.Name(t)
	ns = ns[:min(len(ns), 50)] + "-" + utilrand.String(5)
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	f := &fleet{t: t, ns: ns, ledger: newLedger(), clusters: clusters, replicas: map[string]*replica{}}
	t.Cleanup(func() {
		for _, r := range f.replicas {
			r.stop()
		}
		f.ledger.checkNoOverlap(t)
	})
	return f
}

func (f *fleet) start(identity string) *replica {
	f.t.Helper()
	link := &cutTransport{}
	cfg := rest.CopyConfig(env.Management.RESTConfig())
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { link.next = rt; return link }
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		f.t.Fatal(err)
	}
	m, err := New(Options{
		Client:        c,
		Namespace:     f.ns,
		Identity:      identity,
		LeaseDuration: testLeaseDuration,
		RenewDeadline: testRenewDeadline,
		RetryPeriod:   testRetryPeriod,
		Logger:        env.Logger,
	}, ledgerHandler{l: f.ledger, member: identity})
	if err != nil {
		f.t.Fatal(err)
	}
	m.SetClusters(f.clusters)
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{Membership: m, link: link, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := m.Start(ctx); err != nil {
			f.t.Errorf("replica %s: %v", identity, err)
		}
	}()
	f.replicas[identity] = r
	return r
}

// live returns the identities of the running replicas, sorted.
func (f *fleet) live() []string { return slices.Sorted(maps.Keys(f.replicas)) }

// waitAssigned waits until every Cluster's workers run on exactly the replica Owner assigns
// it among the running replicas, and every replica sees them all and reports its share.
func (f *fleet) waitAssigned(what string) {
	f.t.Helper()
	members := f.live()
	testenv.Eventually(f.t, what, func() string {
		holder, _ := f.ledger.snapshot()
		for _, c := range f.clusters {
			if want := Owner(c, members); holder[c] != want {
				return fmt.Sprintf("Cluster %s runs on %q, want %s (ledger %v)", c, holder[c], want, holder)
			}
		}
		for id, r := range f.replicas {
			if got := r.Members(); !slices.Equal(got, members) {
				return fmt.Sprintf("replica %s sees members %v, want %v", id, got, members)
			}
			var want []string
			for _, c := range f.clusters {
				if holder[c] == id {
					want = append(want, c)
				}
			}
			slices.Sort(want)
			if got := r.Owned(); !slices.Equal(got, want) {
				return fmt.Sprintf("replica %s reports it owns %v, the ledger says %v", id, got, want)
			}
		}
		return ""
	})
}

func (f *fleet) lease(name string) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{}
	return l, env.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, l)
}

func TestReplicasShareTheFleetAndAFourthMovesOnlyItsShare(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	f := newFleet(t, sixClusters)
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		f.start(id)
	}
	f.waitAssigned("six Clusters shared by three replicas")
	for id, r := range f.replicas {
		if got := value(t, ownedClusters.WithLabelValues(id)); int(got) != len(r.Owned()) {
			t.Errorf("navarch_membership_owned_clusters{member=%s} = %v, want %d", id, got, len(r.Owned()))
		}
		if got := value(t, liveMembers.WithLabelValues(id)); got != 3 {
			t.Errorf("navarch_membership_live_members{member=%s} = %v, want 3", id, got)
		}
	}
	for _, c := range f.clusters {
		l, err := f.lease(clusterLeaseName(c))
		if err != nil || holderOf(l) != Owner(c, f.live()) {
			t.Errorf("Lease of %s: holder %q, err %v; want %s", c, holderOf(l), err, Owner(c, f.live()))
		}
	}

	before := f.live()
	_, eventsBefore := f.ledger.snapshot()
	d := f.start("replica-d")
	f.waitAssigned("the Clusters reassigned after a fourth replica joined")
	_, eventsAfter := f.ledger.snapshot()
	moved := 0
	for _, c := range f.clusters {
		if Owner(c, f.live()) == d.Identity() {
			moved++
			continue
		}
		if eventsAfter[c] != eventsBefore[c] {
			t.Errorf("Cluster %s stayed on %s yet its workers were stopped or started when replica-d joined", c, Owner(c, before))
		}
	}
	if moved == 0 {
		t.Fatal("replica-d won no Cluster; pick other names for this test to mean anything")
	}
	t.Logf("replica-d took %d of %d Clusters", moved, len(f.clusters))

	// A replica stopping cleanly stops its workers, releases its Cluster Leases and deletes its
	// member Lease, so the others take over at once.
	owned := d.Owned()
	d.stop()
	delete(f.replicas, d.Identity())
	if _, err := f.lease(memberPrefix + d.Identity()); !apierrors.IsNotFound(err) {
		t.Errorf("member Lease of a replica that stopped cleanly: %v, want it deleted", err)
	}
	for _, c := range owned {
		l, err := f.lease(clusterLeaseName(c))
		if err == nil && holderOf(l) == d.Identity() {
			t.Errorf("Lease of %s still held by the stopped replica-d", c)
		}
	}
	f.waitAssigned("the Clusters back on three replicas after replica-d stopped")

	// A Cluster that no longer exists is released and its Lease deleted.
	gone := f.clusters[0]
	f.clusters = f.clusters[1:]
	for _, r := range f.replicas {
		r.SetClusters(f.clusters)
	}
	testenv.Eventually(t, "the Lease of a deleted Cluster is deleted", func() string {
		holder, _ := f.ledger.snapshot()
		if h, ok := holder[gone]; ok {
			return "its workers still run on " + h
		}
		if _, err := f.lease(clusterLeaseName(gone)); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("Lease: %v", err)
		}
		return ""
	})
}

// pickVictim returns the running replica that owns the most Clusters.
func (f *fleet) pickVictim() *replica {
	var victim *replica
	for _, id := range f.live() {
		if r := f.replicas[id]; victim == nil || len(r.Owned()) > len(victim.Owned()) {
			victim = r
		}
	}
	if len(victim.Owned()) == 0 {
		f.t.Fatal("no replica owns a Cluster")
	}
	return victim
}

func (f *fleet) heldBy(clusters []string, what string) func() string {
	return func() string {
		holder, _ := f.ledger.snapshot()
		for _, c := range clusters {
			if h, ok := holder[c]; ok {
				return fmt.Sprintf("Cluster %s runs on %s %s", c, h, what)
			}
		}
		return ""
	}
}

func TestAKilledReplicasClustersMoveOnlyAfterItsLeasesExpire(t *testing.T) {
	f := newFleet(t, sixClusters)
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		f.start(id)
	}
	f.waitAssigned("six Clusters shared by three replicas")

	victim := f.pickVictim()
	orphans := victim.Owned()
	victim.kill()
	killed := time.Now()
	delete(f.replicas, victim.Identity())
	f.ledger.crash(victim.Identity())
	if l, err := f.lease(clusterLeaseName(orphans[0])); err != nil || holderOf(l) != victim.Identity() {
		t.Fatalf("the killed replica's Lease of %s: holder %q, err %v; want it still held, as after SIGKILL", orphans[0], holderOf(l), err)
	}

	// Its last renewal was at most a RetryPeriod before the kill, so no replica may take its
	// Clusters for LeaseDuration - RetryPeriod after it.
	testenv.Consistently(t, testLeaseDuration-testRetryPeriod-200*time.Millisecond-time.Since(killed),
		"nobody runs the killed replica's Clusters while its Leases are valid", f.heldBy(orphans, "before the killed replica's Lease expired"))
	f.waitAssigned("the killed replica's Clusters taken over by the others")
	t.Logf("taken over %s after the kill (LeaseDuration %s)", time.Since(killed).Round(100*time.Millisecond), testLeaseDuration)
}

func TestAReplicaCutOffFromTheAPIStopsBeforeAnotherTakesOver(t *testing.T) {
	f := newFleet(t, sixClusters)
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		f.start(id)
	}
	f.waitAssigned("six Clusters shared by three replicas")

	victim := f.pickVictim()
	orphans := victim.Owned()
	victim.link.cut.Store(true)
	cut := time.Now()
	// The ledger fails the test if another replica starts a Cluster before the victim has
	// stopped it; here we also see the victim stop by itself, without any API call succeeding.
	testenv.Eventually(t, "the cut-off replica stops its workers", func() string {
		holder, _ := f.ledger.snapshot()
		for _, c := range orphans {
			if holder[c] == victim.Identity() {
				return fmt.Sprintf("%s still runs %s", victim.Identity(), c)
			}
		}
		return ""
	})
	stopped := time.Since(cut)
	if stopped >= testLeaseDuration {
		t.Errorf("the cut-off replica stopped %s after the cut, not before LeaseDuration (%s)", stopped, testLeaseDuration)
	}
	live := slices.DeleteFunc(f.live(), func(id string) bool { return id == victim.Identity() })
	testenv.Eventually(t, "the others take over the cut-off replica's Clusters", func() string {
		holder, _ := f.ledger.snapshot()
		for _, c := range orphans {
			if want := Owner(c, live); holder[c] != want {
				return fmt.Sprintf("Cluster %s runs on %q, want %s", c, holder[c], want)
			}
		}
		return ""
	})
	if got := victim.Owned(); len(got) != 0 {
		t.Errorf("the cut-off replica reports it owns %v", got)
	}
	if got := value(t, leaseFailures.WithLabelValues(victim.Identity(), opList)); got == 0 {
		t.Error("navarch_membership_lease_failures_total{operation=list} did not count the failed requests")
	}

	// Reconnected, it rejoins and gets its share back, through the same handover.
	victim.link.cut.Store(false)
	f.waitAssigned("the reconnected replica gets its share back")
}

func TestNewRejectsDeadlinesThatLeaveWorkersNoTimeToStop(t *testing.T) {
	h := ledgerHandler{l: newLedger(), member: "x"}
	for _, opts := range []Options{
		{Client: env.Client, Namespace: "ns", Identity: "x", LeaseDuration: 3 * time.Second, RenewDeadline: 3 * time.Second},
		{Client: env.Client, Namespace: "ns", Identity: "x", LeaseDuration: 10 * time.Second, RenewDeadline: 9 * time.Second, RetryPeriod: time.Second},
		{Client: env.Client, Namespace: "ns", Identity: "Not_A_Name"},
		{Client: env.Client, Identity: "x"},
	} {
		if _, err := New(opts, h); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", opts)
		}
	}
	if _, err := New(Options{Client: env.Client, Namespace: "ns", Identity: "x"}, h); err != nil {
		t.Errorf("New with the production defaults: %v", err)
	}
}

// value reads a gauge's or counter's current value.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Gauge != nil {
		return out.Gauge.GetValue()
	}
	return out.Counter.GetValue()
}
