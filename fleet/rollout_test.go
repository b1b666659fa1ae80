package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// Progressive rollouts (issue "Progressive rollouts by cluster label"): an ApplicationSet whose
// strategy is RollingSync rolls each commit out to the Clusters labelled env=dev, then
// env=staging, then env=prod, against the real workload clusters. Each test registers its own
// Clusters on the workload apiservers (two Clusters may share an apiserver: each Application
// deploys to a namespace named after its Cluster) and deletes them when it ends.

// rolloutLabel selects a test's Clusters: its value is the test's namespace.
const rolloutLabel = "navarch.io/rollout-test"

// stage is a Cluster a rollout test registers: <ns>-<suffix>, labelled env, on the apiserver
// of a workload cluster.
type stage struct{ suffix, env, workload string }

// stages are the fleet of the rollout tests: one dev, one staging and two prod Clusters.
var stages = []stage{{"dev", "dev", "east"}, {"staging", "staging", "west"}, {"prod-a", "prod", "east"}, {"prod-b", "prod", "west"}}

// registerStages registers each stage as a Cluster that reuses the kubeconfig Secret testenv
// created for its workload cluster, as `navarch cluster add` would for a second context of
// the same cluster. They are deleted when the test ends, after what the test deleted first.
func registerStages(t *testing.T, ns string, fleet ...stage) {
	t.Helper()
	ctx := context.Background()
	for _, s := range fleet {
		c := &navarchv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + s.suffix, Labels: map[string]string{"env": s.env, rolloutLabel: ns}},
			Spec: navarchv1.ClusterSpec{
				Server: workloads[s.workload].Server(),
				KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{
					Namespace: testenv.SystemNamespace, Name: s.workload + "-kubeconfig", Key: "value",
				},
			},
		}
		if err := mgmt.Create(ctx, c); err != nil {
			t.Fatalf("register Cluster %s: %v", c.Name, err)
		}
		t.Cleanup(func() {
			if err := mgmt.Delete(context.Background(), c); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete Cluster %s: %v", c.Name, err)
			}
		})
	}
}

// appName is the name of the Application the test's ApplicationSet generates for a stage.
func appName(ns, suffix string) string { return "web-" + ns + "-" + suffix }

