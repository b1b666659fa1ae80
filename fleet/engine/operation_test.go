package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/diff"
)

// harness runs the passes of one Application's operation against a fakeCluster, each pass
// comparing the source with the cluster first, as Reconcile does.
type harness struct {
	t       *testing.T
	e       *Engine
	now     time.Time
	cluster *fakeCluster
	remote  *cluster
	app     *navarchv1.Application
	source  []*unstructured.Unstructured
}

const testCommit = "c0ffee00c0ffee00"

func newHarness(t *testing.T, source ...string) *harness {
	t.Helper()
	h := &harness{t: t, now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), cluster: newFakeCluster()}
	h.e = New(Options{Now: func() time.Time { return h.now }})
	h.remote = &cluster{Name: "east", Cluster: h.cluster}
	h.cluster.add(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}")
	h.app = &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "platform", UID: "app-uid"},
		Spec: navarchv1.ApplicationSpec{
			Destination: navarchv1.ApplicationDestination{Name: "east", Namespace: "shop"},
			SyncPolicy:  &navarchv1.SyncPolicy{},
		},
	}
	for _, m := range source {
		h.source = append(h.source, parse(t, m))
	}
	return h
}

// compare compares the source with the cluster and records it, as Reconcile does.
func (h *harness) compare() *comparison {
	h.t.Helper()
	opts := h.e.syncOptions(h.app)
	desired, hooks, err := h.e.prepare(h.app, h.remote, h.source, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	ig, err := diff.CompileIgnore(h.app.Spec.IgnoreDifferences)
	if err != nil {
		h.t.Fatal(err)
	}
	c := h.e.compare(context.Background(), h.app, h.remote, desired, ig, opts)
	c.commit, c.hooks = testCommit, hooks
	h.e.recordComparison(h.app, c)
	return c
}

// start starts an operation as a request would.
func (h *harness) start(sync navarchv1.SyncOperation) {
	h.compare()
	h.e.startOperation(h.app, navarchv1.Operation{Sync: &sync, InitiatedBy: navarchv1.OperationInitiator{Username: "test"}}, testCommit)
}

// pass runs one pass of the operation and returns its outcome.
func (h *harness) pass(terminate bool) outcome {
	h.t.Helper()
	out, err := h.e.operationPass(context.Background(), h.app, h.remote, h.compare(), terminate)
	if err != nil {
		h.t.Fatalf("pass: %v", err)
	}
	return out
}

func (h *harness) state() *navarchv1.OperationState { return h.app.Status.OperationState }

const (
	configMapManifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config}\ndata: {a: b}"
	widgetManifest    = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}"
	widgetCRDManifest = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions: [{name: v1, served: true, storage: true}]`
	deploymentManifest = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: web:v1}]}}`
	serviceManifest = "apiVersion: v1\nkind: Service\nmetadata: {name: web, annotations: {navarch.io/sync-wave: \"1\"}}\nspec: {ports: [{port: 80}]}"
	hookManifest    = `
apiVersion: batch/v1
kind: Job
metadata: {generateName: migrate-, annotations: {navarch.io/hook: PreSync}}
spec: {template: {spec: {restartPolicy: Never, containers: [{name: m, image: m:v1}]}}}`
)

// setStatus sets the status of a live object, as its controller would.
func (h *harness) setStatus(kind, name string, status map[string]any) {
	h.t.Helper()
	obj := h.cluster.object(kind, "shop", name)
	if obj == nil {
		h.t.Fatalf("no %s %s in the cluster", kind, name)
	}
	if err := unstructured.SetNestedMap(obj.Object, status, "status"); err != nil {
		h.t.Fatal(err)
	}
}

func retry(limit int64, duration string) *navarchv1.RetryStrategy {
	return &navarchv1.RetryStrategy{Limit: limit, Backoff: &navarchv1.Backoff{Duration: duration}}
}

// want is the expected outcome of a pass: its kind, what a wait is for and its timer, and a
// part of the operation's message afterwards.
type want struct {
	kind    outcomeKind
	reason  waitReason
	after   time.Duration
	message string
}

