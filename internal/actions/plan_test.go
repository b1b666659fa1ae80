package actions

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

const commit = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"

var now = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }

// runningApp is an Application whose sync, started by alice two minutes ago, is being retried.
func runningApp() *navarchv1.Application {
	return &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: "api-prod-eu", Namespace: "apps"},
		Status: navarchv1.ApplicationStatus{
			OperationState: &navarchv1.OperationState{
				Operation: navarchv1.Operation{Sync: &navarchv1.SyncOperation{Prune: true},
					InitiatedBy: navarchv1.OperationInitiator{Username: "alice"}},
				Phase:      navarchv1.OperationRunning,
				Message:    "retrying: Deployment api: admission webhook denied",
				StartedAt:  at(-2 * time.Minute),
				SyncResult: &navarchv1.SyncOperationResult{Revision: commit},
			},
		},
	}
}

func TestSyncRefusesWhileAnOperationRuns(t *testing.T) {
	err := checkNoRunningOperation(runningApp(), now)
	want := "application apps/api-prod-eu is already running an operation (sync to 1a2b3c4d (prune) by alice, started 2m ago, Running: retrying: Deployment api: admission webhook denied); wait for it, or stop it with: navarch app terminate-op api-prod-eu -n apps"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if !errors.Is(err, ErrRefused) {
		t.Errorf("%v is not ErrRefused", err)
	}

	terminating := runningApp()
	terminating.Status.OperationState.Phase = navarchv1.OperationTerminating
	if err := checkNoRunningOperation(terminating, now); err == nil {
		t.Error("an operation being terminated does not block a new one")
	}
	for _, phase := range []navarchv1.OperationPhase{navarchv1.OperationSucceeded, navarchv1.OperationFailed, navarchv1.OperationError} {
		done := runningApp()
		done.Status.OperationState.Phase = phase
		if err := checkNoRunningOperation(done, now); err != nil {
			t.Errorf("a %s operation blocks a new one: %v", phase, err)
		}
	}
	never := runningApp()
	never.Status.OperationState = nil
	if err := checkNoRunningOperation(never, now); err != nil {
		t.Errorf("an Application that never ran an operation refuses one: %v", err)
	}
}

func TestOperationSummary(t *testing.T) {
	tests := []struct {
		st   navarchv1.OperationState
		want string
	}{
		{navarchv1.OperationState{Operation: navarchv1.Operation{Sync: &navarchv1.SyncOperation{}}}, "sync"},
		{navarchv1.OperationState{Operation: navarchv1.Operation{Sync: &navarchv1.SyncOperation{Revision: "main", Prune: true, DryRun: true,
			Resources: []navarchv1.SyncOperationResource{{Kind: "ConfigMap", Name: "a"}}}}}, "sync to main (prune, dry run, 1 resource)"},
		{navarchv1.OperationState{Operation: navarchv1.Operation{Sync: &navarchv1.SyncOperation{Revision: "main",
			Resources: []navarchv1.SyncOperationResource{{Kind: "ConfigMap", Name: "a"}, {Kind: "ConfigMap", Name: "b"}}}},
			SyncResult: &navarchv1.SyncOperationResult{Revision: commit}}, "sync to 1a2b3c4d (2 resources)"},
		{navarchv1.OperationState{Operation: navarchv1.Operation{Rollback: &navarchv1.RollbackOperation{ID: 3}},
			SyncResult: &navarchv1.SyncOperationResult{Revision: commit}}, "rollback to history entry 3 to 1a2b3c4d"},
	}
	for _, tt := range tests {
		if got := OperationSummary(&tt.st); got != tt.want {
			t.Errorf("OperationSummary = %q, want %q", got, tt.want)
		}
	}
}

func TestParseResource(t *testing.T) {
	tests := []struct {
		in   string
		want navarchv1.SyncOperationResource
		err  bool
	}{
		{in: "apps:Deployment:web", want: navarchv1.SyncOperationResource{Group: "apps", Kind: "Deployment", Name: "web"}},
		{in: "ConfigMap:settings", want: navarchv1.SyncOperationResource{Kind: "ConfigMap", Name: "settings"}},
		{in: ":ConfigMap:api/settings", want: navarchv1.SyncOperationResource{Kind: "ConfigMap", Namespace: "api", Name: "settings"}},
		{in: "networking.k8s.io:Ingress:web/web", want: navarchv1.SyncOperationResource{Group: "networking.k8s.io", Kind: "Ingress", Namespace: "web", Name: "web"}},
		{in: "web", err: true},
		{in: "a:b:c:d", err: true},
		{in: "Deployment:", err: true},
		{in: ":web", err: true},
		{in: "Deployment:/web", err: true},
	}
	for _, tt := range tests {
		got, err := ParseResource(tt.in)
		if (err != nil) != tt.err || (err == nil && got != tt.want) {
			t.Errorf("ParseResource(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func FuzzParseResource(f *testing.F) {
	for _, s := range []string{"apps:Deployment:web", "ConfigMap:api/settings", "a:b:c:d", ":/", "Kind:ns/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseResource(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--resource ") {
				t.Errorf("the error %q does not name the flag", err)
			}
			return
		}
		if r.Kind == "" || r.Name == "" {
			t.Errorf("ParseResource(%q) = %+v without a kind or a name", s, r)
		}
	})
}

