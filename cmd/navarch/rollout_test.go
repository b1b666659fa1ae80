package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func in(key string, values ...string) []metav1.LabelSelectorRequirement {
	return []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}}
}

func minutes(n int) *metav1.Duration {
	return &metav1.Duration{Duration: time.Duration(n) * time.Minute}
}

// rolloutSet is an ApplicationSet rolling out to dev, then staging (approval required), then
// prod (approval required), with one Application that no step selects. The rollout is at
// step 2; mutate sets its phase and the rest.
func rolloutSet(mutate func(*navarchv1.ApplicationSet)) *navarchv1.ApplicationSet {
	one, quarter := intstr.FromInt32(1), intstr.FromString("25%")
	set := &navarchv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: "apps"},
		Spec: navarchv1.ApplicationSetSpec{Strategy: &navarchv1.ApplicationSetStrategy{
			Type: navarchv1.StrategyRollingSync,
			RollingSync: &navarchv1.RollingSyncStrategy{Steps: []navarchv1.RollingSyncStep{
				{MatchExpressions: in("env", "dev"), MinSuccessTime: minutes(10)},
				{MatchExpressions: append(in("env", "staging"), metav1.LabelSelectorRequirement{Key: "region", Operator: metav1.LabelSelectorOpExists}),
					MaxUpdate: &one, MinSuccessTime: minutes(30), RequireApproval: true},
				{MatchExpressions: in("env", "prod"), MaxUpdate: &quarter, MinSuccessTime: minutes(60), RequireApproval: true},
			}},
		}},
		Status: navarchv1.ApplicationSetStatus{
			ApplicationStatus: []navarchv1.RolloutApplicationStatus{
				{Application: "api-prod-us", Step: "3", Status: navarchv1.RolloutWaiting, TargetRevision: commit,
					Message: "waiting for step 3", LastTransitionTime: atp(-50 * time.Minute)},
				{Application: "api-dev-1", Step: "1", Status: navarchv1.RolloutHealthy, TargetRevision: commit,
					Message: "Synced and Healthy", LastTransitionTime: atp(-42 * time.Minute)},
				{Application: "api-lab", Status: navarchv1.RolloutWaiting, TargetRevision: commit,
					Message: "no step selects it", LastTransitionTime: atp(-50 * time.Minute)},
				{Application: "api-staging-eu", Step: "2", Status: navarchv1.RolloutWaiting, TargetRevision: commit,
					Message: "waiting for step 2", LastTransitionTime: atp(-50 * time.Minute)},
				{Application: "api-prod-eu", Step: "3", Status: navarchv1.RolloutWaiting, TargetRevision: commit,
					Message: "waiting for step 3", LastTransitionTime: atp(-50 * time.Minute)},
			},
			Rollout: &navarchv1.RolloutStatus{Phase: navarchv1.RolloutPhaseWaitingForApproval, Step: 2,
				StepStartedAt: atp(-30 * time.Minute), Revisions: "sha256:4f2a",
				Message: "step 2 requires approval"},
		},
	}
	if mutate != nil {
		mutate(set)
	}
	return set
}

