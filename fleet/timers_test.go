package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/testenv"
)

// The tests of this file are about timed behaviour: each runs on its own timer or on a watch
// event, never on the Git poll, which the controller of these tests runs at its production
// interval of 3 minutes.

// installCRD creates a CustomResourceDefinition on a workload cluster and deletes it when the
// test ends.
func installCRD(t *testing.T, cluster, manifest string) {
	t.Helper()
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &crd.Object); err != nil {
		t.Fatal(err)
	}
	c := workloads[cluster].Client
	if err := c.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crd) })
}

const gadgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.timers.example.com}
spec:
  group: timers.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// A user syncs an Application whose source holds a custom resource before its CRD is installed,
// with `retry: {limit: 10, backoff: {duration: 2s, factor: 2, maxDuration: 20s}}`. Each retry
// must run when status.operationState.nextRetryAt says, whatever the Git poll interval: the
// attempts go on while the CRD is missing, and once it is installed the next one succeeds.
func TestRetriesRunAtNextRetryAtNotAtTheGitPoll(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{
		"gadget/gadget.yaml": "apiVersion: timers.example.com/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 3}\n",
	})
	app := manualApp(t, ns, url, "gadget", "west", ns, `
    retry: {limit: 10, backoff: {duration: 2s, factor: 2, maxDuration: 20s}}`)
	requestSync(t, app)

	// The second and third attempts are due 2 s and 4 s after the failures before them; the
	// third failure schedules retry 3.
	testenv.Eventually(t, "three retries of the failing sync", func() string {
		s := getApp(t, app).Status.OperationState
		if s != nil && s.Phase == navarchv1.OperationRunning && s.RetryCount >= 3 {
			return ""
		}
		if s == nil {
			return "no operation yet"
		}
		next := "none"
		if s.NextRetryAt != nil {
			next = s.NextRetryAt.UTC().Format("15:04:05")
		}
		return fmt.Sprintf("phase %s, retryCount %d, nextRetryAt %s, message %q: the retry did not run at nextRetryAt",
			s.Phase, s.RetryCount, next, s.Message)
	})

	installCRD(t, "west", gadgetCRD)
	got := waitForApp(t, app, "Succeeded at the next retry after the CRD is installed", operationDone)
	if s := got.Status.OperationState; s.Phase != navarchv1.OperationSucceeded {
		t.Fatalf("operation %s after the CRD was installed: %s", s.Phase, s.Message)
	}
}

// The controller clears a request (the operation field) before it records the operation it
// started, so a client never sees the operation's state, and above all never its end, with the
// request still set. (A client that saw a finished phase next to its own request could not tell
// whether its request had run.) An Application watched from before the request sees every
// version of it.
func TestAnOperationIsNeverSeenNextToItsRequest(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{
		// No CRD defines Sprocket: the sync fails in its first pass, which records its start
		// and its end in one status write.
		"app/sprocket.yaml": "apiVersion: timers.example.com/v1\nkind: Sprocket\nmetadata: {name: s}\n",
		"app/cm.yaml":       webConfigMap,
	})
	app := manualApp(t, ns, url, "app", "east", ns, "")
	waitForApp(t, app, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })

	w, err := mgmt.Watch(ctx, &navarchv1.ApplicationList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": app.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	requestSync(t, app)
	timeout := time.After(60 * time.Second)
	for versions := 0; ; versions++ {
		var ev watch.Event
		select {
		case ev = <-w.ResultChan():
		case <-timeout:
			t.Fatalf("the operation did not end within 60s (%d versions seen): %s", versions, describe(getApp(t, app)))
		}
		a, ok := ev.Object.(*navarchv1.Application)
		if !ok {
			t.Fatalf("watch event %s: %v", ev.Type, ev.Object)
		}
		s := a.Status.OperationState
		if s != nil && a.Operation != nil {
			t.Fatalf("version %s shows the operation %s (%q) while its request is still set: a client cannot tell whether its request ran",
				a.ResourceVersion, s.Phase, s.Message)
		}
		if s != nil && s.Phase != navarchv1.OperationRunning {
			if s.Phase != navarchv1.OperationFailed {
				t.Errorf("operation %s %q, want Failed: nothing defines Sprocket", s.Phase, s.Message)
			}
			return
		}
	}
}

// quietPasses returns navarch_quiet_passes_total for cluster.
func quietPasses(t *testing.T, cluster string) float64 {
	t.Helper()
	return clusterCounter(t, "navarch_quiet_passes_total", cluster)
}

