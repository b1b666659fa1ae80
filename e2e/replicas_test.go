package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/membership"
)

// The replica tests run several `navarch controller --shard-clusters` processes at their
// default Lease timing (15s duration, 10s renew deadline, 2s retry) on the chaos fleet
// (chaos_test.go), whose hooks and ledger show whether each hook ran once, and read who holds
// each Cluster from the Leases, as `navarch cluster list` does.

// startReplica starts a replica named name that reaches the management cluster through
// kubeconfig.
func startReplica(t *testing.T, f *chaosFleet, name, kubeconfig string) *navarchController {
	t.Helper()
	return startNavarchProcess(t, f, "replica-"+name, kubeconfig, "--shard-clusters", "--replica-identity", name,
		"--zap-time-encoding", "rfc3339nano") // log times precise enough to order the replicas' steps
}

// holders returns the replica holding each Cluster's Lease, "" for a released one, and leaves
// out expired Leases.
func (f *chaosFleet) holders(ctx context.Context) (map[string]string, error) {
	hs, err := membership.Holders(ctx, f.c, "navarch-system", time.Now())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for cluster, h := range hs {
		if !h.Expired {
			out[cluster] = h.Replica
		}
	}
	return out, nil
}

// waitForAssignment waits, for at most 2 minutes, until every Cluster (and in-cluster) is held
// by the replica that rendezvous hashing assigns it among live, and returns the holders.
func (f *chaosFleet) waitForAssignment(t *testing.T, live []string) map[string]string {
	t.Helper()
	const timeout = 2 * time.Minute
	var got map[string]string
	want := map[string]string{}
	for _, c := range append(slices.Clone(f.clusters), navarchv1.InClusterName) {
		want[c] = membership.Owner(c, live)
	}
	chaosWaitFor(t, timeout, fmt.Sprintf("the Clusters to be held as assigned among %v: %v", live, want), func(ctx context.Context) (bool, error) {
		var err error
		got, err = f.holders(ctx)
		return err == nil && maps.Equal(got, want), err
	})
	return got
}

