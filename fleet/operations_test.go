package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	fleetsource "github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/testenv"
)

// hookJob is a Job hook. podAnnotations go on its pod template (navarch.io/simulate: fail,
// navarch.io/simulate-duration: 5s).
func hookJob(generateName, phase, policy string, podAnnotations map[string]string) string {
	annotations := map[string]string{"navarch.io/hook": phase}
	if policy != "" {
		annotations["navarch.io/hook-delete-policy"] = policy
	}
	job := map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"generateName": generateName, "annotations": annotations},
		"spec": map[string]any{
			"backoffLimit": 0,
			"template": map[string]any{
				"metadata": map[string]any{"annotations": podAnnotations},
				"spec": map[string]any{
					"restartPolicy": "Never",
					"containers":    []any{map[string]any{"name": "migrate", "image": "registry.example.com/migrate:v1"}},
				},
			},
		},
	}
	data, _ := yaml.Marshal(job)
	return string(data)
}

// deployment is Deployment "web" in wave 0.
func deployment() string {
	const name, wave = "web", "0"
	d := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "annotations": map[string]string{"navarch.io/sync-wave": wave}},
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": map[string]string{"app": name}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]string{"app": name}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": name, "image": "registry.example.com/" + name + ":v1"}}},
			},
		},
	}
	data, _ := yaml.Marshal(d)
	return string(data)
}

func manualApp(t *testing.T, ns, url, path, cluster, target, extra string) *navarchv1.Application {
	t.Helper()
	return createApp(t, ns, fmt.Sprintf(`
metadata: {name: %s}
spec:
  source: {repoURL: %s, targetRevision: main, path: %s}
  destination: {name: %s, namespace: %s}
  syncPolicy:
    syncOptions: [CreateNamespace=true]
%s`, path, url, path, cluster, target, extra))
}

func operationDone(a *navarchv1.Application) bool {
	s := a.Status.OperationState
	return s != nil && s.Phase != navarchv1.OperationRunning
}

func results(a *navarchv1.Application) []string {
	var out []string
	for _, r := range a.Status.OperationState.SyncResult.Resources {
		out = append(out, fmt.Sprintf("%s/%s:%s:%s%s", r.SyncPhase, r.Kind, r.Status, r.HookPhase, map[bool]string{true: "(hook)"}[r.HookType != ""]))
	}
	return out
}

func jobs(t *testing.T, c client.Client, ns string) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// Seed 1: a PreSync Job hook with HookSucceeded runs before the Deployment and is deleted
// after the sync succeeds.
func TestPreSyncHookRunsFirstAndIsDeletedAfterSuccess(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-app"
	url := repo(t, map[string]string{
		"app/migrate.yaml": hookJob("migrate-", "PreSync", "HookSucceeded", nil),
		"app/web.yaml":     deployment(),
	})
	app := manualApp(t, ns, url, "app", "east", target, "")
	waitForApp(t, app, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
	requestSync(t, app)
	got := waitForApp(t, app, "sync finished", operationDone)
	if p := got.Status.OperationState.Phase; p != navarchv1.OperationSucceeded {
		t.Fatalf("operation %s: %s", p, got.Status.OperationState.Message)
	}
	want := []string{"PreSync/Job:Synced:Succeeded(hook)", "Sync/Deployment:Synced:"}
	if r := results(got); !slices.Equal(r, want) {
		t.Errorf("task results %v, want %v (the hook before the Deployment)", r, want)
	}
	hook := got.Status.OperationState.SyncResult.Resources[0]
	if !strings.HasPrefix(hook.Name, "migrate-") || hook.Name == "migrate-" {
		t.Errorf("hook instance name %q: want a name generated from migrate-", hook.Name)
	}
	testenv.Eventually(t, "the HookSucceeded hook is deleted", func() string {
		if j := jobs(t, workloads["east"].Client, target); len(j) > 0 {
			return fmt.Sprintf("%d Jobs left: %s", len(j), j[0].Name)
		}
		return ""
	})
	for _, r := range got.Status.Resources {
		if r.Kind == "Job" {
			t.Errorf("the hook is part of the compared resources: %+v", r)
		}
	}
	// The operation was seen running while its hook ran: an Event for its start, one for its
	// end.
	waitForOperationEvents(t, app, []string{"OperationStarted: sync of " + short(got) + " started by test", "OperationSucceeded: synced " + short(got) + ": successfully synced"})
}

// An operation that starts and ends in one pass was never seen running: one Event, at its
// end, says who started it. An automated sync of a ConfigMap is such an operation (a
// requested one is first recorded as running, so that a crash cannot lose it).
func TestAnOperationEndedInItsFirstPassIsOneEvent(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: greeting}\ndata: {text: hello}\n"})
	app := manualApp(t, ns, url, "app", "east", ns+"-app", "    automated: {}")
	got := waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	if st := got.Status.OperationState; st == nil || st.Phase != navarchv1.OperationSucceeded {
		t.Fatalf("operation state %+v, want Succeeded", st)
	}
	waitForOperationEvents(t, app, []string{"OperationSucceeded: synced " + short(got) + " (started by automated sync): successfully synced"})
	testenv.Consistently(t, 3*time.Second, "no other operation Event", func() string {
		if got := operationEvents(t, app); len(got) != 1 {
			return fmt.Sprintf("Events %q", got)
		}
		return ""
	})
}

