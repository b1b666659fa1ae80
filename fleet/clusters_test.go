package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/testenv"
)

func configMap(name, greeting string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {greeting: \"%s\"}\n", name, greeting)
}

func clusterReady(t *testing.T, name string) *metav1.Condition {
	t.Helper()
	c := &navarchv1.Cluster{}
	if err := mgmt.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(c.Status.Conditions, navarchv1.ConditionReady)
}

// stopAPIServer stops the API server of the workload cluster name and waits until its Cluster
// reports Unreachable (Clusters are probed every 30 s). The returned function starts it again;
// so does the test's cleanup if the test ends first.
func stopAPIServer(t *testing.T, name string) (start func()) {
	t.Helper()
	c := workloads[name]
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	started := false
	t.Cleanup(func() {
		if !started {
			_ = c.StartAPIServer(context.Background())
		}
	})
	testenv.EventuallyWithin(t, 2*time.Minute, "Cluster "+name+" reports Unreachable", func() string {
		if cond := clusterReady(t, name); cond == nil || cond.Status != "False" || cond.Reason != navarchv1.ReasonUnreachable {
			return fmt.Sprintf("Ready condition %+v", cond)
		}
		return ""
	})
	return func() {
		t.Helper()
		if err := c.StartAPIServer(context.Background()); err != nil {
			t.Fatal(err)
		}
		started = true
	}
}

// Two clusters, one of them down: the other still syncs; the stopped one reports Unreachable
// and its Application catches up after the restart.
func TestAClusterOutageDelaysOnlyThatCluster(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"cm/cm.yaml": configMap("greeting", "hello")})
	apps := map[string]*navarchv1.Application{}
	for _, cluster := range []string{"east", "west"} {
		apps[cluster] = createApp(t, ns, fmt.Sprintf(`
metadata: {name: %s}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {name: %s, namespace: %s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, cluster, url, cluster, ns))
	}
	for _, app := range apps {
		waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	}

	west := workloads["west"]
	startWest := stopAPIServer(t, "west")

	commit := push(t, "new greeting", map[string]string{"cm/cm.yaml": configMap("greeting", "bonjour")})
	// Both Applications are asked to look at Git now, as a push webhook would do.
	requestRefresh(t, apps["west"])
	refresh(t, apps["east"])
	waitForApp(t, apps["east"], "synced to the new commit during west's outage", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revision == commit
	})
	cm := &corev1.ConfigMap{}
	if err := workloads["east"].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greeting"}, cm); err != nil || cm.Data["greeting"] != "bonjour" {
		t.Fatalf("east has %v (%v), want bonjour", cm.Data, err)
	}
	waitForApp(t, apps["west"], "reports its cluster unavailable", func(a *navarchv1.Application) bool {
		c := meta.FindStatusCondition(a.Status.Conditions, navarchv1.ConditionReady)
		return c != nil && c.Status == "False" && c.Reason == navarchv1.ReasonClusterUnavailable
	})

	startWest()
	// The next probe (within 30 s) finds west back.
	testenv.EventuallyWithin(t, 2*time.Minute, apps["west"].Name+" catches up after the restart", func() string {
		if a := getApp(t, apps["west"]); !syncedAndHealthy(a) || a.Status.Sync.Revision != commit {
			return describe(a)
		}
		return ""
	})
	if err := west.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greeting"}, cm); err != nil || cm.Data["greeting"] != "bonjour" {
		t.Fatalf("west has %v (%v), want bonjour", cm.Data, err)
	}
	if c := clusterReady(t, "west"); c == nil || c.Status != "True" || c.Reason != navarchv1.ReasonConnected {
		t.Errorf("Cluster west Ready condition %+v after the restart", c)
	}
}

// app-of-apps: an Application on the management cluster whose path holds Application
// manifests; the child Applications are created and sync their own clusters.
func TestAppOfApps(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{
		"child/cm.yaml": configMap("from-child", "hi"),
	})
	push(t, "add the parent", map[string]string{
		"parent/child.yaml": fmt.Sprintf(`
apiVersion: navarch.io/v1alpha1
kind: Application
metadata: {name: child, namespace: %s}
spec:
  source: {repoURL: %s, targetRevision: main, path: child}
  destination: {name: east, namespace: %s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, ns, url, ns+"-child"),
	})
	parent := createApp(t, ns, fmt.Sprintf(`
metadata: {name: parent}
spec:
  source: {repoURL: %s, targetRevision: main, path: parent}
  destination: {name: in-cluster, namespace: %s}
  syncPolicy: {automated: {prune: true}}
`, url, ns))
	waitForApp(t, parent, "Synced and Healthy (its child is healthy)", syncedAndHealthy)
	child := waitForApp(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, "child")}, "Synced and Healthy", syncedAndHealthy)
	if child.Annotations[navarchv1.AnnotationTrackingID] == "" {
		t.Errorf("the child Application carries no tracking id")
	}
	if err := workloads["east"].Client.Get(ctx, client.ObjectKey{Namespace: ns + "-child", Name: "from-child"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the child's ConfigMap is not in cluster east: %v", err)
	}
}

