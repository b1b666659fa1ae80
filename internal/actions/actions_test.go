package actions

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/testenv"
)

// The actions run against a real API server (no controller): they must write what the
// controller acts on, refuse what it would drop, and let the API server authorize the user.

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{Name: "actions"}, &env))
}

func create(t *testing.T, obj client.Object, manifest string) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(manifest), obj); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// createApp creates the Application "api" in ns, as generated: no operation, no status.
func createApp(t *testing.T, ns string) types.NamespacedName {
	t.Helper()
	create(t, &navarchv1.Application{}, fmt.Sprintf(`
metadata: {name: api, namespace: %s}
spec:
  source: {repoURL: 'https://git.example/r.git', path: apps/api, targetRevision: main}
  destination: {name: in-cluster, namespace: api}
`, ns))
	return types.NamespacedName{Namespace: ns, Name: "api"}
}

// setStatus writes an Application's status as the controller would.
func setStatus(t *testing.T, key types.NamespacedName, status navarchv1.ApplicationStatus) {
	t.Helper()
	app := get(t, key)
	app.Status = status
	if err := env.Client.Status().Update(t.Context(), app); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, key types.NamespacedName) *navarchv1.Application {
	t.Helper()
	app := &navarchv1.Application{}
	if err := env.Client.Get(t.Context(), key, app); err != nil {
		t.Fatal(err)
	}
	return app
}

func running() *navarchv1.OperationState {
	return &navarchv1.OperationState{
		Operation: navarchv1.Operation{Sync: &navarchv1.SyncOperation{}, InitiatedBy: navarchv1.OperationInitiator{Username: "alice"}},
		Phase:     navarchv1.OperationRunning,
		StartedAt: metav1.NewTime(time.Now().Add(-time.Minute)),
	}
}