// short is the abbreviated revision of a's operation, as Events give it.
func short(a *navarchv1.Application) string {
	return fleetsource.ShortRevision(a.Status.OperationState.SyncResult.Revision)
}

// operationEvents are the "Reason: message" of the operation Events of app, oldest first.
func operationEvents(t *testing.T, app *navarchv1.Application) []string {
	t.Helper()
	var events corev1.EventList
	if err := mgmt.List(context.Background(), &events, client.InNamespace(app.Namespace)); err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(events.Items, func(a, b corev1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == app.Name && strings.HasPrefix(e.Reason, "Operation") {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// waitForOperationEvents waits until app's operation Events are want.
func waitForOperationEvents(t *testing.T, app *navarchv1.Application, want []string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("the Events %q", want), func() string {
		if got := operationEvents(t, app); !slices.Equal(got, want) {
			return fmt.Sprintf("Events %q", got)
		}
		return ""
	})
}

// Seed 1: a failing PreSync hook fails the operation, the SyncFail hook runs, and nothing of
// the Sync phase is applied.
func TestFailingPreSyncHookRunsSyncFailAndAppliesNothing(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-app"
	url := repo(t, map[string]string{
		"app/migrate.yaml": hookJob("migrate-", "PreSync", "", map[string]string{"navarch.io/simulate": "fail"}),
		"app/notify.yaml":  hookJob("notify-", "SyncFail", "", nil),
		"app/web.yaml":     deployment(),
	})
	app := manualApp(t, ns, url, "app", "east", target, "")
	waitForApp(t, app, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
	requestSync(t, app)
	got := waitForApp(t, app, "sync finished", operationDone)
	state := got.Status.OperationState
	if state.Phase != navarchv1.OperationFailed || !strings.Contains(state.Message, "PreSync hook Job migrate-") {
		t.Fatalf("operation %s %q: want Failed naming the PreSync hook", state.Phase, state.Message)
	}
	want := []string{"PreSync/Job:SyncFailed:Failed(hook)", "SyncFail/Job:Synced:Succeeded(hook)"}
	if r := results(got); !slices.Equal(r, want) {
		t.Errorf("task results %v, want %v", r, want)
	}
	err := workloads["east"].Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "web"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment was applied although the PreSync hook failed: %v", err)
	}
	var names []string
	for _, j := range jobs(t, workloads["east"].Client, target) {
		names = append(names, j.Name)
	}
	if len(names) != 2 {
		t.Errorf("Jobs %v: want the failed hook (kept for inspection) and the SyncFail hook", names)
	}
}

// Three waves (ConfigMap -1, Deployment 0, Service 1) go in order, each after the previous one
// is healthy; a wave whose Deployment never becomes available blocks the next.
func TestWavesWaitForTheHealthOfThePreviousWave(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	east := workloads["east"].Client
	files := func(dir string, minReadySeconds int) map[string]string {
		return map[string]string{
			dir + "/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config, annotations: {navarch.io/sync-wave: \"-1\"}}\ndata: {a: b}\n",
			dir + "/web.yaml": strings.Replace(deployment(), "replicas: 1", fmt.Sprintf("replicas: 1\n  minReadySeconds: %d\n  progressDeadlineSeconds: 7200", minReadySeconds), 1),
			dir + "/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: web, annotations: {argocd.argoproj.io/sync-wave: \"1\"}}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n",
		}
	}
	all := files("good", 0)
	// An hour before its pod counts as available: the Deployment stays Progressing.
	for k, v := range files("stuck", 3600) {
		all[k] = v
	}
	url := repo(t, all)

	good := manualApp(t, ns, url, "good", "east", ns+"-good", "")
	requestSync(t, good)
	got := waitForApp(t, good, "sync finished", operationDone)
	if p := got.Status.OperationState.Phase; p != navarchv1.OperationSucceeded {
		t.Fatalf("operation %s: %s", p, got.Status.OperationState.Message)
	}
	want := []string{"Sync/ConfigMap:Synced:", "Sync/Deployment:Synced:", "Sync/Service:Synced:"}
	if r := results(got); !slices.Equal(r, want) {
		t.Errorf("task results %v, want %v", r, want)
	}
	dep, svc := &appsv1.Deployment{}, &corev1.Service{}
	if err := east.Get(ctx, client.ObjectKey{Namespace: ns + "-good", Name: "web"}, dep); err != nil {
		t.Fatal(err)
	}
	if err := east.Get(ctx, client.ObjectKey{Namespace: ns + "-good", Name: "web"}, svc); err != nil {
		t.Fatal(err)
	}
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && svc.CreationTimestamp.Before(&c.LastTransitionTime) {
			t.Errorf("the wave-1 Service was created at %s, before the wave-0 Deployment became available at %s", svc.CreationTimestamp, c.LastTransitionTime)
		}
	}

	stuck := manualApp(t, ns, url, "stuck", "east", ns+"-stuck", "")
	requestSync(t, stuck)
	waitForApp(t, stuck, "waiting for wave 0", func(a *navarchv1.Application) bool {
		s := a.Status.OperationState
		return s != nil && strings.Contains(s.Message, "waiting for Sync wave 0 to become healthy")
	})
	// However often the controller looks, wave 1 does not start.
	requestRefresh(t, stuck)
	testenv.Consistently(t, 5*time.Second, "wave 1 waits for wave 0", func() string {
		if s := getApp(t, stuck).Status.OperationState; s.Phase != navarchv1.OperationRunning {
			return fmt.Sprintf("operation %s, want still Running behind wave 0: %s", s.Phase, s.Message)
		}
		err := east.Get(ctx, client.ObjectKey{Namespace: ns + "-stuck", Name: "web"}, &corev1.Service{})
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("the wave-1 Service exists although wave 0 never became healthy: %v", err)
		}
		return ""
	})
}

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.retry.example.com}
spec:
  group: retry.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// Retry: a custom resource whose CRD appears only later is retried with growing intervals and