// envIn selects the Applications labelled env with one of values.
func envIn(values ...string) []metav1.LabelSelectorRequirement {
	return []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: values}}
}

// rolloutSet is an ApplicationSet rolling out to dev, then staging (approval required), then
// prod (approval required), waiting for the approval of step 2; mutate changes it.
func rolloutSet(mutate func(*navarchv1.ApplicationSet)) *navarchv1.ApplicationSet {
	one := intstr.FromInt32(1)
	set := &navarchv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "apps"},
		Spec: navarchv1.ApplicationSetSpec{Strategy: &navarchv1.ApplicationSetStrategy{
			Type: navarchv1.StrategyRollingSync,
			RollingSync: &navarchv1.RollingSyncStrategy{Steps: []navarchv1.RollingSyncStep{
				{MatchExpressions: envIn("dev")},
				{MatchExpressions: append(envIn("staging"), metav1.LabelSelectorRequirement{Key: "region", Operator: metav1.LabelSelectorOpExists}),
					MaxUpdate: &one, RequireApproval: true},
				{MatchExpressions: envIn("prod"), RequireApproval: true},
			}},
		}},
		Status: navarchv1.ApplicationSetStatus{
			Rollout: &navarchv1.RolloutStatus{Phase: navarchv1.RolloutPhaseWaitingForApproval, Step: 2,
				Message: "step 2 requires approval"},
		},
	}
	if mutate != nil {
		mutate(set)
	}
	return set
}