// Deleting an Application with the resources finalizer deletes its resources first.
func TestDeletingAnApplicationDeletesItsResources(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"cm/a.yaml": configMap("a", "1"), "cm/b.yaml": configMap("b", "2")})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: doomed, finalizers: [%s]}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {name: east, namespace: %s}
  syncPolicy: {automated: {}}
`, navarchv1.FinalizerResources, url, ns))
	east := workloads["east"].Client
	// The namespace exists (it holds the Application's own namespace name on east too).
	if err := east.Create(ctx, &corev1.Namespace{ObjectMeta: objectMeta("", ns)}); err != nil {
		t.Fatal(err)
	}
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	if err := mgmt.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the Application and its ConfigMaps are gone", func() string {
		err := mgmt.Get(ctx, client.ObjectKeyFromObject(app), &navarchv1.Application{})
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("Application still there: %v", err)
		}
		for _, name := range []string{"a", "b"} {
			if err := east.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				return fmt.Sprintf("ConfigMap %s still there: %v", name, err)
			}
		}
		return ""
	})
}

// Clusters registered on one apiserver with one identity share its watches: each Application
// still sees the events of its own objects (selfHeal reverts hand edits on both Clusters), and
// the watches outlive a Cluster that is deleted while another still uses them.
func TestClustersOnOneAPIServerShareItsWatches(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	registerStages(t, ns, stage{"a", "dev", "east"}, stage{"b", "dev", "east"})
	url := repo(t, map[string]string{"cm/settings.yaml": configMap("settings", "from git")})
	apps := map[string]*navarchv1.Application{}
	for _, suffix := range []string{"a", "b"} {
		apps[suffix] = createApp(t, ns, fmt.Sprintf(`
metadata: {name: settings-%[1]s}
spec:
  source: {repoURL: %[2]s, targetRevision: main, path: cm}
  destination: {name: %[3]s-%[1]s, namespace: %[3]s-%[1]s}
  syncPolicy:
    automated: {selfHeal: true}
    syncOptions: [CreateNamespace=true]
`, suffix, url, ns))
	}
	east := workloads["east"].Client
	for _, app := range apps {
		waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	}
	editAndWaitForHeal := func(suffix string) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		key := client.ObjectKey{Namespace: ns + "-" + suffix, Name: "settings"}
		if err := east.Get(ctx, key, cm); err != nil {
			t.Fatalf("ConfigMap of settings-%s on east: %v", suffix, err)
		}
		testenv.Update(t, east, cm, func(c *corev1.ConfigMap) { c.Data["greeting"] = "by hand" })
		testenv.Eventually(t, "selfHeal reverts the hand edit of settings-"+suffix, func() string {
			if err := east.Get(ctx, key, cm); err != nil {
				return err.Error()
			}
			if g := cm.Data["greeting"]; g != "from git" {
				return "greeting is " + g
			}
			return ""
		})
	}
	editAndWaitForHeal("a")
	editAndWaitForHeal("b")

	// Deleting Cluster b stops its queue, not the watches Cluster a (and east) still use.
	if err := mgmt.Delete(ctx, &navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: ns + "-b"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "settings-b reports its Cluster gone", func() string {
		got := &navarchv1.Application{}
		if err := mgmt.Get(ctx, client.ObjectKeyFromObject(apps["b"]), got); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ConditionReady); c == nil || c.Reason != navarchv1.ReasonClusterUnavailable {
			return fmt.Sprintf("Ready condition %+v", c)
		}
		return ""
	})
	// The deleted Cluster's probe series go with it; the other's stay.
	testenv.Eventually(t, "the probe series of the deleted Cluster are dropped", func() string {
		if m := fixture.Metrics(t, "navarch_cluster_last_probe_timestamp_seconds", map[string]string{"cluster": ns + "-b"}); len(m) != 0 {
			return "navarch_cluster_last_probe_timestamp_seconds still has a series of " + ns + "-b"
		}
		if m := fixture.Metrics(t, "navarch_cluster_probes_total", map[string]string{"cluster": ns + "-b"}); len(m) != 0 {
			return "navarch_cluster_probes_total still has a series of " + ns + "-b"
		}
		return ""
	})
	if m := fixture.Metrics(t, "navarch_cluster_probes_total", map[string]string{"cluster": ns + "-a", "reason": navarchv1.ReasonConnected}); len(m) == 0 || m[0].GetCounter().GetValue() < 1 {
		t.Errorf("navarch_cluster_probes_total{cluster=%s-a,reason=Connected}: %v, want a probe counted", ns, m)
	}
	editAndWaitForHeal("a")
}