// webSource is the source every Application deploys: a Deployment and a ConfigMap, both at
// version. A failing version's pods fail (navarch.io/simulate: fail, see docs/dev-fleet.md),
// so its Deployment never completes its rollout.
func webSource(version string, failing bool) map[string]string {
	podAnnotations := ""
	if failing {
		podAnnotations = "\n      annotations: {navarch.io/simulate: fail}"
	}
	return map[string]string{
		"web/deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}%s
    spec: {containers: [{name: web, image: "registry.example.com/web:%s"}]}
`, podAnnotations, version),
		"web/configmap.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: %q}\n", version),
	}
}

// Strategies of the tests: dev, then staging, then prod one Application at a time. Both dev
// and staging soak for a few seconds.
const (
	soak            = 3 * time.Second
	threeStageSteps = `
      - matchExpressions: [{key: env, operator: In, values: [dev]}]
        minSuccessTime: 3s%s
      - matchExpressions: [{key: env, operator: In, values: [staging]}]
        minSuccessTime: 3s
      - matchExpressions: [{key: env, operator: In, values: [prod]}]
        maxUpdate: 1%s`
)

// createRolloutSet creates the ApplicationSet "web" in ns: one Application per Cluster of the
// test, labelled with the Cluster's env, deploying web/ to a namespace named after the Cluster
// with automated prune, rolled out by steps (the YAML list of spec.strategy.rollingSync.steps).
func createRolloutSet(t *testing.T, ns, url, steps, extraStrategy string) *navarchv1.ApplicationSet {
	t.Helper()
	set := &navarchv1.ApplicationSet{}
	if err := yaml.UnmarshalStrict(fmt.Appendf(nil, `
metadata: {name: web, namespace: %[1]s}
spec:
  generators: [{clusters: {selector: {matchLabels: {%[3]s: %[1]s}}}}]
  strategy:
    type: RollingSync
    rollingSync:
      steps:%[4]s
%[5]s
  template:
    metadata:
      name: 'web-{{name}}'
      labels: {env: '{{metadata.labels.env}}'}
    spec:
      source: {repoURL: %[2]s, targetRevision: main, path: web}
      destination: {name: '{{name}}', namespace: '{{name}}'}
      syncPolicy:
        automated: {prune: true}
        syncOptions: [CreateNamespace=true]
`, ns, url, rolloutLabel, steps, extraStrategy), set); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Create(context.Background(), set); err != nil {
		t.Fatalf("create ApplicationSet: %v", err)
	}
	t.Cleanup(func() { deleteRolloutSet(t, set) })
	return set
}

// deleteRolloutSet deletes the ApplicationSet and its Applications (the management cluster
// runs no garbage collector), and waits a while for the Applications to delete their
// resources, before the test's Clusters go.
func deleteRolloutSet(t *testing.T, set *navarchv1.ApplicationSet) {
	ctx := context.Background()
	if err := mgmt.Delete(ctx, set); client.IgnoreNotFound(err) != nil {
		t.Errorf("delete ApplicationSet: %v", err)
	}
	if err := mgmt.DeleteAllOf(ctx, &navarchv1.Application{}, client.InNamespace(set.Namespace)); err != nil {
		t.Errorf("delete Applications: %v", err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var list navarchv1.ApplicationList
		if err := mgmt.List(ctx, &list, client.InNamespace(set.Namespace)); err != nil || len(list.Items) == 0 {
			return
		}
	}
}

func getSet(t *testing.T, set *navarchv1.ApplicationSet) *navarchv1.ApplicationSet {
	t.Helper()
	got := &navarchv1.ApplicationSet{}
	if err := mgmt.Get(context.Background(), client.ObjectKeyFromObject(set), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// describeRollout summarises a rollout as `navarch appset rollout` shows it.
func describeRollout(set *navarchv1.ApplicationSet) string {
	var b strings.Builder
	if ro := set.Status.Rollout; ro != nil {
		fmt.Fprintf(&b, "rollout %s at step %d: %s\n", ro.Phase, ro.Step, ro.Message)
	} else {
		b.WriteString("no rollout status\n")
	}
	for _, s := range set.Status.ApplicationStatus {
		fmt.Fprintf(&b, "  %s (step %q) %s at %.8s: %s\n", s.Application, s.Step, s.Status, s.TargetRevision, s.Message)
	}
	for _, c := range set.Status.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// rolloutWait bounds a wait for a whole rollout: three steps, two of them soaking, on a
// loaded machine.
const rolloutWait = 2 * time.Minute

// waitForRollout waits until the rollout reaches phase with every Application of the given
// stages rolled out at commit (Healthy, Synced at commit).
func waitForRollout(t *testing.T, set *navarchv1.ApplicationSet, phase navarchv1.RolloutPhase, commit string, at ...string) *navarchv1.ApplicationSet {
	t.Helper()
	var got *navarchv1.ApplicationSet
	testenv.EventuallyWithin(t, rolloutWait, fmt.Sprintf("the rollout is %s with %v at %.8s", phase, at, commit), func() string {
		got = getSet(t, set)
		if ro := got.Status.Rollout; ro == nil || ro.Phase != phase {
			return describeRollout(got)
		}
		for _, suffix := range at {
			a := &navarchv1.Application{}
			if err := mgmt.Get(context.Background(), client.ObjectKey{Namespace: set.Namespace, Name: appName(set.Namespace, suffix)}, a); err != nil {
				return err.Error()
			}
			if !rolledOut(a, commit) {
				return a.Name + " is not Synced and Healthy at " + commit[:8] + "\n" + describeRollout(got) + describe(a)
			}
		}
		return ""
	})
	return got
}

// rolledOut: the Application's last operation synced commit, and it is Synced and Healthy there.
func rolledOut(a *navarchv1.Application, commit string) bool {
	op := a.Status.OperationState
	return a.Operation == nil && op != nil && op.Phase == navarchv1.OperationSucceeded && op.SyncResult != nil && op.SyncResult.Revision == commit &&
		a.Status.Sync.Status == navarchv1.SyncStatusSynced && a.Status.Sync.Revision == commit && a.Status.Health.Status == navarchv1.HealthHealthy
}

// refreshApps asks the controller to compare the named Applications with Git again, in that
// order, as a push webhook (or `navarch app diff --refresh`) does; it does not wait.
func refreshApps(t *testing.T, ns string, suffixes ...string) {
	t.Helper()
	for _, s := range suffixes {
		requestRefresh(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, appName(ns, s))})
	}
}

// deployedVersion is the version of the web ConfigMap a stage's cluster holds ("" if none).
func deployedVersion(t *testing.T, ns string, s stage) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := workloads[s.workload].Client.Get(context.Background(), client.ObjectKey{Namespace: ns + "-" + s.suffix, Name: "web"}, cm)
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data["version"]
}

// historyAt counts the successful syncs of commit in the Application's history.
func historyAt(a *navarchv1.Application, commit string) int {
	n := 0
	for _, h := range a.Status.History {
		if h.Revision == commit {
			n++
		}
	}
	return n
}

// --- the rollout log ----------------------------------------------------------------------

// rolloutLog records every version of a test's ApplicationSet and of its Applications from
// watches started before the change under test. Each watch delivers its kind's versions in
// the order the apiserver made them, so the Application versions are one history of the
// rollout, whatever the timing.
type rolloutLog struct {
	mu   sync.Mutex
	apps []appVersion
	sets []*navarchv1.ApplicationSet
	err  error
	stop context.CancelFunc
}

type appVersion struct {
	at      time.Time
	deleted bool
	app     *navarchv1.Application
}

// watchRollout starts recording ns's ApplicationSets and Applications until the test ends.
func watchRollout(t *testing.T, ns string) *rolloutLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &rolloutLog{stop: cancel}
	apps, err := mgmt.Watch(ctx, &navarchv1.ApplicationList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	sets, err := mgmt.Watch(ctx, &navarchv1.ApplicationSetList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	record := func(w watch.Interface, add func(watch.Event) bool) {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				l.mu.Lock()
				if !ok || !add(ev) {
					if l.err == nil && ctx.Err() == nil {
						l.err = fmt.Errorf("the watch ended early: %v %v", ev.Type, ev.Object)
					}
					l.mu.Unlock()
					return
				}
				l.mu.Unlock()
			}
		}
	}
	wg.Go(func() {
		record(apps, func(ev watch.Event) bool {
			a, ok := ev.Object.(*navarchv1.Application)
			if ok {
				l.apps = append(l.apps, appVersion{at: time.Now(), deleted: ev.Type == watch.Deleted, app: a})
			}
			return ok
		})
	})
	wg.Go(func() {
		record(sets, func(ev watch.Event) bool {
			s, ok := ev.Object.(*navarchv1.ApplicationSet)
			if ok {
				l.sets = append(l.sets, s)
			}
			return ok
		})
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return l
}

// appHistory returns the Application versions recorded so far, failing the test if a watch
// broke.
func (l *rolloutLog) appHistory(t *testing.T) []appVersion {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		t.Fatal(l.err)
	}
	return slices.Clone(l.apps)
}

func (l *rolloutLog) setHistory(t *testing.T) []*navarchv1.ApplicationSet {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		t.Fatal(l.err)
	}
	return slices.Clone(l.sets)
}

// first returns the index of the first version, at or after from, of Application name that
// satisfies cond; -1 if none.
func first(h []appVersion, from int, name string, cond func(*navarchv1.Application) bool) int {
	for i := max(from, 0); i < len(h); i++ {
		if h[i].app.Name == name && !h[i].deleted && cond(h[i].app) {
			return i
		}
	}
	return -1
}

// requestedAt: the rollout asked for a sync of commit, pinned in operation.sync.revision.
func requestedAt(commit string) func(*navarchv1.Application) bool {
	return func(a *navarchv1.Application) bool {
		return a.Operation != nil && a.Operation.Sync != nil && a.Operation.Sync.Revision == commit
	}
}

// syncingAt: an operation of commit has started (it may have finished too).
func syncingAt(commit string) func(*navarchv1.Application) bool {
	return func(a *navarchv1.Application) bool {
		op := a.Status.OperationState
		return op != nil && op.SyncResult != nil && op.SyncResult.Revision == commit
	}
}

func rolledOutAt(commit string) func(*navarchv1.Application) bool {
	return func(a *navarchv1.Application) bool { return rolledOut(a, commit) }
}

// busyAt: the Application's rollout of commit is under way: requested, syncing, or synced and
// not yet Healthy.
func busyAt(a *navarchv1.Application, commit string) bool {
	return requestedAt(commit)(a) || (syncingAt(commit)(a) && !rolledOut(a, commit))
}

// checkRolloutOrder checks, on the recorded history of the Applications, that commit went to
// the stages step by step: each stage's sync of commit was requested (with the revision
// pinned) only once every stage of the step before was Synced and Healthy at it, and the prod
// stages were never both under way.
func checkRolloutOrder(t *testing.T, ns string, h []appVersion, commit string) {
	t.Helper()
	idx := func(what, suffix string, cond func(*navarchv1.Application) bool) int {
		i := first(h, 0, appName(ns, suffix), cond)
		if i < 0 {
			t.Fatalf("%s never %s at %.8s (%d versions recorded)", appName(ns, suffix), what, commit, len(h))
		}
		return i
	}
	devDone := idx("rolled out", "dev", rolledOutAt(commit))
	stagingAsked, stagingDone := idx("requested", "staging", requestedAt(commit)), idx("rolled out", "staging", rolledOutAt(commit))
	if stagingAsked < devDone {
		t.Errorf("staging's sync of %.8s was requested (version %d) before dev was Healthy at it (version %d)", commit, stagingAsked, devDone)
	}
	for _, prod := range []string{"prod-a", "prod-b"} {
		if asked := idx("requested", prod, requestedAt(commit)); asked < stagingDone {
			t.Errorf("%s's sync of %.8s was requested (version %d) before staging was Healthy at it (version %d)", prod, commit, asked, stagingDone)
		}
		idx("rolled out", prod, rolledOutAt(commit))
	}
	// maxUpdate 1: replay the history and look at both prod Applications after each version.
	latest := map[string]*navarchv1.Application{}
	for i, v := range h {
		latest[v.app.Name] = v.app
		a, b := latest[appName(ns, "prod-a")], latest[appName(ns, "prod-b")]
		if a != nil && b != nil && busyAt(a, commit) && busyAt(b, commit) {
			t.Fatalf("version %d: both prod Applications are rolling out %.8s at once (maxUpdate 1):\n%s: %s\n%s: %s",
				i, commit, a.Name, describe(a), b.Name, describe(b))
		}
	}
}

// checkSetNeverBusyTwice checks every recorded version of status.applicationStatus: no two
// Applications of the prod step are Pending or Progressing at once.
func checkSetNeverBusyTwice(t *testing.T, sets []*navarchv1.ApplicationSet) {
	t.Helper()
	for _, s := range sets {
		var busy []string
		for _, a := range s.Status.ApplicationStatus {
			if a.Step == "3" && (a.Status == navarchv1.RolloutPending || a.Status == navarchv1.RolloutProgressing) {
				busy = append(busy, a.Application)
			}
		}
		if len(busy) > 1 {
			t.Fatalf("status.applicationStatus (resourceVersion %s) shows %v under way at once in the prod step (maxUpdate 1):\n%s",
				s.ResourceVersion, busy, describeRollout(s))
		}
	}
}

// rolloutStages gives a test its namespace, a Git repository holding web v1 (and that
// commit), and the dev, staging, prod-a and prod-b Clusters of its own.
func rolloutStages(t *testing.T) (ns, url, v1 string) {
	t.Helper()
	ns = testenv.Namespace(t, mgmt)
	url = repo(t, webSource("v1", false))
	v1, err := git.Resolve(testenv.Name(t), "main")
	if err != nil {
		t.Fatal(err)
	}
	registerStages(t, ns, stages...)
	return ns, url, v1
}

// --- the stories ----------------------------------------------------------------------------

// A platform team rolls every commit out to dev, then staging, then prod one cluster at a
// time. The first rollout (the ApplicationSet is new) and the rollout of the next commit both
// go step by step: dev syncs first, staging only once dev is Healthy and has soaked, prod after
// staging, one prod cluster at a time; each sync pins the commit; each Application syncs each
// commit once.
func TestRolloutGoesDevStagingProdOneProdClusterAtATime(t *testing.T) {
	ns, url, v1 := rolloutStages(t)
	log := watchRollout(t, ns)
	set := createRolloutSet(t, ns, url, fmt.Sprintf(threeStageSteps, "", ""), "")

	got := waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v1, "dev", "staging", "prod-a", "prod-b")
	checkRolloutOrder(t, ns, log.appHistory(t), v1)
	if c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ApplicationSetRolloutProgressing); c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != "RolloutCompleted" || !strings.Contains(c.Message, "all 3 steps done at "+v1[:8]) {
		t.Errorf("RolloutProgressing condition %+v, want False, RolloutCompleted, \"all 3 steps done at %.8s\"", c, v1)
	}
	for _, s := range stages {
		if v := deployedVersion(t, ns, s); v != "v1" {
			t.Errorf("cluster %s-%s holds version %q, want v1", ns, s.suffix, v)
		}
	}

	// The next commit. The push is delivered as a webhook would: every Application compares
	// again, in no particular order (here prod first).
	v2 := push(t, "web v2", webSource("v2", false))
	refreshApps(t, ns, "prod-b", "prod-a", "staging", "dev")
	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v2, "dev", "staging", "prod-a", "prod-b")
	h := log.appHistory(t)
	checkRolloutOrder(t, ns, h, v2)
	checkSetNeverBusyTwice(t, log.setHistory(t))

	// The soak, on the controller's own clocks: staging's sync started no sooner than
	// minSuccessTime after the rollout recorded dev Healthy.
	soaked := false
	for _, s := range log.setHistory(t) {
		ro := s.Status.Rollout
		if ro == nil || ro.Step != 1 || ro.StepHealthyAt == nil || !strings.Contains(ro.Message, "soaking") || !slices.ContainsFunc(s.Status.ApplicationStatus,
			func(a navarchv1.RolloutApplicationStatus) bool { return a.TargetRevision == v2 && a.Step == "1" }) {
			continue
		}
		staging := getApp(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, appName(ns, "staging"))})
		if started := staging.Status.OperationState.StartedAt; started.Before(&metav1.Time{Time: ro.StepHealthyAt.Add(soak)}) {
			t.Errorf("staging's sync of v2 started at %s, before dev's soak ended (Healthy at %s + %s)", started.UTC(), ro.StepHealthyAt.UTC(), soak)
		}
		soaked = true
		break
	}
	if !soaked {
		t.Errorf("no recorded version of the rollout shows dev soaking at v2")
	}
	for _, s := range stages {
		a := getApp(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, appName(ns, s.suffix))})
		if n := historyAt(a, v2); n != 1 {
			t.Errorf("%s synced v2 %d times, want once: history %+v", a.Name, n, a.Status.History)
		}
		if op := a.Status.OperationState; op.Operation.InitiatedBy.Username != "applicationset/web" || op.Operation.Sync.Revision != v2 {
			t.Errorf("%s's last sync was initiated by %q at revision %q, want the rollout's (applicationset/web) pinned at %.8s",
				a.Name, op.Operation.InitiatedBy.Username, op.Operation.Sync.Revision, v2)
		}
		if v := deployedVersion(t, ns, s); v != "v2" {
			t.Errorf("cluster %s-%s holds version %q, want v2", ns, s.suffix, v)
		}
	}
}

// A user previews what the next commit changes in prod before it rolls out (`navarch app diff
// --refresh` on a prod Application): that prod Application sees the commit first. The rollout
// still goes dev → staging → prod: it never syncs a commit to a step before the earlier steps
// have it, and it has the other Applications compare with Git again so that the commit rolls
// out everywhere, in order.
func TestRolloutOrderHoldsWhenProdSeesTheCommitFirst(t *testing.T) {
	ns, url, v1 := rolloutStages(t)
	set := createRolloutSet(t, ns, url, fmt.Sprintf(threeStageSteps, "", ""), "")
	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v1, "dev", "staging", "prod-a", "prod-b")

	log := watchRollout(t, ns)
	v2 := push(t, "web v2", webSource("v2", false))
	refresh(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, appName(ns, "prod-a"))})
	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v2, "dev", "staging", "prod-a", "prod-b")
	checkRolloutOrder(t, ns, log.appHistory(t), v2)
	checkSetNeverBusyTwice(t, log.setHistory(t))
}

