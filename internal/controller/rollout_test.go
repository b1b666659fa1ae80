package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestScaledCountsAndPercentages(t *testing.T) {
	tests := []struct {
		v           *intstr.IntOrString
		total, want int
		err         string
	}{
		{nil, 10, 7, ""}, // the default
		{new(intstr.FromInt32(3)), 10, 3, ""},
		{new(intstr.FromString("2")), 10, 2, ""},
		{new(intstr.FromString("25%")), 10, 2, ""}, // rounds down
		{new(intstr.FromString("10%")), 3, 1, ""},  // never below 1 above 0%
		{new(intstr.FromString("0%")), 10, 0, ""},
		{new(intstr.FromInt32(0)), 10, 0, ""},
		{new(intstr.FromString("100%")), 4, 4, ""},
		{new(intstr.FromString("150%")), 4, 0, "percentage from 0% to 100%"},
		{new(intstr.FromString("x")), 4, 0, "must be a count"},
		{new(intstr.FromInt32(-1)), 4, 0, "must not be negative"},
	}
	for _, tt := range tests {
		got, err := scaled(tt.v, tt.total, 7)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("scaled(%v, %d): error %v, want %q", tt.v, tt.total, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("scaled(%v, %d) = %d, %v; want %d", tt.v, tt.total, got, err, tt.want)
		}
	}
}

func rollingSet(steps ...navarchv1.RollingSyncStep) *navarchv1.ApplicationSet {
	return &navarchv1.ApplicationSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
		Spec: navarchv1.ApplicationSetSpec{Strategy: &navarchv1.ApplicationSetStrategy{
			Type: navarchv1.StrategyRollingSync, RollingSync: &navarchv1.RollingSyncStrategy{Steps: steps},
		}},
	}
}

func envStep(op metav1.LabelSelectorOperator, values ...string) navarchv1.RollingSyncStep {
	return navarchv1.RollingSyncStep{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: op, Values: values}}}
}

func labelledApp(name string, labels map[string]string) *navarchv1.Application {
	return &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}}
}

func TestStepsMatchTheFirstStepWhoseExpressionsAllHold(t *testing.T) {
	set := rollingSet(
		envStep(metav1.LabelSelectorOpIn, "dev"),
		navarchv1.RollingSyncStep{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev", "prod"}},
			{Key: "canary", Operator: metav1.LabelSelectorOpExists},
		}},
		envStep(metav1.LabelSelectorOpExists),
		navarchv1.RollingSyncStep{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpDoesNotExist}}},
	)
	steps, err := compileSteps(set)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		labels map[string]string
		want   int
	}{
		{map[string]string{"env": "dev", "canary": "y"}, 0},
		{map[string]string{"env": "staging", "canary": "y"}, 1},
		{map[string]string{"env": "staging"}, 2},
		{map[string]string{"env": "prod", "canary": "y"}, 2},
		{map[string]string{"team": "a"}, 3},
	} {
		if got := stepOf(steps, labelledApp("a", tt.labels)); got != tt.want {
			t.Errorf("labels %v: step %d, want %d", tt.labels, got, tt.want)
		}
	}
	if got := stepOf(steps[:1], labelledApp("a", map[string]string{"env": "prod"})); got != -1 {
		t.Errorf("an Application no step matches is in step %d", got)
	}
}