// succeeds once the CRD exists; with the limit reached the operation fails with the last error.
func TestRetryWithBackoffUntilTheCRDExists(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{
		"widget/widget.yaml": "apiVersion: retry.example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n",
	})
	limited := manualApp(t, ns, url, "widget", "west", ns, `
    retry: {limit: 1, backoff: {duration: 1s}}`)
	requestSync(t, limited)
	got := waitForApp(t, limited, "sync finished", operationDone)
	if s := got.Status.OperationState; s.Phase != navarchv1.OperationFailed || s.RetryCount != 1 || !strings.Contains(s.Message, "no kind Widget") {
		t.Errorf("with retry.limit 1: phase %s, retries %d, message %q; want Failed after 1 retry with the last error", s.Phase, s.RetryCount, s.Message)
	}
	if err := mgmt.Delete(ctx, limited); err != nil {
		t.Fatal(err)
	}

	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: widget-forever}
spec:
  source: {repoURL: %s, targetRevision: main, path: widget}
  destination: {name: west, namespace: %s}
  syncPolicy:
    syncOptions: [CreateNamespace=true]
    retry: {limit: -1, backoff: {duration: 1s, factor: 2, maxDuration: 30s}}
`, url, ns))
	requestSync(t, app)
	// Watch the retries: each waits twice as long as the one before.
	waits := map[int64]time.Duration{}
	testenv.Eventually(t, "three retries", func() string {
		s := getApp(t, app).Status.OperationState
		if s == nil || s.NextRetryAt == nil {
			return "no retry scheduled yet"
		}
		// message: "retrying in 2s (retry 2): ..."
		var wait time.Duration
		var n int64
		if _, err := fmt.Sscanf(s.Message, "retrying in %s (retry %d)", new(string), &n); err == nil {
			d, _ := time.ParseDuration(strings.Fields(s.Message)[2])
			wait = d
		}
		waits[s.RetryCount] = wait
		if len(waits) < 3 || waits[3] == 0 {
			return fmt.Sprintf("retries seen: %v", waits)
		}
		return ""
	})
	for n := int64(1); n <= 3; n++ {
		if want := time.Second << (n - 1); waits[n] != want {
			t.Errorf("retry %d waited %s, want %s (1s · 2^%d)", n, waits[n], want, n-1)
		}
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(widgetCRD), &crd.Object); err != nil {
		t.Fatal(err)
	}
	if err := workloads["west"].Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = workloads["west"].Client.Delete(context.Background(), crd) })
	got = waitForApp(t, app, "sync finished", operationDone)
	if s := got.Status.OperationState; s.Phase != navarchv1.OperationSucceeded {
		t.Fatalf("operation %s after the CRD appeared: %s", s.Phase, s.Message)
	}
}

// A controller killed mid-operation (between waves, and while a hook runs) resumes it after
// a restart, and the hook runs exactly once.
func TestOperationsResumeAfterAControllerRestart(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-app"
	east := workloads["east"].Client
	url := repo(t, map[string]string{
		"app/migrate.yaml": hookJob("migrate-", "PreSync", "", map[string]string{"navarch.io/simulate-duration": "6s"}),
		"app/web.yaml":     strings.Replace(deployment(), "replicas: 1", "replicas: 1\n  minReadySeconds: 5", 1),
		"app/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after, annotations: {navarch.io/sync-wave: \"1\"}}\ndata: {a: b}\n",
	})
	app := manualApp(t, ns, url, "app", "east", target, "")
	waitForApp(t, app, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
	requestSync(t, app)

	waitForApp(t, app, "the hook running", func(a *navarchv1.Application) bool {
		s := a.Status.OperationState
		return s != nil && strings.Contains(s.Message, "waiting for PreSync hook")
	})
	restartController(t)
	restarted := time.Now()

	waitForApp(t, app, "waiting between waves", func(a *navarchv1.Application) bool {
		s := a.Status.OperationState
		return s != nil && (strings.Contains(s.Message, "waiting for Sync wave 0") || operationDone(a))
	})
	restartController(t)

	got := waitForApp(t, app, "sync finished", operationDone)
	if p := got.Status.OperationState.Phase; p != navarchv1.OperationSucceeded {
		t.Fatalf("operation %s: %s", p, got.Status.OperationState.Message)
	}
	hooks := jobs(t, east, target)
	if len(hooks) != 1 {
		t.Fatalf("%d hook Jobs exist, want exactly 1 (the hook ran once)", len(hooks))
	}
	if !hooks[0].CreationTimestamp.Time.Before(restarted) {
		t.Errorf("the hook Job was created at %s, after the restart at %s: it ran again", hooks[0].CreationTimestamp, restarted)
	}
	if err := east.Get(ctx, client.ObjectKey{Namespace: target, Name: "after"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the wave-1 ConfigMap: %v", err)
	}
}

// Terminating an operation while a long hook runs deletes the hook and fails the operation.
func TestTerminateDuringALongHook(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-app"
	url := repo(t, map[string]string{
		"app/slow.yaml": hookJob("slow-", "PreSync", "", map[string]string{"navarch.io/simulate-duration": "5m"}),
		"app/web.yaml":  deployment(),
	})
	app := manualApp(t, ns, url, "app", "east", target, "")
	waitForApp(t, app, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
	requestSync(t, app)
	waitForApp(t, app, "the hook running", func(a *navarchv1.Application) bool {
		s := a.Status.OperationState
		return s != nil && strings.Contains(s.Message, "waiting for PreSync hook")
	})
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) {
		a.Annotations = map[string]string{navarchv1.AnnotationTerminateOperation: "true"}
	})
	got := waitForApp(t, app, "terminated", operationDone)
	if s := got.Status.OperationState; s.Phase != navarchv1.OperationFailed || s.Message != "terminated" {
		t.Errorf("operation %s %q, want Failed \"terminated\"", s.Phase, s.Message)
	}
	testenv.Eventually(t, "the running hook is deleted", func() string {
		if j := jobs(t, workloads["east"].Client, target); len(j) > 0 {
			return fmt.Sprintf("%d Jobs left", len(j))
		}
		if _, ok := getApp(t, app).Annotations[navarchv1.AnnotationTerminateOperation]; ok {
			return "the terminate annotation is still set"
		}
		return ""
	})
}

// Rollback to the previous commit syncs it and pauses automated sync.
func TestRollbackToThePreviousCommit(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"cm/cm.yaml": configMap("greeting", "v1")})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: rollback}
spec:
  source: {repoURL: %s, targetRevision: main, path: cm}
  destination: {name: west, namespace: %s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, url, ns))
	first := waitForApp(t, app, "Synced", syncedAndHealthy)
	v1 := first.Status.Sync.Revision
	v2 := push(t, "v2", map[string]string{"cm/cm.yaml": configMap("greeting", "v2")})
	refresh(t, app)
	got := waitForApp(t, app, "synced to v2", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.Sync.Revision == v2 && len(a.Status.History) == 2
	})
	entry := got.Status.History[0]
	if entry.Revision != v1 {
		t.Fatalf("history[0] is %s, want %s", entry.Revision, v1)
	}
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) {
		a.Operation = &navarchv1.Operation{Rollback: &navarchv1.RollbackOperation{ID: entry.ID}, InitiatedBy: navarchv1.OperationInitiator{Username: "test"}}
	})
	waitForApp(t, app, "rolled back", func(a *navarchv1.Application) bool {
		s := a.Status.OperationState
		return s != nil && s.Phase == navarchv1.OperationSucceeded && s.SyncResult.Revision == v1
	})
	testenv.Eventually(t, "automated sync paused", func() string {
		if a := getApp(t, app); a.Annotations[navarchv1.AnnotationAutomatedSyncPaused] == "" {
			return fmt.Sprintf("annotations %v", a.Annotations)
		}
		return ""
	})
	// The controller compares the Application again, sees Git at v2, and does not sync it.
	refresh(t, app)
	testenv.Consistently(t, 5*time.Second, "automated sync stays paused", func() string {
		cm := &corev1.ConfigMap{}
		if err := workloads["west"].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greeting"}, cm); err != nil || cm.Data["greeting"] != "v1" {
			return fmt.Sprintf("after the rollback the ConfigMap holds %v (%v), want v1", cm.Data, err)
		}
		if a := getApp(t, app); a.Status.Sync.Status != navarchv1.SyncStatusOutOfSync || a.Status.OperationState.SyncResult.Revision != v1 {
			return fmt.Sprintf("after the rollback: sync %s, last operation at %s; want OutOfSync (Git has v2) and no new sync",
				a.Status.Sync.Status, a.Status.OperationState.SyncResult.Revision)
		}
		return ""
	})
	// Removing the annotation resumes automated sync.
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) { delete(a.Annotations, navarchv1.AnnotationAutomatedSyncPaused) })
	waitForApp(t, app, "back at v2", func(a *navarchv1.Application) bool {
		return syncedAndHealthy(a) && a.Status.OperationState.SyncResult.Revision == v2
	})
}