// A commit whose Deployment never becomes Available halts the rollout at dev once dev's
// progressDeadline passes: staging and prod keep the previous commit, the rollout's status and
// condition name the failing Application, and a fixing commit restarts the rollout, which then
// completes.
func TestRolloutHaltsAtDevOnABadCommitAndAFixRestartsIt(t *testing.T) {
	ns, url, v1 := rolloutStages(t)
	set := createRolloutSet(t, ns, url, fmt.Sprintf(threeStageSteps, "\n        progressDeadline: 30s", ""), "")
	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v1, "dev", "staging", "prod-a", "prod-b")

	bad := push(t, "web v2: pods that fail", webSource("v2", true))
	refreshApps(t, ns, "dev", "staging", "prod-a", "prod-b")
	dev := appName(ns, "dev")
	var halted *navarchv1.ApplicationSet
	testenv.EventuallyWithin(t, rolloutWait, "the rollout halts at dev", func() string {
		halted = getSet(t, set)
		if ro := halted.Status.Rollout; ro != nil && ro.Phase == navarchv1.RolloutPhaseHalted {
			return ""
		}
		return describeRollout(halted)
	})
	ro := halted.Status.Rollout
	if ro.Step != 1 || !strings.Contains(ro.Message, dev) || !strings.Contains(ro.Message, "progressDeadline") {
		t.Errorf("status.rollout: step %d, message %q; want step 1, naming %s and its progressDeadline", ro.Step, ro.Message, dev)
	}
	c := meta.FindStatusCondition(halted.Status.Conditions, navarchv1.ApplicationSetRolloutProgressing)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "RolloutHalted" || !strings.Contains(c.Message, dev) {
		t.Errorf("RolloutProgressing condition %+v; want False, RolloutHalted, naming %s", c, dev)
	}
	if a := getApp(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, dev)}); historyAt(a, bad) != 1 {
		t.Errorf("dev did not sync the bad commit: %s", describe(a))
	}
	testenv.Consistently(t, 5*time.Second, "staging and prod keep v1 while the rollout is halted", func() string {
		for _, s := range stages[1:] {
			a := getApp(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, appName(ns, s.suffix))})
			if a.Operation != nil || historyAt(a, bad) > 0 || a.Status.OperationState.SyncResult.Revision != v1 {
				return a.Name + " was synced to the bad commit: " + describe(a)
			}
			if v := deployedVersion(t, ns, s); v != "v1" {
				return fmt.Sprintf("cluster %s-%s holds version %q", ns, s.suffix, v)
			}
		}
		return ""
	})

	fixed := push(t, "web v3: fixed", webSource("v3", false))
	refreshApps(t, ns, "dev", "staging", "prod-a", "prod-b")
	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, fixed, "dev", "staging", "prod-a", "prod-b")
	for _, s := range stages {
		if v := deployedVersion(t, ns, s); v != "v3" {
			t.Errorf("cluster %s-%s holds version %q, want v3", ns, s.suffix, v)
		}
	}
}