func TestPlanPromotion(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*navarchv1.ApplicationSet)
		step      int32
		want      promotion
		wantError string
	}{
		{
			name: "the step the rollout waits on",
			want: promotion{step: 2, write: true, message: "Approved step 2 of 3 (env In (staging), region Exists) of ApplicationSet apps/fleet with navarch.io/promote=2; " +
				"the controller records the approval and removes the annotation.\nFollow the rollout with: navarch appset rollout fleet -n apps -w"},
		},
		{
			name: "a later step ahead of time",
			step: 3,
			want: promotion{step: 3, write: true, message: "Approved step 3 of 3 (env In (prod)) of ApplicationSet apps/fleet with navarch.io/promote=3; " +
				"the controller records the approval and removes the annotation.\nFollow the rollout with: navarch appset rollout fleet -n apps -w"},
		},
		{
			name:   "already approved: nothing to write",
			mutate: func(set *navarchv1.ApplicationSet) { set.Status.Rollout.ApprovedSteps = []int32{2} },
			want:   promotion{step: 2, message: "Step 2 of 3 of ApplicationSet apps/fleet is already approved; nothing to do."},
		},
		{
			name:      "nothing waits for approval",
			mutate:    func(set *navarchv1.ApplicationSet) { set.Status.Rollout.Phase = navarchv1.RolloutPhaseProgressing },
			wantError: "the rollout of ApplicationSet apps/fleet waits for no approval (it is Progressing at step 2 of 3); to approve a later step ahead of time, give it with --step N",
		},
		{
			name:      "halted",
			mutate:    func(set *navarchv1.ApplicationSet) { set.Status.Rollout.Phase = navarchv1.RolloutPhaseHalted },
			wantError: "the rollout of ApplicationSet apps/fleet waits for no approval (it is Halted at step 2 of 3)",
		},
		{
			name:      "completed",
			mutate:    func(set *navarchv1.ApplicationSet) { set.Status.Rollout.Phase = navarchv1.RolloutPhaseCompleted },
			wantError: "the rollout of ApplicationSet apps/fleet waits for no approval (it is Completed)",
		},
		{
			name:      "not started",
			mutate:    func(set *navarchv1.ApplicationSet) { set.Status.Rollout = nil },
			wantError: "the rollout of ApplicationSet apps/fleet waits for no approval (the controller has not started it yet)",
		},
		{
			name:      "a step outside the steps",
			step:      4,
			wantError: "ApplicationSet apps/fleet has no step 4: its rollout has steps 1 to 3",
		},
		{
			name:      "a step that needs no approval",
			step:      1,
			wantError: "step 1 of ApplicationSet apps/fleet does not require approval (spec.strategy.rollingSync.steps[0].requireApproval is false)",
		},
		{
			name: "waiting on a step the spec no longer has",
			mutate: func(set *navarchv1.ApplicationSet) {
				set.Spec.Strategy.RollingSync.Steps = set.Spec.Strategy.RollingSync.Steps[:1]
			},
			wantError: "ApplicationSet apps/fleet has no step 2: its rollout has steps 1 to 1",
		},
		{
			name:      "no RollingSync",
			mutate:    func(set *navarchv1.ApplicationSet) { set.Spec.Strategy = nil },
			wantError: "ApplicationSet apps/fleet has no RollingSync strategy (spec.strategy.type is AllAtOnce): there is no rollout to promote",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := planPromotion(rolloutSet(tt.mutate), tt.step)
			if tt.wantError != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantError) {
					t.Errorf("got %+v, %v; want the error %q", got, err, tt.wantError)
				}
				if !errors.Is(err, ErrRefused) {
					t.Errorf("%v is not ErrRefused", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

func TestPlanPause(t *testing.T) {
	paused := func(set *navarchv1.ApplicationSet) {
		set.Annotations = map[string]string{navarchv1.AnnotationRolloutPaused: "true"}
	}
	tests := []struct {
		name      string
		mutate    func(*navarchv1.ApplicationSet)
		pause     bool
		write     bool
		message   string
		wantError string
	}{
		{name: "pause", pause: true, write: true,
			message: "Paused the rollout of ApplicationSet apps/fleet: set navarch.io/rollout-paused=true; the controller starts no new sync, syncs already started finish.\n" +
				"Resume it with: navarch appset resume fleet -n apps"},
		{name: "pause when paused", mutate: paused, pause: true,
			message: "The rollout of ApplicationSet apps/fleet is already paused (navarch.io/rollout-paused); nothing to do. Resume it with: navarch appset resume fleet -n apps"},
		{name: "pause without RollingSync", mutate: func(set *navarchv1.ApplicationSet) { set.Spec.Strategy = nil }, pause: true,
			wantError: "ApplicationSet apps/fleet has no RollingSync strategy (spec.strategy.type is AllAtOnce): there is no rollout to pause"},
		{name: "resume", mutate: paused, write: true,
			message: "Resumed the rollout of ApplicationSet apps/fleet: removed navarch.io/rollout-paused; the controller goes on where it stopped.\n" +
				"Follow it with: navarch appset rollout fleet -n apps -w"},
		{name: "resume when not paused",
			message: "The rollout of ApplicationSet apps/fleet is not paused (no navarch.io/rollout-paused annotation); nothing to do."},
		{name: "resume removes an annotation left after the strategy changed", write: true,
			mutate: func(set *navarchv1.ApplicationSet) { paused(set); set.Spec.Strategy = nil },
			message: "Resumed the rollout of ApplicationSet apps/fleet: removed navarch.io/rollout-paused; the controller goes on where it stopped.\n" +
				"Follow it with: navarch appset rollout fleet -n apps -w"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write, message, err := planPause(rolloutSet(tt.mutate), tt.pause)
			if tt.wantError != "" {
				if err == nil || err.Error() != tt.wantError || !errors.Is(err, ErrRefused) {
					t.Errorf("got %v, %q, %v; want the error %q, ErrRefused", write, message, err, tt.wantError)
				}
				return
			}
			if err != nil || write != tt.write || message != tt.message {
				t.Errorf("got %v, %q, %v\nwant %v, %q", write, message, err, tt.write, tt.message)
			}
		})
	}
}

func TestAnnotationPatchTouchesOneAnnotationOnly(t *testing.T) {
	v := "2"
	if got, want := string(annotationPatch(navarchv1.AnnotationPromote, &v)), `{"metadata":{"annotations":{"navarch.io/promote":"2"}}}`; got != want {
		t.Errorf("set: %s, want %s", got, want)
	}
	if got, want := string(annotationPatch(navarchv1.AnnotationRolloutPaused, nil)), `{"metadata":{"annotations":{"navarch.io/rollout-paused":null}}}`; got != want {
		t.Errorf("remove: %s, want %s", got, want)
	}
}

func TestStepSelector(t *testing.T) {
	if got := StepSelector(nil); got != "(every Application)" {
		t.Errorf("no expressions: %q", got)
	}
	exprs := append(envIn("dev", "staging"), metav1.LabelSelectorRequirement{Key: "tier", Operator: metav1.LabelSelectorOpExists})
	if got, want := StepSelector(exprs), "env In (dev,staging), tier Exists"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