func renderRollout(t *testing.T, set *navarchv1.ApplicationSet) string {
	t.Helper()
	var b bytes.Buffer
	if err := printRollout(&b, set, now, palette{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// stagingEU is the rollout state of the Application of step 2 in rolloutSet, to change it.
func stagingEU(set *navarchv1.ApplicationSet) *navarchv1.RolloutApplicationStatus {
	for i := range set.Status.ApplicationStatus {
		if set.Status.ApplicationStatus[i].Application == "api-staging-eu" {
			return &set.Status.ApplicationStatus[i]
		}
	}
	panic("no Application api-staging-eu")
}

func TestPrintRolloutWaitingForApproval(t *testing.T) {
	want := "" +
		"ApplicationSet:   apps/fleet\n" +
		"Phase:            WaitingForApproval\n" +
		"Step:             2 of 3, started 30m ago\n" +
		"Message:          step 2 requires approval\n" +
		"Approve with:     navarch appset promote fleet -n apps\n" +
		"\n" +
		"Steps:\n" +
		"  STEP   SELECTOR                          MAX-UPDATE   SOAK   APPROVAL   APPLICATIONS   STATE\n" +
		"  1      env In (dev)                      all          10m    -          1 Healthy      done\n" +
		"  2      env In (staging), region Exists   1            30m    required   1 Waiting      current\n" +
		"  3      env In (prod)                     25%          1h     required   2 Waiting      waiting\n" +
		"\n" +
		"Applications:\n" +
		"  APPLICATION      STEP   STATUS    REVISION   SINCE   MESSAGE\n" +
		"  api-dev-1        1      Healthy   1a2b3c4d   42m     Synced and Healthy\n" +
		"  api-staging-eu   2      Waiting   1a2b3c4d   50m     waiting for step 2\n" +
		"  api-prod-eu      3      Waiting   1a2b3c4d   50m     waiting for step 3\n" +
		"  api-prod-us      3      Waiting   1a2b3c4d   50m     waiting for step 3\n" +
		"  api-lab          none   Waiting   1a2b3c4d   50m     no step selects it\n" +
		"\n" +
		"1 Application matches no step (STEP none), and the rollout never syncs it: add a step whose matchExpressions select it.\n"
	if got := renderRollout(t, rolloutSet(nil)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestPrintRollout(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*navarchv1.ApplicationSet)
		want    []string
		notWant []string
	}{
		{
			name: "progressing: an approved step soaks, its Applications in every state",
			mutate: func(set *navarchv1.ApplicationSet) {
				r := set.Status.Rollout
				r.Phase, r.ApprovedSteps, r.StepHealthyAt, r.Message = navarchv1.RolloutPhaseProgressing, []int32{2}, atp(-12*time.Minute), ""
				stagingEU(set).Status = navarchv1.RolloutHealthy
				set.Status.ApplicationStatus = append(set.Status.ApplicationStatus,
					navarchv1.RolloutApplicationStatus{Application: "api-staging-us", Step: "2", Status: navarchv1.RolloutProgressing,
						TargetRevision: commit, Message: "Synced, Progressing", LastTransitionTime: atp(-time.Minute)},
					navarchv1.RolloutApplicationStatus{Application: "api-staging-ap", Step: "2", Status: navarchv1.RolloutPending,
						TargetRevision: "main", LastTransitionTime: atp(-5 * time.Second)})
			},
			want: []string{
				"Phase:            Progressing\n",
				"Step:             2 of 3, started 30m ago\n",
				"Soak:             Healthy for 12m of 30m, 18m left\n",
				"  2      env In (staging), region Exists   1            30m    approved   1 Pending, 1 Progressing, 1 Healthy   current\n",
				"  3      env In (prod)                     25%          1h     required   2 Waiting                             waiting\n",
				"  api-staging-ap   2      Pending       main       5s      -\n",
				"  api-staging-us   2      Progressing   1a2b3c4d   60s     Synced, Progressing\n",
			},
			notWant: []string{"Message:", "Approve with:", "Resume with:", "Paused:"},
		},
		{
			name: "halted: the failure is in the message, the step is marked halted",
			mutate: func(set *navarchv1.ApplicationSet) {
				r := set.Status.Rollout
				r.Phase, r.ApprovedSteps = navarchv1.RolloutPhaseHalted, []int32{2}
				r.Message = "step 2: api-staging-eu failed, more than maxFailures 0"
				a := stagingEU(set)
				a.Status, a.Message, a.LastTransitionTime = navarchv1.RolloutFailed, "Degraded: Deployment api: 0/2 replicas available", atp(-3*time.Minute)
			},
			want: []string{
				"Phase:            Halted\n",
				"Message:          step 2: api-staging-eu failed, more than maxFailures 0\n",
				"  1      env In (dev)                      all          10m    -          1 Healthy      done\n",
				"  2      env In (staging), region Exists   1            30m    approved   1 Failed       halted\n",
				"  api-staging-eu   2      Failed    1a2b3c4d   3m      Degraded: Deployment api: 0/2 replicas available\n",
			},
			notWant: []string{"Approve with:", "Soak:"},
		},
		{
			name: "paused by the annotation: how to resume",
			mutate: func(set *navarchv1.ApplicationSet) {
				set.Annotations = map[string]string{navarchv1.AnnotationRolloutPaused: "true"}
				set.Status.Rollout.Phase, set.Status.Rollout.Message = navarchv1.RolloutPhasePaused, "paused by navarch.io/rollout-paused"
			},
			want: []string{
				"Phase:            Paused\n",
				"Paused:           by navarch.io/rollout-paused; no new sync starts, syncs already started finish\n",
				"Resume with:      navarch appset resume fleet -n apps\n",
			},
			notWant: []string{"Approve with:"},
		},
		{
			name: "pause requested, not yet acted on; the reason given in the annotation is shown",
			mutate: func(set *navarchv1.ApplicationSet) {
				set.Annotations = map[string]string{navarchv1.AnnotationRolloutPaused: "incident 42"}
				set.Status.Rollout.Phase = navarchv1.RolloutPhaseProgressing
			},
			want: []string{
				"Phase:            Progressing\n",
				"Paused:           by navarch.io/rollout-paused: incident 42; no new sync starts, syncs already started finish\n",
				"Resume with:      navarch appset resume fleet -n apps\n",
			},
		},
		{
			name: "resumed, the controller still says Paused",
			mutate: func(set *navarchv1.ApplicationSet) {
				set.Status.Rollout.Phase = navarchv1.RolloutPhasePaused
			},
			want:    []string{"Paused:           no longer: navarch.io/rollout-paused is gone; the controller resumes at its next pass\n"},
			notWant: []string{"Resume with:"},
		},
		{
			name: "promoted, the controller has not recorded it yet",
			mutate: func(set *navarchv1.ApplicationSet) {
				set.Annotations = map[string]string{navarchv1.AnnotationPromote: "2"}
			},
			want: []string{
				"Promote:          step 2 requested (navarch.io/promote), waiting for the controller to record it\n",
				"  2      env In (staging), region Exists   1            30m    requested   1 Waiting      current\n",
			},
			notWant: []string{"Approve with:"},
		},
		{
			name: "completed: every step done",
			mutate: func(set *navarchv1.ApplicationSet) {
				set.Status.Rollout = &navarchv1.RolloutStatus{Phase: navarchv1.RolloutPhaseCompleted, Step: 3, ApprovedSteps: []int32{2, 3}}
				for i := range set.Status.ApplicationStatus {
					set.Status.ApplicationStatus[i].Status = navarchv1.RolloutHealthy
				}
			},
			want: []string{
				"Phase:            Completed\n",
				"Steps:            all 3 done\n",
				"  1      env In (dev)                      all          10m    -          1 Healthy      done\n",
				"  2      env In (staging), region Exists   1            30m    approved   1 Healthy      done\n",
				"  3      env In (prod)                     25%          1h     approved   2 Healthy      done\n",
			},
			notWant: []string{"Step:  ", "Soak:"},
		},
		{
			name: "not reported yet: no rollout status, no Applications",
			mutate: func(set *navarchv1.ApplicationSet) {
				set.Status = navarchv1.ApplicationSetStatus{}
			},
			want: []string{
				"Phase:            - (the controller has not reported on the rollout yet)\n",
				"Steps:            3\n",
				"  1      env In (dev)                      all          10m    -          -              waiting\n",
				"Applications:     none in the rollout yet\n",
			},
			notWant: []string{"APPLICATION ", "matches no step"},
		},
		{
			name: "several Applications match no step; a step without expressions selects every Application",
			mutate: func(set *navarchv1.ApplicationSet) {
				set.Spec.Strategy.RollingSync.Steps[2].MatchExpressions = nil
				set.Status.ApplicationStatus = append(set.Status.ApplicationStatus,
					navarchv1.RolloutApplicationStatus{Application: "api-edge", Status: navarchv1.RolloutHealthy})
			},
			want: []string{
				"  3      (every Application)               25%          1h     required   2 Waiting      waiting\n",
				"  api-lab          none   Waiting   1a2b3c4d   50m     no step selects it\n",
				"  api-edge         none   Healthy   -          -       -\n",
				"2 Applications match no step (STEP none), and the rollout never syncs them: add a step whose matchExpressions select them.\n",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := renderRollout(t, rolloutSet(tt.mutate))
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("rollout lacks %q:\n%s", want, out)
				}
			}
			for _, bad := range tt.notWant {
				if strings.Contains(out, bad) {
					t.Errorf("rollout has %q:\n%s", bad, out)
				}
			}
		})
	}
}

func TestPrintRolloutColours(t *testing.T) {
	set := rolloutSet(func(set *navarchv1.ApplicationSet) {
		set.Status.Rollout.Phase = navarchv1.RolloutPhaseHalted
		stagingEU(set).Status = navarchv1.RolloutFailed
	})
	var b bytes.Buffer
	if err := printRollout(&b, set, now, palette{enabled: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Phase:            \x1b[31mHalted\x1b[0m\n",
		"\x1b[31m1 Failed\x1b[0m",
		"\x1b[31mhalted\x1b[0m",
		"\x1b[32mdone\x1b[0m",
		"api-lab          \x1b[31mnone\x1b[0m   \x1b[90mWaiting\x1b[0m",
		"api-dev-1        1      \x1b[32mHealthy\x1b[0m   1a2b3c4d",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("coloured rollout lacks %q:\n%q", want, b.String())
		}
	}
}

func TestRolloutWithoutRollingSync(t *testing.T) {
	for _, tt := range []struct {
		name     string
		strategy *navarchv1.ApplicationSetStrategy
		want     string
	}{
		{"no strategy", nil, "ApplicationSet apps/web has no RollingSync strategy (spec.strategy.type is AllAtOnce): there is no rollout to show.\n"},
		{"AllAtOnce", &navarchv1.ApplicationSetStrategy{Type: navarchv1.StrategyAllAtOnce, DeletionOrder: navarchv1.DeletionOrderAllAtOnce},
			"ApplicationSet apps/web has no RollingSync strategy (spec.strategy.type is AllAtOnce): there is no rollout to show.\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"},
				Spec: navarchv1.ApplicationSetSpec{Strategy: tt.strategy}}
			var out, stderr bytes.Buffer
			if err := printRolloutOutput(&out, &stderr, set, "table", now); err != nil {
				t.Fatal(err)
			}
			if out.String() != "" || stderr.String() != tt.want {
				t.Errorf("stdout %q, stderr %q; want only %q on stderr", out.String(), stderr.String(), tt.want)
			}
		})
	}
}

