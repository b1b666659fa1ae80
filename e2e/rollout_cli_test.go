package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/localcluster"
)

// rolloutNamespace holds the ApplicationSets of TestOperatorFollowsPromotesPausesAndResumesARollout.
const rolloutNamespace = "rollouts"

// TestOperatorFollowsPromotesPausesAndResumesARollout runs the rollout commands against a real
// management cluster. As in TestCLI no controller runs: the test writes the rollout status the
// way the controller does, and checks what the user sees and the annotations the CLI writes.
func TestOperatorFollowsPromotesPausesAndResumesARollout(t *testing.T) {
	cluster := localcluster.StartForTest(t, localcluster.Options{Name: "rollout-cli", CRDDirectoryPaths: []string{"../config/crd/bases"}})
	env := &cliEnv{cluster: cluster, c: cliClientFor(t, cluster.KubeconfigPath()), kubeconfig: cluster.KubeconfigPath()}
	const ns = rolloutNamespace
	env.createNamespace(t, ns)
	ctx := context.Background()

	set := &navarchv1.ApplicationSet{}
	if err := yamlToObject(`
apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata:
  name: fleet
  namespace: rollouts
  annotations: {team: payments}
spec:
  generators:
    - list:
        elements:
          - {cluster: dev-1, env: dev}
          - {cluster: staging-eu, env: staging}
          - {cluster: prod-eu, env: prod}
          - {cluster: prod-us, env: prod}
  template:
    metadata:
      name: 'api-{{cluster}}'
      labels: {env: '{{env}}'}
    spec:
      source: {repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: apps/api}
      destination: {name: '{{cluster}}', namespace: api}
  strategy:
    type: RollingSync
    rollingSync:
      steps:
        - matchExpressions: [{key: env, operator: In, values: [dev]}]
          minSuccessTime: 10m
        - matchExpressions: [{key: env, operator: In, values: [staging]}]
          maxUpdate: 1
          minSuccessTime: 30m
          requireApproval: true
        - matchExpressions: [{key: env, operator: In, values: [prod]}]
          maxUpdate: 25%
          minSuccessTime: 1h
          requireApproval: true
`, set); err != nil {
		t.Fatal(err)
	}
	if err := env.c.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	// Step 1 is done; step 2 waits for approval. api-lab was generated before the steps were
	// narrowed to dev, staging and prod: no step selects it.
	env.writeRollout(t, func(st *navarchv1.ApplicationSetStatus) {
		st.Rollout = &navarchv1.RolloutStatus{Phase: navarchv1.RolloutPhaseWaitingForApproval, Step: 2,
			StepStartedAt: cliAgoPtr(30 * time.Minute), Revisions: "sha256:4f2a", Message: "step 2 requires approval"}
		st.ApplicationStatus = []navarchv1.RolloutApplicationStatus{
			{Application: "api-dev-1", Step: "1", Status: navarchv1.RolloutHealthy, TargetRevision: cliCommit,
				Message: "Synced and Healthy", LastTransitionTime: cliAgoPtr(42 * time.Minute)},
			{Application: "api-staging-eu", Step: "2", Status: navarchv1.RolloutWaiting, TargetRevision: cliCommit,
				Message: "waiting for approval of step 2", LastTransitionTime: cliAgoPtr(50 * time.Minute)},
			{Application: "api-prod-eu", Step: "3", Status: navarchv1.RolloutWaiting, TargetRevision: cliCommit,
				Message: "waiting for step 3", LastTransitionTime: cliAgoPtr(50 * time.Minute)},
			{Application: "api-prod-us", Step: "3", Status: navarchv1.RolloutWaiting, TargetRevision: cliCommit,
				Message: "waiting for step 3", LastTransitionTime: cliAgoPtr(50 * time.Minute)},
			{Application: "api-lab", Status: navarchv1.RolloutWaiting, TargetRevision: cliCommit,
				Message: "no step selects it", LastTransitionTime: cliAgoPtr(50 * time.Minute)},
		}
	})

	t.Run("RolloutShowsWhatTheControllerWrote", func(t *testing.T) {
		out := env.mustRun(t, "appset", "rollout", "fleet", "-n", ns)
		cliAssertContains(t, "appset rollout", out,
			"ApplicationSet:   rollouts/fleet\n",
			"Phase:            WaitingForApproval\n",
			"Step:             2 of 3, started 30m ago\n",
			"Message:          step 2 requires approval\n",
			"Approve with:     navarch appset promote fleet -n rollouts\n",
			"1 Application matches no step (STEP none), and the rollout never syncs it: add a step whose matchExpressions select it.\n")
		steps := out[strings.Index(out, "Steps:"):strings.Index(out, "Applications:")]
		cliAssertTable(t, "appset rollout steps", strings.TrimPrefix(steps, "Steps:"), [][]string{
			{"STEP", "SELECTOR", "MAX-UPDATE", "SOAK", "APPROVAL", "APPLICATIONS", "STATE"},
			{"1", "env", "In", "(dev)", "all", "10m", "-", "1", "Healthy", "done"},
			{"2", "env", "In", "(staging)", "1", "30m", "required", "1", "Waiting", "current"},
			{"3", "env", "In", "(prod)", "25%", "1h", "required", "2", "Waiting", "waiting"},
		})
		_, apps, _ := strings.Cut(out, "Applications:")
		cliAssertTable(t, "appset rollout applications", apps, [][]string{
			{"APPLICATION", "STEP", "STATUS", "REVISION", "SINCE", "MESSAGE"},
			{"api-dev-1", "1", "Healthy", "1a2b3c4d", "42m", "Synced", "and", "Healthy"},
			{"api-staging-eu", "2", "Waiting", "1a2b3c4d", "50m", "waiting", "for", "approval", "of", "step", "2"},
			{"api-prod-eu", "3", "Waiting", "1a2b3c4d", "50m", "waiting", "for", "step", "3"},
			{"api-prod-us", "3", "Waiting", "1a2b3c4d", "50m", "waiting", "for", "step", "3"},
			{"api-lab", "none", "Waiting", "1a2b3c4d", "50m", "no", "step", "selects", "it"},
		})

		var doc struct {
			Strategy          navarchv1.ApplicationSetStrategy     `json:"strategy"`
			Rollout           navarchv1.RolloutStatus              `json:"rollout"`
			ApplicationStatus []navarchv1.RolloutApplicationStatus `json:"applicationStatus"`
		}
		if err := json.Unmarshal([]byte(env.mustRun(t, "appset", "rollout", "fleet", "-n", ns, "-o", "json")), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Strategy.RollingSync.Steps) != 3 || doc.Rollout.Phase != navarchv1.RolloutPhaseWaitingForApproval || len(doc.ApplicationStatus) != 5 {
			t.Errorf("appset rollout -o json: %s", toJSON(doc))
		}
	})

	t.Run("PromoteApprovesTheStepTheRolloutWaitsOn", func(t *testing.T) {
		env.expectExit(t, 1, "step 1 of ApplicationSet rollouts/fleet does not require approval", "appset", "promote", "fleet", "-n", ns, "--step", "1")
		env.expectExit(t, 1, "ApplicationSet rollouts/fleet has no step 4: its rollout has steps 1 to 3", "appset", "promote", "fleet", "-n", ns, "--step", "4")
		env.expectExit(t, 2, "--step must be a step number, from 1, got 0", "appset", "promote", "fleet", "-n", ns, "--step", "0")
		env.expectExit(t, 1, `ApplicationSet "nope" not found in namespace "rollouts"`, "appset", "promote", "nope", "-n", ns)
		env.assertAnnotations(t, "fleet", map[string]string{"team": "payments"})

		out := env.mustRun(t, "appset", "promote", "fleet", "-n", ns)
		cliAssertContains(t, "appset promote", out, "Approved step 2 of 3 (env In (staging)) of ApplicationSet rollouts/fleet with navarch.io/promote=2")
		env.assertAnnotations(t, "fleet", map[string]string{"team": "payments", navarchv1.AnnotationPromote: "2"})
		cliAssertContains(t, "appset rollout after promote", env.mustRun(t, "appset", "rollout", "fleet", "-n", ns),
			"Promote:          step 2 requested (navarch.io/promote), waiting for the controller to record it\n")

		// The controller records the approval, removes the annotation and starts the step.
		env.writeRollout(t, func(st *navarchv1.ApplicationSetStatus) {
			st.Rollout.Phase, st.Rollout.ApprovedSteps, st.Rollout.Message = navarchv1.RolloutPhaseProgressing, []int32{2}, ""
		})
		env.removeAnnotation(t, ns, "fleet", navarchv1.AnnotationPromote)
		env.expectExit(t, 1, "the rollout of ApplicationSet rollouts/fleet waits for no approval (it is Progressing at step 2 of 3)",
			"appset", "promote", "fleet", "-n", ns)

		// A later step may be approved ahead of time.
		cliAssertContains(t, "appset promote --step 3", env.mustRun(t, "appset", "promote", "fleet", "-n", ns, "--step", "3"),
			"Approved step 3 of 3 (env In (prod))")
		env.assertAnnotations(t, "fleet", map[string]string{"team": "payments", navarchv1.AnnotationPromote: "3"})
		env.removeAnnotation(t, ns, "fleet", navarchv1.AnnotationPromote)
	})

	t.Run("PauseAndResumeAddAndRemoveTheAnnotation", func(t *testing.T) {
		cliAssertContains(t, "appset pause", env.mustRun(t, "appset", "pause", "fleet", "-n", ns),
			"Paused the rollout of ApplicationSet rollouts/fleet: set navarch.io/rollout-paused=true")
		env.assertAnnotations(t, "fleet", map[string]string{"team": "payments", navarchv1.AnnotationRolloutPaused: "true"})
		cliAssertContains(t, "appset pause again", env.mustRun(t, "appset", "pause", "fleet", "-n", ns),
			"The rollout of ApplicationSet rollouts/fleet is already paused")
		cliAssertContains(t, "appset rollout while paused", env.mustRun(t, "appset", "rollout", "fleet", "-n", ns),
			"Paused:           by navarch.io/rollout-paused; no new sync starts, syncs already started finish\n",
			"Resume with:      navarch appset resume fleet -n rollouts\n")

		cliAssertContains(t, "appset resume", env.mustRun(t, "appset", "resume", "fleet", "-n", ns),
			"Resumed the rollout of ApplicationSet rollouts/fleet: removed navarch.io/rollout-paused")
		env.assertAnnotations(t, "fleet", map[string]string{"team": "payments"})
		cliAssertContains(t, "appset resume again", env.mustRun(t, "appset", "resume", "fleet", "-n", ns),
			"The rollout of ApplicationSet rollouts/fleet is not paused (no navarch.io/rollout-paused annotation); nothing to do.")
	})

	t.Run("WatchPrintsEachChangeUntilTheRolloutCompletes", func(t *testing.T) {
		w := env.startFollowing(t, "stdout", "appset", "rollout", "fleet", "-n", ns, "-w")
		w.waitForLine(t, "Phase:            Progressing")
		env.writeRollout(t, func(st *navarchv1.ApplicationSetStatus) {
			st.Rollout.Step, st.Rollout.StepStartedAt, st.Rollout.ApprovedSteps = 3, cliAgoPtr(0), []int32{2, 3}
		})
		w.waitForLine(t, "Step:             3 of 3")
		env.writeRollout(t, func(st *navarchv1.ApplicationSetStatus) {
			st.Rollout.Phase = navarchv1.RolloutPhaseCompleted
			for i := range st.ApplicationStatus {
				if st.ApplicationStatus[i].Step != "" {
					st.ApplicationStatus[i].Status = navarchv1.RolloutHealthy
				}
			}
		})
		r := w.wait(t)
		if r.code != 0 {
			t.Fatalf("rollout -w exit %d after the rollout completed\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if n := strings.Count(r.stdout, "ApplicationSet:   rollouts/fleet\n"); n != 3 {
			t.Errorf("rollout -w printed the rollout %d times, want 3 (one per change):\n%s", n, r.stdout)
		}
		cliAssertContains(t, "rollout -w", r.stdout, "Phase:            Completed\n", "Steps:            all 3 done\n")
	})

	t.Run("WatchEndsWithExit1WhenTheRolloutHalts", func(t *testing.T) {
		env.writeRollout(t, func(st *navarchv1.ApplicationSetStatus) {
			st.Rollout = &navarchv1.RolloutStatus{Phase: navarchv1.RolloutPhaseProgressing, Step: 1, StepStartedAt: cliAgoPtr(0)}
		})
		w := env.startFollowing(t, "stdout", "appset", "rollout", "fleet", "-n", ns, "-w")
		w.waitForLine(t, "Step:             1 of 3")
		env.writeRollout(t, func(st *navarchv1.ApplicationSetStatus) {
			st.Rollout.Phase, st.Rollout.Message = navarchv1.RolloutPhaseHalted, "step 1: api-dev-1 failed"
		})
		r := w.wait(t)
		if r.code != 1 || !strings.Contains(r.stderr, "the rollout of ApplicationSet rollouts/fleet halted at step 1: step 1: api-dev-1 failed") {
			t.Errorf("rollout -w after the rollout halted: exit %d, want 1 with the reason\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
	})

	t.Run("AnApplicationSetWithoutRollingSyncSaysSo", func(t *testing.T) {
		web := set.DeepCopy()
		web.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "web"}
		web.Spec.Strategy = nil
		web.Status = navarchv1.ApplicationSetStatus{}
		if err := env.c.Create(ctx, web); err != nil {
			t.Fatal(err)
		}
		r := env.expectExit(t, 0, "ApplicationSet rollouts/web has no RollingSync strategy (spec.strategy.type is AllAtOnce): there is no rollout to show.",
			"appset", "rollout", "web", "-n", ns)
		if r.stdout != "" {
			t.Errorf("appset rollout without RollingSync printed on stdout:\n%s", r.stdout)
		}
		env.expectExit(t, 1, "there is no rollout to pause", "appset", "pause", "web", "-n", ns)
		env.expectExit(t, 1, "there is no rollout to promote", "appset", "promote", "web", "-n", ns)
		env.assertAnnotations(t, "web", nil)
	})
}

// writeRollout changes the status of the ApplicationSet "fleet" as the controller would.
func (e *cliEnv) writeRollout(t *testing.T, mutate func(*navarchv1.ApplicationSetStatus)) {
	t.Helper()
	namespace, name := rolloutNamespace, "fleet"
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set := &navarchv1.ApplicationSet{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, set); err != nil {
			return err
		}
		mutate(&set.Status)
		return e.c.Status().Update(ctx, set)
	})
	if err != nil {
		t.Fatalf("write the rollout status of %s: %v", name, err)
	}
}

// removeAnnotation removes an annotation as the controller does once it has acted on it.
func (e *cliEnv) removeAnnotation(t *testing.T, namespace, name, key string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+key+`":null}}}`))
	set := &navarchv1.ApplicationSet{}
	set.Namespace, set.Name = namespace, name
	if err := e.c.Patch(context.Background(), set, patch); err != nil {
		t.Fatalf("remove %s from %s: %v", key, name, err)
	}
}

// assertAnnotations checks the annotations of an ApplicationSet: the CLI adds and removes
// its own and leaves the others alone.
func (e *cliEnv) assertAnnotations(t *testing.T, name string, want map[string]string) {
	t.Helper()
	namespace := rolloutNamespace
	set := &navarchv1.ApplicationSet{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, set); err != nil {
		t.Fatal(err)
	}
	if len(set.Annotations) != len(want) || !maps.Equal(set.Annotations, want) {
		t.Errorf("annotations of %s are %v, want %v", name, set.Annotations, want)
	}
}