func (w want) check(t *testing.T, pass int, got outcome, state *navarchv1.OperationState) {
	t.Helper()
	if got.kind != w.kind || got.reason != w.reason || got.after != w.after {
		t.Errorf("pass %d: outcome %s; want kind %d, reason %s, after %s", pass, got, w.kind, w.reason, w.after)
	}
	if !strings.Contains(state.Message, w.message) {
		t.Errorf("pass %d: message %q, want it to contain %q", pass, state.Message, w.message)
	}
}

func TestOperationPasses(t *testing.T) {
	type pass struct {
		before    func(h *harness) // what happens before the pass: time passes, objects change
		terminate bool
		want      want
	}
	tests := []struct {
		name   string
		source []string
		setup  func(h *harness)
		sync   navarchv1.SyncOperation
		passes []pass
		check  func(t *testing.T, h *harness)
	}{{
		name:   "an object is applied and the operation succeeds",
		source: []string{configMapManifest},
		passes: []pass{{want: want{kind: kindEnded, message: "successfully synced"}}},
		check: func(t *testing.T, h *harness) {
			if s := h.state(); s.Phase != navarchv1.OperationSucceeded || len(h.app.Status.History) != 1 {
				t.Errorf("phase %s, history %d; want Succeeded and one entry", s.Phase, len(h.app.Status.History))
			}
		},
	}, {
		name:   "a kind nobody defines fails the attempt before anything is applied",
		source: []string{configMapManifest, widgetManifest},
		passes: []pass{{want: want{kind: kindEnded, message: "nothing was applied: Widget w: the cluster has no kind Widget"}}},
		check: func(t *testing.T, h *harness) {
			if s := h.state(); s.Phase != navarchv1.OperationFailed || len(h.cluster.applied) > 0 {
				t.Errorf("phase %s, applied %v; want Failed and nothing applied", s.Phase, h.cluster.applied)
			}
		},
	}, {
		// The defect of issue 11: the failing pass scheduled the retry but asked for no timer.
		name:   "a failed attempt with a retry left waits for a timer set to nextRetryAt",
		source: []string{widgetManifest},
		setup:  func(h *harness) { h.app.Spec.SyncPolicy.Retry = retry(10, "2s") },
		passes: []pass{
			{want: want{kind: kindWait, reason: waitRetry, after: 2 * time.Second, message: "retrying in 2s (retry 1): nothing was applied: Widget w"}},
			// Too early (an event brings a pass): the timer is set again for the rest.
			{before: func(h *harness) { h.now = h.now.Add(500 * time.Millisecond) },
				want: want{kind: kindWait, reason: waitRetry, after: 1500 * time.Millisecond, message: "retrying in 2s (retry 1)"}},
			{before: func(h *harness) { h.now = h.now.Add(1500 * time.Millisecond) },
				want: want{kind: kindWait, reason: waitRetry, after: 4 * time.Second, message: "retrying in 4s (retry 2)"}},
			// The CRD is installed meanwhile: the next attempt succeeds.
			{before: func(h *harness) {
				h.now = h.now.Add(4 * time.Second)
				h.cluster.serve("example.com", "v1", "Widget", "widgets", true)
			}, want: want{kind: kindEnded, message: "successfully synced"}},
		},
		check: func(t *testing.T, h *harness) {
			if s := h.state(); s.Phase != navarchv1.OperationSucceeded || s.RetryCount != 2 || s.NextRetryAt != nil {
				t.Errorf("phase %s, retryCount %d, nextRetryAt %v; want Succeeded after 2 retries", s.Phase, s.RetryCount, s.NextRetryAt)
			}
		},
	}, {
		name:   "the last retry ends the operation Failed with the last error",
		source: []string{widgetManifest},
		setup:  func(h *harness) { h.app.Spec.SyncPolicy.Retry = retry(1, "1s") },
		passes: []pass{
			{want: want{kind: kindWait, reason: waitRetry, after: time.Second, message: "retrying in 1s (retry 1)"}},
			{before: func(h *harness) { h.now = h.now.Add(time.Second) }, want: want{kind: kindEnded, message: "nothing was applied: Widget w"}},
		},
		check: func(t *testing.T, h *harness) {
			if s := h.state(); s.Phase != navarchv1.OperationFailed || strings.HasPrefix(s.Message, "retrying") {
				t.Errorf("phase %s %q; want Failed with the last error", s.Phase, s.Message)
			}
		},
	}, {
		name:   "terminating an operation that waits to retry does not wait",
		source: []string{widgetManifest},
		setup:  func(h *harness) { h.app.Spec.SyncPolicy.Retry = retry(10, "1m") },
		passes: []pass{
			{want: want{kind: kindWait, reason: waitRetry, after: time.Minute, message: "retrying in 1m0s (retry 1)"}},
			{terminate: true, want: want{kind: kindEnded, message: "terminated"}},
		},
	}, {
		name:   "a dry run is not retried",
		source: []string{widgetManifest},
		setup:  func(h *harness) { h.app.Spec.SyncPolicy.Retry = retry(10, "1s") },
		sync:   navarchv1.SyncOperation{DryRun: true},
		passes: []pass{{want: want{kind: kindEnded, message: "nothing was applied"}}},
	}, {
		name:   "a dry run applies nothing",
		source: []string{configMapManifest},
		sync:   navarchv1.SyncOperation{DryRun: true},
		passes: []pass{{want: want{kind: kindEnded, message: "dry run: the server accepts every object"}}},
		check: func(t *testing.T, h *harness) {
			if len(h.cluster.applied) > 0 {
				t.Errorf("a dry run applied %v", h.cluster.applied)
			}
		},
	}, {
		name:   "the next wave waits for the health of the previous one, on its watch events",
		source: []string{deploymentManifest, serviceManifest},
		passes: []pass{
			{want: want{kind: kindWait, reason: waitHealth, message: "waiting for Sync wave 0 to become healthy: Deployment web is Progressing"}},
			{want: want{kind: kindWait, reason: waitHealth, message: "waiting for Sync wave 0"}},
			{before: func(h *harness) {
				h.setStatus("Deployment", "web", map[string]any{"replicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)})
			}, want: want{kind: kindEnded, message: "successfully synced"}},
		},
		check: func(t *testing.T, h *harness) {
			if want := []string{"Deployment web", "Service web"}; !slices.Equal(h.cluster.applied, want) {
				t.Errorf("applied %v, want %v (each once, in wave order)", h.cluster.applied, want)
			}
		},
	}, {
		name:   "a Degraded object fails the attempt at the health gate",
		source: []string{deploymentManifest, serviceManifest},
		passes: []pass{
			{want: want{kind: kindWait, reason: waitHealth, message: "waiting for Sync wave 0"}},
			{before: func(h *harness) {
				h.setStatus("Deployment", "web", map[string]any{"conditions": []any{map[string]any{
					"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "too slow"}}})
			}, want: want{kind: kindEnded, message: "Deployment web is Degraded: too slow"}},
		},
	}, {
		name:   "a custom resource waits, on a timer, until the kind of its CRD is served",
		source: []string{widgetCRDManifest, widgetManifest},
		passes: []pass{
			{want: want{kind: kindWait, reason: waitCRD, after: crdWait, message: "waiting for the CustomResourceDefinition of Widget.example.com to be established"}},
			{before: func(h *harness) { h.cluster.serve("example.com", "v1", "Widget", "widgets", true) },
				want: want{kind: kindEnded, message: "successfully synced"}},
		},
	}, {
		name:   "a hook is created once and waited for on its watch events",
		source: []string{hookManifest, configMapManifest},
		passes: []pass{
			{want: want{kind: kindWait, reason: waitHook, message: "waiting for PreSync hook Job migrate-"}},
			{want: want{kind: kindWait, reason: waitHook, message: "job running"}},
			{before: func(h *harness) {
				h.setStatus("Job", "migrate-"+h.state().ID, map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}})
			}, want: want{kind: kindEnded, message: "successfully synced"}},
		},
		check: func(t *testing.T, h *harness) {
			if want := []string{"Job migrate-" + h.state().ID, "ConfigMap config"}; !slices.Equal(h.cluster.applied, want) {
				t.Errorf("applied %v, want %v", h.cluster.applied, want)
			}
		},
	}, {
		// The controller created the hook, was killed before its status recorded it, and the
		// hook finished before the restarted controller looked: no event will come for it.
		name:   "a hook created before a restart that finished meanwhile is not waited for",
		source: []string{hookManifest, configMapManifest},
		passes: []pass{
			{want: want{kind: kindWait, reason: waitHook, message: "waiting for PreSync hook Job migrate-"}},
			{before: func(h *harness) {
				h.state().SyncResult.Resources = slices.DeleteFunc(h.state().SyncResult.Resources,
					func(r navarchv1.ResourceResult) bool { return r.HookPhase != "" })
				h.setStatus("Job", "migrate-"+h.state().ID, map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}})
			}, want: want{kind: kindEnded, message: "successfully synced"}},
		},
		check: func(t *testing.T, h *harness) {
			if want := []string{"Job migrate-" + h.state().ID, "ConfigMap config"}; !slices.Equal(h.cluster.applied, want) {
				t.Errorf("applied %v, want the hook once, then the ConfigMap", h.cluster.applied)
			}
		},
	}, {
		name:   "Prune=confirm waits for the confirmation annotation",
		source: []string{configMapManifest},
		setup: func(h *harness) {
			h.cluster.add(h.t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: old
  namespace: shop
  labels: {navarch.io/managed: "true"}
  annotations: {navarch.io/tracking-id: "platform_shop:/ConfigMap:shop/old", navarch.io/sync-options: Prune=confirm}`)
			h.app.Status.Resources = []navarchv1.ResourceStatus{{ResourceRef: navarchv1.ResourceRef{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "old"}}}
		},
		sync: navarchv1.SyncOperation{Prune: true},
		passes: []pass{
			{want: want{kind: kindWait, reason: waitPruneConfirmation, message: "waiting for confirmation to prune ConfigMap old (Prune=confirm)"}},
			{before: func(h *harness) { h.app.Annotations = map[string]string{navarchv1.AnnotationPruneConfirmed: "yes"} },
				want: want{kind: kindEnded, message: "successfully synced"}},
		},
		check: func(t *testing.T, h *harness) {
			if !slices.Equal(h.cluster.deleted, []string{"ConfigMap old"}) {
				t.Errorf("deleted %v, want the confirmed ConfigMap", h.cluster.deleted)
			}
		},
	}, {
		name:   "a check that fails after the first wave says the rest was not applied",
		source: []string{deploymentManifest, strings.Replace(widgetManifest, "name: w}", "name: w, annotations: {navarch.io/sync-wave: \"1\"}}", 1)},
		setup:  func(h *harness) { h.cluster.serve("example.com", "v1", "Widget", "widgets", true) },
		passes: []pass{
			{want: want{kind: kindWait, reason: waitHealth, message: "waiting for Sync wave 0"}},
			// The Widget's CRD is deleted meanwhile.
			{before: func(h *harness) { delete(h.cluster.served, schema.GroupKind{Group: "example.com", Kind: "Widget"}) },
				want: want{kind: kindEnded, message: "stopped before applying the rest: Widget w: the cluster has no kind Widget"}},
		},
	}, {
		name: "objects left alone by ApplyOutOfSyncOnly do not count as applied",
		source: []string{configMapManifest, deploymentManifest,
			strings.Replace(widgetManifest, "name: w}", "name: w, annotations: {navarch.io/sync-wave: \"1\"}}", 1)},
		setup: func(h *harness) {
			h.app.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"ApplyOutOfSyncOnly=true"}
			h.cluster.serve("example.com", "v1", "Widget", "widgets", true)
			desired, _, err := h.e.prepare(h.app, h.remote, h.source, h.e.syncOptions(h.app))
			if err != nil {
				h.t.Fatal(err)
			}
			// Wave 0 is in sync, and its Deployment is still rolling out.
			h.cluster.add(h.t, toYAML(h.t, desired[0].obj), toYAML(h.t, desired[1].obj))
		},
		passes: []pass{
			{want: want{kind: kindWait, reason: waitHealth, message: "waiting for Sync wave 0"}},
			{before: func(h *harness) { delete(h.cluster.served, schema.GroupKind{Group: "example.com", Kind: "Widget"}) },
				want: want{kind: kindEnded, message: "nothing was applied: Widget w"}},
		},
		check: func(t *testing.T, h *harness) {
			if len(h.cluster.applied) > 0 {
				t.Errorf("applied %v, want nothing", h.cluster.applied)
			}
		},
	}, {
		name:   "objects in sync are left alone with ApplyOutOfSyncOnly, and recorded once the operation succeeded",
		source: []string{configMapManifest, deploymentManifest, serviceManifest},
		setup: func(h *harness) {
			h.app.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"ApplyOutOfSyncOnly=true"}
			// The ConfigMap and the Service are in the cluster as the source has them.
			desired, _, err := h.e.prepare(h.app, h.remote, h.source, h.e.syncOptions(h.app))
			if err != nil {
				h.t.Fatal(err)
			}
			h.cluster.add(h.t, toYAML(h.t, desired[0].obj), toYAML(h.t, desired[2].obj))
		},
		passes: []pass{
			{want: want{kind: kindWait, reason: waitHealth, message: "waiting for Sync wave 0"}},
			{before: func(h *harness) {
				h.setStatus("Deployment", "web", map[string]any{"replicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)})
			}, want: want{kind: kindEnded, message: "successfully synced"}},
		},
		check: func(t *testing.T, h *harness) {
			if !slices.Equal(h.cluster.applied, []string{"Deployment web"}) {
				t.Errorf("applied %v, want only the Deployment", h.cluster.applied)
			}
			var got []string
			for _, r := range h.state().SyncResult.Resources {
				got = append(got, r.Kind+":"+r.Message)
			}
			if want := []string{"ConfigMap:already in sync", "Deployment:applied", "Service:already in sync"}; !slices.Equal(got, want) {
				t.Errorf("results %v, want %v (plan order)", got, want)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.source...)
			if tc.setup != nil {
				tc.setup(h)
			}
			h.start(tc.sync)
			for i, p := range tc.passes {
				if p.before != nil {
					p.before(h)
				}
				p.want.check(t, i+1, h.pass(p.terminate), h.state())
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

func toYAML(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	data, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(data) // JSON is YAML
}

// runOperation turns an outcome into the requeue Reconcile asks for: a timer only for waits
// that no watch event ends.
func TestRunOperationRequeuesOnlyForTimers(t *testing.T) {
	h := newHarness(t, widgetManifest)
	h.app.Spec.SyncPolicy.Retry = retry(3, "7s")
	h.start(navarchv1.SyncOperation{})
	after, err := h.e.runOperation(context.Background(), h.app, h.remote, h.compare(), false)
	if err != nil || after != 7*time.Second {
		t.Errorf("a failed attempt with a retry left: requeue after %s (%v), want 7s, the wait until nextRetryAt", after, err)
	}

	h = newHarness(t, deploymentManifest, serviceManifest)
	h.start(navarchv1.SyncOperation{})
	after, err = h.e.runOperation(context.Background(), h.app, h.remote, h.compare(), false)
	if err != nil || after != 0 {
		t.Errorf("a wave waiting for health: requeue after %s (%v), want 0: its watch events end the wait", after, err)
	}
}

// An error talking to the cluster is not an outcome: the pass ends with the error, the
// attempt has not failed, and the message says the step will be tried again.
func TestTransientErrorsDoNotFailTheAttempt(t *testing.T) {
	h := newHarness(t, configMapManifest)
	h.app.Spec.SyncPolicy.Retry = retry(3, "1s")
	h.start(navarchv1.SyncOperation{})
	cmp := h.compare()
	h.cluster.refuse["ConfigMap config"] = apierrors.NewServiceUnavailable("etcd is away")
	_, err := h.e.operationPass(context.Background(), h.app, h.remote, cmp, false)
	if err == nil || !transient(err) {
		t.Fatalf("pass: %v, want the transient error", err)
	}
	if s := h.state(); s.Phase != navarchv1.OperationRunning || s.RetryCount != 0 || !strings.Contains(s.Message, "(will retry)") {
		t.Errorf("phase %s, retryCount %d, message %q; want still Running, no retry counted", s.Phase, s.RetryCount, s.Message)
	}
}