func TestRolloutDocumentHoldsStrategyRolloutAndApplicationStatus(t *testing.T) {
	var out, stderr bytes.Buffer
	if err := printRolloutOutput(&out, &stderr, rolloutSet(nil), "json", now); err != nil {
		t.Fatal(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if len(doc) != 3 || doc["strategy"] == nil || doc["rollout"] == nil || doc["applicationStatus"] == nil {
		t.Errorf("want strategy, rollout and applicationStatus, got:\n%s", out.String())
	}
	for _, want := range []string{`"type": "RollingSync"`, `"phase": "WaitingForApproval"`, `"application": "api-lab"`, `"maxUpdate": "25%"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("json lacks %s:\n%s", want, out.String())
		}
	}

	out.Reset()
	empty := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}}
	if err := printRolloutOutput(&out, &stderr, empty, "yaml", now); err != nil {
		t.Fatal(err)
	}
	if want := "applicationStatus: []\nrollout: null\nstrategy: null\n"; out.String() != want {
		t.Errorf("yaml without a strategy:\n%s\nwant\n%s", out.String(), want)
	}
}

func TestRolloutEnded(t *testing.T) {
	for phase, want := range map[navarchv1.RolloutPhase]bool{
		navarchv1.RolloutPhaseProgressing: false, navarchv1.RolloutPhaseWaitingForApproval: false,
		navarchv1.RolloutPhasePaused: false, navarchv1.RolloutPhaseHalted: true, navarchv1.RolloutPhaseCompleted: true,
	} {
		set := rolloutSet(func(set *navarchv1.ApplicationSet) { set.Status.Rollout.Phase = phase })
		if got := rolloutEnded(set); got != want {
			t.Errorf("%s: ended %v, want %v", phase, got, want)
		}
	}
	if rolloutEnded(rolloutSet(func(set *navarchv1.ApplicationSet) { set.Status.Rollout = nil })) {
		t.Error("a rollout not reported yet has ended")
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m", 45 * time.Second: "45s",
		time.Hour + 5*time.Second: "1h0m5s", 1500 * time.Millisecond: "2s", 0: "0s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestWatchPrintsAgainOnlyWhenWhatItShowsChanges(t *testing.T) {
	set := rolloutSet(nil)
	same := set.DeepCopy()
	same.ResourceVersion, same.Status.Conditions = "42", []metav1.Condition{{Type: navarchv1.ApplicationSetResourcesUpToDate}}
	if !equality.Semantic.DeepEqual(viewOf(set), viewOf(same)) {
		t.Error("a change the rollout does not show would print it again")
	}
	for name, change := range map[string]func(*navarchv1.ApplicationSet){
		"phase":       func(s *navarchv1.ApplicationSet) { s.Status.Rollout.Phase = navarchv1.RolloutPhaseProgressing },
		"application": func(s *navarchv1.ApplicationSet) { stagingEU(s).Status = navarchv1.RolloutPending },
		"paused": func(s *navarchv1.ApplicationSet) {
			s.Annotations = map[string]string{navarchv1.AnnotationRolloutPaused: ""}
		},
		"promote":  func(s *navarchv1.ApplicationSet) { s.Annotations = map[string]string{navarchv1.AnnotationPromote: "2"} },
		"strategy": func(s *navarchv1.ApplicationSet) { s.Spec.Strategy.RollingSync.Steps[0].RequireApproval = true },
	} {
		changed := set.DeepCopy()
		change(changed)
		if equality.Semantic.DeepEqual(viewOf(set), viewOf(changed)) {
			t.Errorf("a change of the %s would not print the rollout again", name)
		}
	}
}