// A manual gate: prod requires approval. Dev and staging roll out, then the rollout waits in
// WaitingForApproval with prod untouched, until the user promotes step 3 with the
// navarch.io/promote annotation; the controller records the approval, removes the annotation,
// and prod syncs.
func TestRolloutWaitsForApprovalBeforeProd(t *testing.T) {
	ns, url, v1 := rolloutStages(t)
	set := createRolloutSet(t, ns, url, fmt.Sprintf(threeStageSteps, "", "\n        requireApproval: true"), "")

	waiting := waitForRollout(t, set, navarchv1.RolloutPhaseWaitingForApproval, v1, "dev", "staging")
	if ro := waiting.Status.Rollout; ro.Step != 3 || !strings.Contains(ro.Message, "approval") {
		t.Errorf("status.rollout: step %d, %q; want step 3 waiting for approval", ro.Step, ro.Message)
	}
	if c := meta.FindStatusCondition(waiting.Status.Conditions, navarchv1.ApplicationSetRolloutProgressing); c == nil || c.Reason != "WaitingForApproval" {
		t.Errorf("RolloutProgressing condition %+v, want reason WaitingForApproval", c)
	}
	testenv.Consistently(t, 3*time.Second, "prod is untouched until promoted", func() string {
		for _, s := range stages[2:] {
			a := getApp(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, appName(ns, s.suffix))})
			if a.Operation != nil || a.Status.OperationState != nil {
				return a.Name + " was synced before the step was promoted: " + describe(a)
			}
			if v := deployedVersion(t, ns, s); v != "" {
				return fmt.Sprintf("cluster %s-%s holds version %q", ns, s.suffix, v)
			}
		}
		if ro := getSet(t, set).Status.Rollout; ro.Phase != navarchv1.RolloutPhaseWaitingForApproval {
			return "the rollout is " + string(ro.Phase)
		}
		return ""
	})

	testenv.Update(t, mgmt, set, func(s *navarchv1.ApplicationSet) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[navarchv1.AnnotationPromote] = "3"
	})
	done := waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v1, "dev", "staging", "prod-a", "prod-b")
	if _, ok := done.Annotations[navarchv1.AnnotationPromote]; ok {
		t.Errorf("the annotation %s is still there after the promotion", navarchv1.AnnotationPromote)
	}
	if !slices.Contains(done.Status.Rollout.ApprovedSteps, 3) {
		t.Errorf("status.rollout.approvedSteps %v, want step 3 recorded", done.Status.Rollout.ApprovedSteps)
	}
}