// Three replicas share six Clusters; one is SIGKILLed while syncs with hooks run on its
// Clusters. The others take its Clusters once its Leases expire, every operation finishes and
// each hook ran once; a fourth replica joining takes only its own share.
func TestReplicasShareTheFleetAndTakeOverAKilledOnesClusters(t *testing.T) {
	const appsPerCluster = 4
	f := startChaosFleet(t, "3s")
	for _, alias := range []struct{ name, of string }{{"east-b", "east"}, {"east-c", "east"}, {"west-b", "west"}, {"west-c", "west"}} {
		f.alias(t, alias.name, alias.of)
	}
	replicas := map[string]*navarchController{}
	for _, name := range []string{"r1", "r2", "r3"} {
		replicas[name] = startReplica(t, f, name, f.mgmt.KubeconfigPath())
	}
	live := []string{"r1", "r2", "r3"}
	before := f.waitForAssignment(t, live)
	t.Logf("Clusters held: %v", before)

	r := runCLI(t, "cluster", "list", "--kubeconfig", f.mgmt.KubeconfigPath())
	for _, c := range f.clusters {
		if !strings.Contains(r.stdout, c) || !strings.Contains(r.stdout, "REPLICA") {
			t.Fatalf("navarch cluster list does not show the replica of %s:\n%s%s", c, r.stdout, r.stderr)
		}
	}
	for _, line := range strings.Split(r.stdout, "\n")[1:] {
		if fields := strings.Fields(line); len(fields) > 0 && before[fields[0]] != "" && !strings.Contains(line, " "+before[fields[0]]) {
			t.Errorf("navarch cluster list shows the wrong replica for %s (held by %s): %q", fields[0], before[fields[0]], line)
		}
	}

	// The victim is the replica holding the most Clusters; it is killed while a PreSync hook
	// runs on one of them.
	victim := ""
	for _, name := range live {
		if victim == "" || count(before, name) > count(before, victim) {
			victim = name
		}
	}
	apps := f.create(t, f.newApps(appsPerCluster))
	chaosWaitFor(t, 2*time.Minute, "a PreSync hook to run on a Cluster of "+victim, func(ctx context.Context) (bool, error) {
		byKey, err := f.apps(ctx)
		if err != nil {
			return false, err
		}
		for _, app := range byKey {
			if before[app.Spec.Destination.Name] != victim {
				continue
			}
			if st := app.Status.OperationState; st != nil && st.SyncResult != nil {
				for _, res := range st.SyncResult.Resources {
					if res.HookType == string(navarchv1.SyncPhasePreSync) && res.HookPhase == navarchv1.HookRunning {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
	killedAt := replicas[victim].kill(t)
	t.Logf("replica %s, holding %d Clusters, killed at %s: %s", victim, count(before, victim), killedAt.Format("15:04:05.000"), f.progress(t))

	live = slices.DeleteFunc(live, func(n string) bool { return n == victim })
	after := f.waitForAssignment(t, live)
	t.Logf("its Clusters were held by the others %s after the kill: %v", time.Since(killedAt).Round(time.Second), after)
	for c, h := range before {
		if h != victim && after[c] != h {
			t.Errorf("Cluster %s moved from %s to %s, though its replica lives: only the killed replica's Clusters may move", c, h, after[c])
		}
	}

	f.waitForOperations(t, apps, 5*time.Minute, nil)
	f.verifyApps(t, apps, replicas[victim])

	// A fourth replica joins: only the Clusters rendezvous hashing gives it move, to it.
	replicas["r4"] = startReplica(t, f, "r4", f.mgmt.KubeconfigPath())
	live = append(live, "r4")
	joined := f.waitForAssignment(t, live)
	moved := 0
	for c, h := range after {
		if joined[c] != h {
			moved++
			if joined[c] != "r4" {
				t.Errorf("Cluster %s moved from %s to %s when r4 joined: only r4's share may move", c, h, joined[c])
			}
		}
	}
	t.Logf("r4 joined and took %d Clusters: %v", moved, joined)
	if moved == 0 {
		t.Logf("rendezvous hashing gave r4 no Cluster of %d", len(joined))
	}
}

func count(holders map[string]string, replica string) int {
	n := 0
	for _, h := range holders {
		if h == replica {
			n++
		}
	}
	return n
}

// A replica cut off from the management cluster (its connection through a proxy that the
// test closes) cannot renew its Leases. It stops syncing its Clusters after the renew
// deadline, before the other replica takes them once the Leases expire; the other replica
// then finishes the operations, each hook having run once.
func TestAReplicaCutOffFromTheManagementClusterStopsBeforeAnotherTakesOver(t *testing.T) {
	const appsPerCluster = 4
	f := startChaosFleet(t, "3s")
	f.alias(t, "east-b", "east")
	f.alias(t, "west-b", "west")

	// The survivor starts first and leads, so the cut-off replica is not the leader, whose
	// process ends when it cannot renew the leader Lease: what stops it is its fencing.
	survivor := startReplica(t, f, "survivor", f.mgmt.KubeconfigPath())
	chaosWaitFor(t, time.Minute, "the survivor to lead", func(context.Context) (bool, error) {
		return logContains(survivor.logPath, "Successfully acquired lease"), nil
	})
	// The replica to be cut off is named so that rendezvous hashing gives it workload Clusters.
	name := ""
	for i := 0; name == ""; i++ {
		candidate := fmt.Sprintf("cutoff-%d", i)
		for _, c := range f.clusters {
			if membership.Owner(c, []string{candidate, "survivor"}) == candidate {
				name = candidate
			}
		}
	}
	proxy := startTCPProxy(t, f.mgmt.RESTConfig().Host)
	cutOff := startReplica(t, f, name, proxy.kubeconfig(t, f.mgmt.KubeconfigPath(), filepath.Join(f.artifacts, "cutoff.kubeconfig")))
	held := f.waitForAssignment(t, []string{name, "survivor"})
	t.Logf("Clusters held: %v", held)

	apps := f.create(t, f.newApps(appsPerCluster))
	chaosWaitFor(t, 2*time.Minute, "a hook to run on a Cluster of the replica to be cut off", func(ctx context.Context) (bool, error) {
		byKey, err := f.apps(ctx)
		if err != nil {
			return false, err
		}
		for _, app := range byKey {
			if st := app.Status.OperationState; held[app.Spec.Destination.Name] == name && st != nil && st.SyncResult != nil {
				for _, res := range st.SyncResult.Resources {
					if res.HookType != "" && res.HookPhase == navarchv1.HookRunning {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
	cutAt := proxy.cut()
	t.Logf("the replica's connection to the management cluster cut at %s: %s", cutAt.Format("15:04:05.000"), f.progress(t))

	f.waitForAssignment(t, []string{"survivor"})
	f.waitForOperations(t, apps, 5*time.Minute, nil)
	f.verifyApps(t, apps, cutOff)

	// The logs, on one clock, order the cut-off replica's stops before the survivor's
	// acquisitions of the same Clusters.
	stopped := logTimes(t, cutOff.logPath, "Stopping the workers of a Cluster whose Lease could not be renewed in time", cutAt)
	acquired := logTimes(t, survivor.logPath, "Acquired a Cluster", cutAt)
	for c, h := range held {
		if h != name {
			continue
		}
		s, ok := stopped[c]
		if !ok {
			t.Errorf("the cut-off replica never said it stopped syncing %s (log %s)", c, cutOff.logPath)
			continue
		}
		a, ok := acquired[c]
		if !ok {
			t.Errorf("the survivor never said it acquired %s (log %s)", c, survivor.logPath)
			continue
		}
		if !s.Before(a) {
			t.Errorf("Cluster %s: the survivor acquired it at %s, before the cut-off replica stopped its workers at %s", c, a.Format("15:04:05.000"), s.Format("15:04:05.000"))
		}
		t.Logf("Cluster %s: cut %s, stopped by the cut-off replica +%s, acquired by the survivor +%s", c, cutAt.Format("15:04:05.000"),
			s.Sub(cutAt).Round(100*time.Millisecond), a.Sub(cutAt).Round(100*time.Millisecond))
	}
}

// logContains reports whether the log at path has a line containing s.
func logContains(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(b), s)
}

// logTimes returns, for each cluster, the time of the first JSON log line with message msg
// after since.
func logTimes(t *testing.T, path, msg string, since time.Time) map[string]time.Time {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	out := map[string]time.Time{}
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			TS      json.RawMessage `json:"ts"`
			Msg     string          `json:"msg"`
			Cluster string          `json:"cluster"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != msg || line.Cluster == "" {
			continue
		}
		at, ok := logTime(line.TS)
		if !ok || at.Before(since) {
			continue
		}
		if _, seen := out[line.Cluster]; !seen {
			out[line.Cluster] = at
		}
	}
	return out
}

// logTime parses zap's timestamp: seconds since the epoch, or RFC 3339.
func logTime(raw json.RawMessage) (time.Time, bool) {
	var secs float64
	if json.Unmarshal(raw, &secs) == nil {
		return time.Unix(0, int64(secs*float64(time.Second))), true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return at, true
		}
	}
	return time.Time{}, false
}

// tcpProxy forwards connections to an address until cut, which closes them all and refuses
// new ones: a network partition between a replica and the management cluster.
type tcpProxy struct {
	listener net.Listener
	target   string

	mu    sync.Mutex
	cutAt time.Time
	conns []net.Conn
}

func startTCPProxy(t *testing.T, server string) *tcpProxy {
	t.Helper()
	target := strings.TrimPrefix(server, "https://")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{listener: l, target: target}
	go p.serve()
	t.Cleanup(func() { p.cut() })
	return p
}

func (p *tcpProxy) serve() {
	for {
		in, err := p.listener.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		if !p.cutAt.IsZero() {
			p.mu.Unlock()
			_ = in.Close()
			_ = out.Close()
			continue
		}
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go pipe(in, out)
		go pipe(out, in)
	}
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// cut closes the proxy and every connection through it, and returns when.
func (p *tcpProxy) cut() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutAt.IsZero() {
		p.cutAt = time.Now()
		_ = p.listener.Close()
		for _, c := range p.conns {
			_ = c.Close()
		}
	}
	return p.cutAt
}

// kubeconfig writes to path a copy of the kubeconfig at from whose servers are the proxy.
// The API server's certificate names 127.0.0.1, which the proxy listens on too.
func (p *tcpProxy) kubeconfig(t *testing.T, from, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters) == 0 {
		t.Fatal(errors.New("the management kubeconfig names no cluster"))
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + p.listener.Addr().String()
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