func TestInvalidStepsNameTheField(t *testing.T) {
	for _, tt := range []struct {
		step navarchv1.RollingSyncStep
		want string
	}{
		{envStep("Equals", "dev"), "spec.strategy.rollingSync.steps[0].matchExpressions[0].operator: \"Equals\" is not In, NotIn, Exists or DoesNotExist"},
		{envStep(metav1.LabelSelectorOpIn), "spec.strategy.rollingSync.steps[0].matchExpressions[0]"},
		{navarchv1.RollingSyncStep{MaxUpdate: new(intstr.FromString("1/2"))}, "spec.strategy.rollingSync.steps[0].maxUpdate: must be a count"},
		{navarchv1.RollingSyncStep{MaxFailures: new(intstr.FromString("200%"))}, "spec.strategy.rollingSync.steps[0].maxFailures"},
	} {
		if _, err := compileSteps(rollingSet(tt.step)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

// A rollout's state of an Application comes from its live status against the revision rolled
// out; what it was before a new commit never counts.
func TestRolloutStateOfAnApplication(t *testing.T) {
	const rev, old = "2222222222", "1111111111"
	earlier := metav1.NewTime(time.Now().Add(-10 * time.Second).Truncate(time.Second))
	live := func(edit func(*navarchv1.Application)) *navarchv1.Application {
		app := labelledApp("a", map[string]string{"env": "dev"})
		app.Status.Sync = navarchv1.SyncStatus{Status: navarchv1.SyncStatusOutOfSync, Revision: rev}
		app.Status.Health = navarchv1.HealthStatus{Status: navarchv1.HealthHealthy}
		if edit != nil {
			edit(app)
		}
		return app
	}
	synced := func(health navarchv1.HealthStatusCode) func(*navarchv1.Application) {
		return func(a *navarchv1.Application) {
			a.Status.Sync.Status = navarchv1.SyncStatusSynced
			a.Status.Health = navarchv1.HealthStatus{Status: health, Message: "replicas unavailable"}
		}
	}
	operation := func(phase navarchv1.OperationPhase, started metav1.Time) func(*navarchv1.Application) {
		return func(a *navarchv1.Application) {
			a.Status.OperationState = &navarchv1.OperationState{Phase: phase, StartedAt: started, Message: "no luck"}
		}
	}
	succeeded := func(revision string, started metav1.Time) func(*navarchv1.Application) {
		return func(a *navarchv1.Application) {
			a.Status.OperationState = &navarchv1.OperationState{Phase: navarchv1.OperationSucceeded, StartedAt: started,
				SyncResult: &navarchv1.SyncOperationResult{Revision: revision}}
		}
	}
	requested := navarchv1.RolloutApplicationStatus{Status: navarchv1.RolloutPending, TargetRevision: rev, LastTransitionTime: &earlier}
	tests := []struct {
		name  string
		app   *navarchv1.Application
		step  int
		prev  navarchv1.RolloutApplicationStatus
		want  navarchv1.RolloutApplicationState
		about string
	}{
		{"not created", nil, 0, navarchv1.RolloutApplicationStatus{}, navarchv1.RolloutWaiting, "not created yet"},
		{"no step", live(nil), -1, navarchv1.RolloutApplicationStatus{}, navarchv1.RolloutWaiting, "matched by no step"},
		{"not compared", live(func(a *navarchv1.Application) { a.Status.Sync.Revision = "" }), 0, navarchv1.RolloutApplicationStatus{}, navarchv1.RolloutWaiting, "not compared"},
		{"OutOfSync but Healthy: the old state does not count", live(nil), 0, navarchv1.RolloutApplicationStatus{}, navarchv1.RolloutWaiting, "OutOfSync at 22222222"},
		{"Synced at an older revision", live(func(a *navarchv1.Application) {
			synced(navarchv1.HealthHealthy)(a)
			a.Status.Sync.Revision = old
		}), 0, navarchv1.RolloutApplicationStatus{Status: navarchv1.RolloutHealthy, TargetRevision: old, LastTransitionTime: &earlier}, navarchv1.RolloutHealthy, "at 11111111"},
		{"requested", live(func(a *navarchv1.Application) { a.Operation = &navarchv1.Operation{} }), 0, requested, navarchv1.RolloutPending, "sync requested"},
		{"syncing", live(operation(navarchv1.OperationRunning, metav1.Now())), 0, requested, navarchv1.RolloutProgressing, "syncing"},
		{"synced, Progressing", live(synced(navarchv1.HealthProgressing)), 0, requested, navarchv1.RolloutProgressing, "Synced, Progressing"},
		{"Synced and Healthy", live(synced(navarchv1.HealthHealthy)), 0, requested, navarchv1.RolloutHealthy, "Synced and Healthy at 22222222"},
		{"Degraded", live(synced(navarchv1.HealthDegraded)), 0, requested, navarchv1.RolloutFailed, "Degraded: replicas unavailable"},
		{"failed after the request", live(operation(navarchv1.OperationFailed, metav1.Now())), 0, requested, navarchv1.RolloutFailed, "sync failed after its retries: no luck"},
		{"a failure from before the request does not count", live(operation(navarchv1.OperationFailed, metav1.NewTime(earlier.Add(-time.Minute)))), 0,
			requested, navarchv1.RolloutPending, "sync requested"},
		{"synced, the comparison from before the sync", live(succeeded(rev, metav1.Now())), 0,
			navarchv1.RolloutApplicationStatus{Status: navarchv1.RolloutProgressing, TargetRevision: rev, LastTransitionTime: &earlier},
			navarchv1.RolloutProgressing, "waits for a comparison showing it Synced"},
		{"synced after a request whose status a crash lost", live(succeeded(rev, metav1.Now())), 0,
			navarchv1.RolloutApplicationStatus{Status: navarchv1.RolloutWaiting, TargetRevision: rev, LastTransitionTime: &earlier},
			navarchv1.RolloutProgressing, "waits for a comparison showing it Synced"},
		{"drift after it was Healthy is synced again", live(succeeded(rev, metav1.NewTime(earlier.Add(-time.Minute)))), 0,
			navarchv1.RolloutApplicationStatus{Status: navarchv1.RolloutHealthy, TargetRevision: rev, LastTransitionTime: &earlier},
			navarchv1.RolloutWaiting, "OutOfSync at 22222222"},
		{"a sync of an older commit does not count", live(succeeded(old, earlier)), 0, navarchv1.RolloutApplicationStatus{Status: navarchv1.RolloutHealthy, TargetRevision: old, LastTransitionTime: &earlier},
			navarchv1.RolloutWaiting, "OutOfSync at 22222222"},
		{"a request that never started is made again", live(nil), 0,
			navarchv1.RolloutApplicationStatus{Status: navarchv1.RolloutPending, TargetRevision: rev, LastTransitionTime: &metav1.Time{Time: time.Now().Add(-2 * pendingTimeout)}},
			navarchv1.RolloutWaiting, "requesting it again"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &rolloutPass{now: metav1.Now()}
			got := p.observe(&member{name: "a", live: tt.app, step: tt.step}, tt.prev)
			if got.Status != tt.want || !strings.Contains(got.Message, tt.about) {
				t.Errorf("state %s (%q), want %s (%q)", got.Status, got.Message, tt.want, tt.about)
			}
			if got.Status == tt.prev.Status && got.TargetRevision == tt.prev.TargetRevision && got.LastTransitionTime != tt.prev.LastTransitionTime {
				t.Errorf("the transition time moved without a transition")
			}
		})
	}
}

func TestReverseDeletionOrder(t *testing.T) {
	set := rollingSet(envStep(metav1.LabelSelectorOpIn, "dev"), envStep(metav1.LabelSelectorOpIn, "staging"), envStep(metav1.LabelSelectorOpIn, "prod"))
	set.Spec.Strategy.DeletionOrder = navarchv1.DeletionOrderReverse
	app := func(name, env string) *navarchv1.Application {
		return labelledApp(name, map[string]string{"env": env})
	}
	names := func(apps []*navarchv1.Application) string {
		var out []string
		for _, a := range apps {
			out = append(out, a.Name)
		}
		return strings.Join(out, ",")
	}
	deletes := []*navarchv1.Application{app("dev-a", "dev"), app("prod-a", "prod"), app("prod-b", "prod"), app("stg-a", "staging")}
	now, deferred := deletionsInOrder(set, deletes, map[string]*navarchv1.Application{})
	if names(now) != "prod-a,prod-b" || deferred != 2 {
		t.Errorf("first: %s now, %d deferred; want the prod Applications, 2 deferred", names(now), deferred)
	}
	// While a prod Application is still being deleted, staging waits.
	going := app("prod-a", "prod")
	going.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	now, _ = deletionsInOrder(set, deletes[:1:1], map[string]*navarchv1.Application{"prod-a": going})
	if len(now) != 0 {
		t.Errorf("dev deleted while prod is still being deleted: %s", names(now))
	}
	// Unmatched Applications go first; AllAtOnce deletes everything.
	now, _ = deletionsInOrder(set, []*navarchv1.Application{app("dev-a", "dev"), app("x", "qa")}, map[string]*navarchv1.Application{})
	if names(now) != "x" {
		t.Errorf("with an unmatched Application: %s now, want x", names(now))
	}
	set.Spec.Strategy.DeletionOrder = navarchv1.DeletionOrderAllAtOnce
	if now, deferred = deletionsInOrder(set, deletes, map[string]*navarchv1.Application{}); len(now) != 4 || deferred != 0 {
		t.Errorf("AllAtOnce: %d now, %d deferred", len(now), deferred)
	}
}

// Applications see a new commit one by one. One of a later step that sees it first must not
// get it before the earlier steps' Applications of its source have it.
func TestALaterStepWaitsForTheEarlierStepsToHaveItsCommit(t *testing.T) {
	main := revisionSource{"https://git.example/r.git", "main"}
	release := revisionSource{"https://git.example/r.git", "release"}
	m := func(name string, step int, src revisionSource, rev string) *member {
		return &member{name: name, step: step, source: src, state: navarchv1.RolloutApplicationStatus{TargetRevision: rev}}
	}
	tests := []struct {
		name    string
		members []*member
		want    string
	}{
		{"every earlier step has the commit", []*member{m("dev", 0, main, "new"), m("stg", 1, main, "new"), m("prod", 2, main, "new")}, ""},
		{"dev has not seen it yet", []*member{m("dev", 0, main, "old"), m("stg", 1, main, "new"), m("prod", 2, main, "new")}, "dev"},
		{"only later or equal steps differ", []*member{m("dev", 0, main, "new"), m("prod-b", 2, main, "old"), m("prod", 2, main, "new")}, ""},
		{"another source's commits are its own", []*member{m("dev", 0, release, "old"), m("prod", 2, main, "new")}, ""},
		{"an Application no step matches does not hold anything up", []*member{m("qa", -1, main, "old"), m("prod", 2, main, "new")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &rolloutPass{members: tt.members}
			target := tt.members[len(tt.members)-1]
			got := ""
			if o := p.behind(target.step, target); o != nil {
				got = o.name
			}
			if got != tt.want {
				t.Errorf("behind = %q, want %q", got, tt.want)
			}
		})
	}
}

// A step that passed its progressDeadline halts the rollout with a message that names the
// Applications it waited for.
func TestADeadlineHaltNamesTheUnfinishedApplications(t *testing.T) {
	step := envStep(metav1.LabelSelectorOpIn, "dev")
	step.ProgressDeadline = &metav1.Duration{Duration: 30 * time.Second}
	set := rollingSet(step, envStep(metav1.LabelSelectorOpIn, "prod"))
	steps, err := compileSteps(set)
	if err != nil {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Minute))
	set.Status.Rollout = &navarchv1.RolloutStatus{Step: 1, StepStartedAt: &started}
	state := func(s navarchv1.RolloutApplicationState, msg string) navarchv1.RolloutApplicationStatus {
		return navarchv1.RolloutApplicationStatus{Status: s, Message: msg}
	}
	p := &rolloutPass{set: set, steps: steps, now: metav1.Now(), members: []*member{
		{name: "web-dev-a", step: 0, state: state(navarchv1.RolloutHealthy, "Synced and Healthy at 22222222")},
		{name: "web-dev-b", step: 0, state: state(navarchv1.RolloutProgressing, "Synced, Progressing")},
		{name: "web-prod", step: 1, state: state(navarchv1.RolloutWaiting, "OutOfSync at 22222222: waits for its step")},
	}}
	done, halted, msg := p.runStep(context.Background(), 0, false)
	if done || !halted {
		t.Fatalf("done %v, halted %v; want halted: %s", done, halted, msg)
	}
	for _, want := range []string{"progressDeadline 30s", "web-dev-b (Progressing: Synced, Progressing)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "web-dev-a") || strings.Contains(msg, "web-prod") {
		t.Errorf("message %q names Applications that are done or not in the step", msg)
	}
}

// A step's deadline counts from its approval, not from the time it waited for a person.
func TestADeadlineCountsFromTheApproval(t *testing.T) {
	step := envStep(metav1.LabelSelectorOpIn, "prod")
	step.ProgressDeadline = &metav1.Duration{Duration: 30 * time.Second}
	step.RequireApproval = true
	set := rollingSet(step)
	steps, err := compileSteps(set)
	if err != nil {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	set.Status.Rollout = &navarchv1.RolloutStatus{Step: 1, StepStartedAt: &started}
	p := &rolloutPass{r: &ApplicationSetReconciler{}, set: set, steps: steps, now: metav1.Now(), members: []*member{
		{name: "web-prod", step: 0, state: navarchv1.RolloutApplicationStatus{Status: navarchv1.RolloutProgressing}},
	}}
	if done, halted, msg := p.runStep(context.Background(), 0, false); done || halted || !strings.Contains(msg, "waits for approval") {
		t.Fatalf("an hour waiting for approval: done %v, halted %v, %q; want it still waiting", done, halted, msg)
	}
	set.Annotations = map[string]string{navarchv1.AnnotationPromote: "1"}
	p.approve()
	if done, halted, msg := p.runStep(context.Background(), 0, false); done || halted {
		t.Fatalf("just approved: done %v, halted %v, %q; want it running within its deadline", done, halted, msg)
	}
	if !set.Status.Rollout.StepStartedAt.Equal(&p.now) {
		t.Errorf("the approval did not restart the step's clock: started %v", set.Status.Rollout.StepStartedAt)
	}
}

// Applications catching up with a commit the others already compare with do not restart the
// rollout; a commit none had seen does.
func TestOnlyANewCommitIsANewRevision(t *testing.T) {
	set := rollingSet(envStep(metav1.LabelSelectorOpIn, "dev"))
	set.Status.ApplicationStatus = []navarchv1.RolloutApplicationStatus{
		{Application: "a", TargetRevision: "old"}, {Application: "b", TargetRevision: "new"},
	}
	member := func(rev string) *member {
		return &member{state: navarchv1.RolloutApplicationStatus{TargetRevision: rev}}
	}
	for _, tt := range []struct {
		revs []string
		want bool
	}{
		{[]string{"new", "new"}, false},
		{[]string{"old", "new"}, false},
		{[]string{"new", ""}, false},
		{[]string{"new", "newer"}, true},
	} {
		p := &rolloutPass{set: set}
		for _, r := range tt.revs {
			p.members = append(p.members, member(r))
		}
		if got := p.newRevision(); got != tt.want {
			t.Errorf("revisions %v after old and new: newRevision() = %v, want %v", tt.revs, got, tt.want)
		}
	}
}