// The controller restarts (a crash, an upgrade) while prod is rolling out. The new controller
// continues where the old one was: no step runs again, and no Application syncs one commit
// twice.
func TestRolloutContinuesAfterAControllerRestart(t *testing.T) {
	ns, url, v1 := rolloutStages(t)
	set := createRolloutSet(t, ns, url, fmt.Sprintf(threeStageSteps, "", ""), "")
	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v1, "dev", "staging", "prod-a", "prod-b")

	log := watchRollout(t, ns)
	v2 := push(t, "web v2", webSource("v2", false))
	refreshApps(t, ns, "dev", "staging", "prod-a", "prod-b")
	var before *navarchv1.ApplicationSet
	testenv.EventuallyWithin(t, rolloutWait, "prod is rolling out v2", func() string {
		before = getSet(t, set)
		for _, a := range before.Status.ApplicationStatus {
			if a.Step == "3" && a.TargetRevision == v2 && (a.Status == navarchv1.RolloutPending || a.Status == navarchv1.RolloutProgressing) {
				return ""
			}
		}
		return describeRollout(before)
	})
	restartController(t)
	restarted := len(log.setHistory(t))

	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v2, "dev", "staging", "prod-a", "prod-b")
	checkRolloutOrder(t, ns, log.appHistory(t), v2)
	sets := log.setHistory(t)
	checkSetNeverBusyTwice(t, sets)
	for _, s := range sets[restarted:] {
		if ro := s.Status.Rollout; ro != nil && ro.Revisions == before.Status.Rollout.Revisions && ro.Step < 3 {
			t.Errorf("after the restart the rollout went back to step %d (%s)", ro.Step, ro.Message)
		}
	}
	for _, s := range stages {
		a := getApp(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, appName(ns, s.suffix))})
		if n := historyAt(a, v2); n != 1 {
			t.Errorf("%s synced v2 %d times, want once: history %+v", a.Name, n, a.Status.History)
		}
	}
	// The started operations, counted from the recorded versions: one per Application.
	starts := map[string]int{}
	last := map[string]string{}
	for _, v := range log.appHistory(t) {
		op := v.app.Status.OperationState
		if op == nil || op.SyncResult == nil || op.SyncResult.Revision != v2 {
			continue
		}
		if id := op.StartedAt.String() + op.ID; last[v.app.Name] != id {
			last[v.app.Name] = id
			starts[v.app.Name]++
		}
	}
	for _, s := range stages {
		if n := starts[appName(ns, s.suffix)]; n != 1 {
			t.Errorf("%s: %d operations of v2 recorded, want 1", appName(ns, s.suffix), n)
		}
	}
}