func TestSyncRequestsAnOperationTheControllerTakes(t *testing.T) {
	ctx := t.Context()
	key := createApp(t, testenv.Namespace(t, env.Client))

	req, err := Sync(ctx, env.Client, key, navarchv1.SyncOperation{Revision: "v2", Prune: true}, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if req.Replaced != nil {
		t.Errorf("replaced %+v, want nothing", req.Replaced)
	}
	op := get(t, key).Operation
	if op == nil || op.Sync == nil || op.Sync.Revision != "v2" || !op.Sync.Prune || op.InitiatedBy.Username != "bob" {
		t.Fatalf("the Application's operation is %+v, want a prune sync to v2 by bob", op)
	}

	// A second request before the controller started the first replaces it, and says so.
	req, err = Sync(ctx, env.Client, key, navarchv1.SyncOperation{}, "carol")
	if err != nil {
		t.Fatal(err)
	}
	if req.Replaced == nil || req.Replaced.InitiatedBy.Username != "bob" {
		t.Errorf("replaced %+v, want bob's request", req.Replaced)
	}

	// While an operation runs, the controller would drop another: the action refuses.
	setStatus(t, key, navarchv1.ApplicationStatus{OperationState: running()})
	_, err = Sync(ctx, env.Client, key, navarchv1.SyncOperation{}, "carol")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is already running an operation (sync by alice") {
		t.Errorf("sync while one runs: %v, want a refusal naming alice's sync", err)
	}
}

func TestRollbackGoesToAHistoryEntry(t *testing.T) {
	ctx := t.Context()
	key := createApp(t, testenv.Namespace(t, env.Client))
	setStatus(t, key, navarchv1.ApplicationStatus{History: []navarchv1.RevisionHistory{
		{ID: 1, Revision: "0f0e0d0c", DeployedAt: metav1.Now(), Source: navarchv1.ApplicationSource{RepoURL: "https://git.example/r.git", Path: "apps/api"}},
		{ID: 2, Revision: "1a2b3c4d", DeployedAt: metav1.Now(), Source: navarchv1.ApplicationSource{RepoURL: "https://git.example/r.git", Path: "apps/api-v2"}},
	}})

	_, err := Rollback(ctx, env.Client, key, 9, "bob")
	want := fmt.Sprintf("application %s has no history entry 9 (its entries: 1, 2); see navarch app history api -n %s", key, key.Namespace)
	if !errors.Is(err, ErrRefused) || err.Error() != want {
		t.Errorf("rollback to a missing entry: %v\nwant %s", err, want)
	}
	if op := get(t, key).Operation; op != nil {
		t.Errorf("a refused rollback wrote the operation %+v", op)
	}

	req, err := Rollback(ctx, env.Client, key, 1, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if req.Entry == nil || req.Entry.Revision != "0f0e0d0c" || req.Entry.Source.Path != "apps/api" {
		t.Errorf("entry %+v, want entry 1", req.Entry)
	}
	if op := get(t, key).Operation; op == nil || op.Rollback == nil || op.Rollback.ID != 1 || op.InitiatedBy.Username != "bob" {
		t.Errorf("the Application's operation is %+v, want a rollback to entry 1 by bob", op)
	}
}

func TestTerminateAndRefreshSetTheirAnnotations(t *testing.T) {
	ctx := t.Context()
	key := createApp(t, testenv.Namespace(t, env.Client))

	_, err := Terminate(ctx, env.Client, key)
	if want := fmt.Sprintf("application %s has no running operation to terminate (last operation: none)", key); !errors.Is(err, ErrRefused) || err.Error() != want {
		t.Errorf("terminate without an operation: %v\nwant %s", err, want)
	}
	setStatus(t, key, navarchv1.ApplicationStatus{OperationState: running()})
	if _, err := Terminate(ctx, env.Client, key); err != nil {
		t.Fatal(err)
	}
	if v := get(t, key).Annotations[navarchv1.AnnotationTerminateOperation]; v != "true" {
		t.Errorf("%s = %q, want true", navarchv1.AnnotationTerminateOperation, v)
	}

	if _, err := Refresh(ctx, env.Client, key); err != nil {
		t.Fatal(err)
	}
	v := get(t, key).Annotations[navarchv1.AnnotationRefresh]
	if at, err := time.Parse(time.RFC3339, v); err != nil || time.Since(at) > time.Minute {
		t.Errorf("%s = %q, want the time of the request", navarchv1.AnnotationRefresh, v)
	}
}

func TestPromotePauseAndResumeARollout(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t, env.Client)
	set := &navarchv1.ApplicationSet{}
	create(t, set, fmt.Sprintf(`
metadata: {name: fleet, namespace: %s}
spec:
  generators: [{list: {elements: [{name: a}]}}]
  strategy:
    type: RollingSync
    rollingSync:
      steps:
      - matchExpressions: [{key: env, operator: In, values: [dev]}]
      - matchExpressions: [{key: env, operator: In, values: [prod]}]
        requireApproval: true
  template:
    metadata: {name: '{{name}}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: 'apps/{{name}}'}
      destination: {name: in-cluster, namespace: '{{name}}'}
`, ns))
	key := client.ObjectKeyFromObject(set)
	annotations := func() map[string]string {
		s := &navarchv1.ApplicationSet{}
		if err := env.Client.Get(ctx, key, s); err != nil {
			t.Fatal(err)
		}
		return s.Annotations
	}

	if _, err := Promote(ctx, env.Client, key, 0); !errors.Is(err, ErrRefused) {
		t.Errorf("promote before the rollout waits: %v, want a refusal", err)
	}
	set.Status.Rollout = &navarchv1.RolloutStatus{Phase: navarchv1.RolloutPhaseWaitingForApproval, Step: 2}
	if err := env.Client.Status().Update(ctx, set); err != nil {
		t.Fatal(err)
	}
	res, err := Promote(ctx, env.Client, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Step != 2 || annotations()[navarchv1.AnnotationPromote] != "2" {
		t.Errorf("promote: %+v, annotations %v; want step 2 approved", res, annotations())
	}

	res, err = Pause(ctx, env.Client, key)
	if err != nil || !res.Changed || annotations()[navarchv1.AnnotationRolloutPaused] != "true" {
		t.Errorf("pause: %+v, %v, annotations %v", res, err, annotations())
	}
	if res, err := Pause(ctx, env.Client, key); err != nil || res.Changed {
		t.Errorf("pause again: %+v, %v; want nothing to do", res, err)
	}
	res, err = Resume(ctx, env.Client, key)
	if _, paused := annotations()[navarchv1.AnnotationRolloutPaused]; err != nil || !res.Changed || paused {
		t.Errorf("resume: %+v, %v, annotations %v", res, err, annotations())
	}
	if got := annotations()[navarchv1.AnnotationPromote]; got != "2" {
		t.Errorf("resume removed %s=2, which the controller has not recorded yet (now %q)", navarchv1.AnnotationPromote, got)
	}
}

// The dashboard acts with the user's credentials: what the API server refuses the user, the
// action refuses, with an error apierrors recognises. A missing object is NotFound likewise.
func TestActionsAreAuthorizedAsTheUser(t *testing.T) {
	ctx := t.Context()
	key := createApp(t, testenv.Namespace(t, env.Client))
	cfg := rest.CopyConfig(env.Management.RESTConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "eve"}
	eve, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Sync(ctx, eve, key, navarchv1.SyncOperation{}, "eve"); !apierrors.IsForbidden(err) {
		t.Errorf("sync by a user without RBAC: %v, want Forbidden", err)
	}
	if _, err := Pause(ctx, eve, types.NamespacedName{Namespace: key.Namespace, Name: "fleet"}); !apierrors.IsForbidden(err) {
		t.Errorf("pause by a user without RBAC: %v, want Forbidden", err)
	}
	if op := get(t, key).Operation; op != nil {
		t.Errorf("a forbidden sync wrote the operation %+v", op)
	}

	missing := types.NamespacedName{Namespace: key.Namespace, Name: "nope"}
	_, err = Refresh(ctx, env.Client, missing)
	if !apierrors.IsNotFound(err) || !strings.HasPrefix(err.Error(), "get Application "+missing.String()+": ") {
		t.Errorf("refresh of a missing Application: %v, want NotFound naming it", err)
	}
}
