package dashboard

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func TestTimelineGroupsTasksByPhaseAndWaveInTheOrderTheyRan(t *testing.T) {
	res := func(phase navarchv1.SyncPhase, wave int64, name string, status navarchv1.ResultCode, hook navarchv1.HookPhase) navarchv1.ResourceResult {
		return navarchv1.ResourceResult{ResourceRef: navarchv1.ResourceRef{Kind: "Job", Name: name}, SyncPhase: phase, SyncWave: wave, Status: status, HookPhase: hook}
	}
	groups := timeline([]navarchv1.ResourceResult{
		res(navarchv1.SyncPhasePostSync, 0, "notify", "", navarchv1.HookRunning),
		res(navarchv1.SyncPhaseSync, 1, "web", navarchv1.ResultSynced, ""),
		res(navarchv1.SyncPhasePreSync, 0, "migrate", navarchv1.ResultSynced, navarchv1.HookSucceeded),
		res(navarchv1.SyncPhaseSync, -1, "config", navarchv1.ResultSyncFailed, ""),
		res(navarchv1.SyncPhaseSync, 1, "api", navarchv1.ResultSynced, ""),
	})
	var got []string
	for _, g := range groups {
		var names []string
		for _, task := range g.Tasks {
			names = append(names, task.Name)
		}
		got = append(got, fmt.Sprintf("%s/%d/%s:%s", g.Phase, g.Wave, g.State, strings.Join(names, ",")))
	}
	want := "PreSync/0/ok:migrate Sync/-1/failed:config Sync/1/ok:web,api PostSync/0/progressing:notify"
	if strings.Join(got, " ") != want {
		t.Errorf("timeline\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestParsePullRequest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"acme/shop#42@0123456789abcdef", "acme/shop 42 0123456789abcdef"},
		{"acme/shop#7", "acme/shop 7 "},
	} {
		pr := parsePullRequest(tc.in)
		if pr == nil || pr.Repo+" "+pr.Number+" "+pr.SHA != tc.want {
			t.Errorf("parsePullRequest(%q) = %+v, want %s", tc.in, pr, tc.want)
		}
	}
	if pr := parsePullRequest("no-number"); pr != nil {
		t.Errorf("parsePullRequest(no-number) = %+v, want nil", pr)
	}
}

func TestConditionsInPlainWordsProblemsFirst(t *testing.T) {
	got := conditionViews([]metav1.Condition{
		{Type: navarchv1.ConditionReady, Status: metav1.ConditionTrue, Reason: navarchv1.ReasonSyncedAndHealthy},
		{Type: navarchv1.ApplicationComparisonError, Status: metav1.ConditionTrue, Reason: "RenderFailed", Message: "kustomization.yaml: no such file"},
		{Type: "Custom", Status: metav1.ConditionFalse, Reason: "Whatever"},
	}, applicationConditionWords)
	var words []string
	for _, c := range got {
		words = append(words, fmt.Sprintf("%s|%v", c.Words, c.Problem))
	}
	want := "Could not compare the cluster with Git (render failed)|true; Ready: Synced and Healthy|false; Custom is False (whatever)|false"
	if strings.Join(words, "; ") != want {
		t.Errorf("conditions\n got %s\nwant %s", strings.Join(words, "; "), want)
	}
}

func TestStepViewsSayWhereTheRolloutIsAndWhichStepToPromote(t *testing.T) {
	set := &navarchv1.ApplicationSet{}
	set.Status.Rollout = &navarchv1.RolloutStatus{Phase: navarchv1.RolloutPhaseWaitingForApproval, Step: 2, ApprovedSteps: nil}
	set.Status.ApplicationStatus = []navarchv1.RolloutApplicationStatus{
		{Application: "a-dev", Step: "1", Status: navarchv1.RolloutHealthy},
		{Application: "a-prod", Step: "2", Status: navarchv1.RolloutWaiting},
	}
	steps := []navarchv1.RollingSyncStep{{}, {RequireApproval: true}, {}}
	var got []string
	for _, v := range stepViews(set, steps, true) {
		got = append(got, fmt.Sprintf("%d:%s:%s:%s:%v", v.Number, v.State, v.Approval, v.Counts, v.Promote))
	}
	want := "1:done:—:1 Healthy:false 2:current:required:1 Waiting:true 3:waiting:—:—:false"
	if strings.Join(got, " ") != want {
		t.Errorf("steps\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}