// deletionOrder Reverse: once the ApplicationSet no longer selects its Clusters, its
// Applications are deleted prod first, then staging once prod's are gone, then dev.
func TestRolloutDeletesProdThenStagingThenDev(t *testing.T) {
	ns, url, v1 := rolloutStages(t)
	set := createRolloutSet(t, ns, url, fmt.Sprintf(threeStageSteps, "", ""), "    deletionOrder: Reverse")
	waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v1, "dev", "staging", "prod-a", "prod-b")

	log := watchRollout(t, ns)
	testenv.Update(t, mgmt, set, func(s *navarchv1.ApplicationSet) {
		s.Spec.Generators[0].Clusters.Selector.MatchLabels[rolloutLabel] = ns + "-none"
	})
	testenv.EventuallyWithin(t, rolloutWait, "every Application is deleted", func() string {
		var list navarchv1.ApplicationList
		if err := mgmt.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err.Error()
		}
		var left []string
		for _, a := range list.Items {
			left = append(left, a.Name)
		}
		if len(left) > 0 {
			return fmt.Sprintf("still there: %v", left)
		}
		return ""
	})
	h := log.appHistory(t)
	marked := func(suffix string) int {
		return first(h, 0, appName(ns, suffix), func(a *navarchv1.Application) bool { return !a.DeletionTimestamp.IsZero() })
	}
	gone := func(suffix string) int {
		for i, v := range h {
			if v.deleted && v.app.Name == appName(ns, suffix) {
				return i
			}
		}
		return -1
	}
	for _, later := range []struct{ first, then []string }{
		{[]string{"prod-a", "prod-b"}, []string{"staging"}},
		{[]string{"staging"}, []string{"dev"}},
	} {
		for _, f := range later.first {
			for _, s := range later.then {
				if gone(f) < 0 || marked(s) < 0 || marked(s) < gone(f) {
					t.Errorf("%s was deleted (version %d) before %s was gone (version %d)", appName(ns, s), marked(s), appName(ns, f), gone(f))
				}
			}
		}
	}
	for _, s := range stages {
		if v := deployedVersion(t, ns, s); v != "" {
			t.Errorf("cluster %s-%s still holds the ConfigMap of a deleted Application", ns, s.suffix)
		}
	}
}