// clusterCounter returns the counter name of cluster, summed over its other labels.
func clusterCounter(t *testing.T, name, cluster string) float64 {
	t.Helper()
	total := 0.0
	for _, m := range fixture.Metrics(t, name, map[string]string{"cluster": cluster}) {
		total += m.GetCounter().GetValue()
	}
	return total
}

// The passes an idle Application's poll timer asks for compare nothing when nothing changed
// (no dry run, no write), yet a hand edit is still reverted at once and a new commit is still
// synced at the next poll. The controller polls every 5 seconds here, so that the test sees
// several polls; what it checks does not depend on the interval.
func TestIdlePollPassesAreQuietButMissNothing(t *testing.T) {
	controllerOptions.GitPollInterval = 5 * time.Second
	restartController(t)
	t.Cleanup(func() {
		controllerOptions.GitPollInterval = 0
		restartController(t)
	})
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-quiet"
	// A Cluster of its own (on west's apiserver), so that the counts are this test's alone.
	registerStages(t, ns, stage{"quiet", "dev", "west"})
	cluster := ns + "-quiet"
	repo(t, map[string]string{"cm/settings.yaml": configMap("settings", "one")})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: quiet}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {name: %s, namespace: %s}
  syncPolicy:
    automated: {selfHeal: true}
    syncOptions: [CreateNamespace=true]
`, git.RepoURL(testenv.Name(t)), cluster, target))
	waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)

	// Polls go by: quiet passes, and neither a dry run nor a status write.
	settled := &navarchv1.Application{}
	if err := mgmt.Get(ctx, client.ObjectKeyFromObject(app), settled); err != nil {
		t.Fatal(err)
	}
	quiet, dryRuns := quietPasses(t, cluster), dryRunCount(t, cluster)
	testenv.Eventually(t, "two more quiet passes", func() string {
		if got := quietPasses(t, cluster); got < quiet+2 {
			return fmt.Sprintf("navarch_quiet_passes_total of the Cluster went from %v to %v", quiet, got)
		}
		return ""
	})
	if got := dryRunCount(t, cluster); got != dryRuns {
		t.Errorf("%v dry runs while nothing changed", got-dryRuns)
	}
	now := &navarchv1.Application{}
	if err := mgmt.Get(ctx, client.ObjectKeyFromObject(app), now); err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != settled.ResourceVersion {
		t.Errorf("the Application was written while nothing changed (resourceVersion %s → %s)", settled.ResourceVersion, now.ResourceVersion)
	}

	// A status written by someone else queues nothing (the router ignores status changes), but
	// it is a new version of the Application: the next poll's pass compares, and puts the
	// status right, rather than ending as quiet on what it saw before.
	if err := mgmt.Status().Patch(ctx, now, client.RawPatch(types.MergePatchType, []byte(`{"status":{"sync":{"status":"OutOfSync"}}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the next poll's pass puts the edited status right", func() string {
		a := getApp(t, app)
		if a.Status.Sync.Status != navarchv1.SyncStatusSynced {
			return "sync status " + string(a.Status.Sync.Status)
		}
		return ""
	})

	// A hand edit is an event: selfHeal reverts it.
	west := workloads["west"].Client
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: target, Name: "settings"}
	if err := west.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	testenv.Update(t, west, cm, func(c *corev1.ConfigMap) { c.Data["greeting"] = "by hand" })
	testenv.Eventually(t, "selfHeal reverts the hand edit", func() string {
		if err := west.Get(ctx, key, cm); err != nil {
			return err.Error()
		}
		if g := cm.Data["greeting"]; g != "one" {
			return "greeting is " + g
		}
		return ""
	})

	// A new commit, with no webhook nor refresh, is synced at the next poll.
	commit := push(t, "two", map[string]string{"cm/settings.yaml": configMap("settings", "two")})
	waitForApp(t, app, "Synced and Healthy at the new commit", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revision == commit
	})
	if err := west.Get(ctx, key, cm); err != nil || cm.Data["greeting"] != "two" {
		t.Errorf("after the new commit the ConfigMap is %v (%v), want greeting two", cm.Data, err)
	}

	// A kustomize overlay whose base is another repository's branch: when the base moves, the
	// overlay's commit does not, but the next poll's pass renders other objects and compares
	// them, rather than ending as quiet on the commit it saw before: the Application is
	// OutOfSync at the same revision (automated sync does not sync a revision again; selfHeal
	// would).
	baseRepo := testenv.Name(t) + "-base"
	baseDir := t.TempDir()
	writeFiles(t, baseDir, map[string]string{
		"web/kustomization.yaml": "resources: [settings.yaml]\n",
		"web/settings.yaml":      configMap("base-settings", "one"),
	})
	if _, err := git.CreateRepo(baseRepo, baseDir); err != nil {
		t.Fatal(err)
	}
	push(t, "overlay", map[string]string{"overlay/kustomization.yaml": "resources:\n- " + git.RepoURL(baseRepo) + "//web?ref=main\n"})
	overlay := createApp(t, ns, fmt.Sprintf(`
metadata: {name: overlay}
spec:
  source: {repoURL: %s, targetRevision: main, path: overlay}
  destination: {name: %s, namespace: %s-overlay}
  syncPolicy:
    automated: {}
    syncOptions: [CreateNamespace=true]
`, git.RepoURL(testenv.Name(t)), cluster, target))
	synced := waitForApp(t, overlay, "the overlay Synced and Healthy", syncedAndHealthy)
	quiet = quietPasses(t, cluster)
	testenv.Eventually(t, "quiet passes of both Applications", func() string {
		if got := quietPasses(t, cluster); got < quiet+4 {
			return fmt.Sprintf("navarch_quiet_passes_total of the Cluster went from %v to %v", quiet, got)
		}
		return ""
	})
	if _, err := git.Update(baseRepo, "base two", func(dir string) error {
		writeFile(t, dir, "web/settings.yaml", configMap("base-settings", "two"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitForApp(t, overlay, "the overlay OutOfSync after its base moved", func(a *navarchv1.Application) bool {
		return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync
	})
	if a := getApp(t, overlay); a.Status.Sync.Revision != synced.Status.Sync.Revision {
		t.Errorf("the overlay's revision went from %s to %s; only its base moved", synced.Status.Sync.Revision, a.Status.Sync.Revision)
	}
}

// An automated sync records its result in one status write: no version of the Application
// shows a succeeded operation next to the comparison made before it (OutOfSync, objects
// Missing), and once it is Synced and Healthy nothing more is written, because the pass that
// synced compared again with the objects as the server returned them.
func TestASyncIsSyncedInThePassThatAppliedIt(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{
		"app/cm.yaml":  configMap("settings", "from git"),
		"app/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n",
	})
	w, err := mgmt.Watch(ctx, &navarchv1.ApplicationList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: once}
spec:
  source: {repoURL: %s, targetRevision: main, path: app}
  destination: {name: east, namespace: %s-once}
  syncPolicy:
    automated: {}
    syncOptions: [CreateNamespace=true]
`, url, ns))

	timeout := time.After(60 * time.Second)
	var synced *navarchv1.Application
	for synced == nil {
		var ev watch.Event
		select {
		case ev = <-w.ResultChan():
		case <-timeout:
			t.Fatalf("not Synced and Healthy within 60s: %s", describe(getApp(t, app)))
		}
		a, ok := ev.Object.(*navarchv1.Application)
		if !ok {
			t.Fatalf("watch event %s: %v", ev.Type, ev.Object)
		}
		if s := a.Status.OperationState; s != nil && s.Phase == navarchv1.OperationSucceeded && a.Status.Sync.Status != navarchv1.SyncStatusSynced {
			t.Fatalf("version %s records the operation Succeeded but the Application %s: %s", a.ResourceVersion, a.Status.Sync.Status, describe(a))
		}
		if syncedAndHealthy(a) {
			synced = a
		}
	}
	if s := synced.Status.OperationState; s == nil || s.Phase != navarchv1.OperationSucceeded {
		t.Fatalf("Synced and Healthy without a succeeded operation: %s", describe(synced))
	}
	// The watch events of the applied objects queue another pass, which finds the same.
	testenv.Consistently(t, 3*time.Second, "nothing more is written once the Application is Synced and Healthy", func() string {
		select {
		case ev := <-w.ResultChan():
			a, _ := ev.Object.(*navarchv1.Application)
			if a != nil && a.ResourceVersion != synced.ResourceVersion {
				return fmt.Sprintf("version %s was written after %s: %s", a.ResourceVersion, synced.ResourceVersion, describe(a))
			}
		default:
		}
		return ""
	})
}