// An Application that no step selects (a qa cluster) is reported in the rollout's condition
// and in status.applicationStatus, and never synced: the rollout completes without it.
func TestRolloutReportsAndNeverSyncsAnApplicationNoStepSelects(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, webSource("v1", false))
	v1, err := git.Resolve(testenv.Name(t), "main")
	if err != nil {
		t.Fatal(err)
	}
	qa := stage{"qa", "qa", "west"}
	registerStages(t, ns, stages[0], qa)
	set := createRolloutSet(t, ns, url, `
      - matchExpressions: [{key: env, operator: In, values: [dev]}]`, "")
	done := waitForRollout(t, set, navarchv1.RolloutPhaseCompleted, v1, "dev")
	name := appName(ns, "qa")
	c := meta.FindStatusCondition(done.Status.Conditions, navarchv1.ApplicationSetRolloutProgressing)
	if c == nil || !strings.Contains(c.Message, "match no step") || !strings.Contains(c.Message, name) {
		t.Errorf("RolloutProgressing condition %+v; want it to name %s as matched by no step", c, name)
	}
	i := slices.IndexFunc(done.Status.ApplicationStatus, func(s navarchv1.RolloutApplicationStatus) bool { return s.Application == name })
	if i < 0 {
		t.Fatalf("status.applicationStatus has no entry for %s:\n%s", name, describeRollout(done))
	}
	if s := done.Status.ApplicationStatus[i]; s.Step != "" || s.Status != navarchv1.RolloutWaiting || !strings.Contains(s.Message, "matched by no step") {
		t.Errorf("status.applicationStatus of %s: %+v; want no step, Waiting, \"matched by no step\"", name, s)
	}
	testenv.Consistently(t, 3*time.Second, "the qa Application is never synced", func() string {
		a := getApp(t, &navarchv1.Application{ObjectMeta: objectMeta(ns, name)})
		if a.Operation != nil || a.Status.OperationState != nil || len(a.Status.History) > 0 {
			return "it was synced: " + describe(a)
		}
		if a.Status.Sync.Status != navarchv1.SyncStatusOutOfSync {
			return "it is not reported OutOfSync: " + describe(a)
		}
		if v := deployedVersion(t, ns, qa); v != "" {
			return "its cluster holds version " + v
		}
		return ""
	})
}
