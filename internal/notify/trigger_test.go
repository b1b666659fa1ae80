package notify

import (
	"slices"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

const sha = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d"

// app builds an Application state: sync, health, and optionally an operation that started at
// second start and ended in phase.
func app(sync navarchv1.SyncStatusCode, health navarchv1.HealthStatusCode, op navarchv1.OperationPhase, start int) *navarchv1.Application {
	a := &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{UID: "u1", Namespace: "ns", Name: "web"}}
	a.Status.Sync.Status, a.Status.Health.Status, a.Status.Sync.Revision = sync, health, sha
	if op != "" {
		t0 := metav1.NewTime(time.Unix(int64(1000+start), 0))
		s := &navarchv1.OperationState{Phase: op, StartedAt: t0, SyncResult: &navarchv1.SyncOperationResult{Revision: sha}}
		if finished(op) {
			end := metav1.NewTime(t0.Add(time.Second))
			s.FinishedAt = &end
		}
		a.Status.OperationState = s
	}
	return a
}

func preview(a *navarchv1.Application, head string) *navarchv1.Application {
	a.Annotations = map[string]string{navarchv1.AnnotationPullRequest: "org/shop#42@" + head}
	return a
}

func TestTrackerTransitions(t *testing.T) {
	const (
		synced, outOfSync, unknown           = navarchv1.SyncStatusSynced, navarchv1.SyncStatusOutOfSync, navarchv1.SyncStatusUnknown
		healthy, degraded, progressing, none = navarchv1.HealthHealthy, navarchv1.HealthDegraded, navarchv1.HealthProgressing, navarchv1.HealthStatusCode("")
		ok, failed, running, errored         = navarchv1.OperationSucceeded, navarchv1.OperationFailed, navarchv1.OperationRunning, navarchv1.OperationError
	)
	other := "ffffffffffffffffffffffffffffffffffffffff"
	for _, tc := range []struct {
		name   string
		states []*navarchv1.Application
		want   [][]Trigger // per state after the first
	}{
		{"first state is a baseline", []*navarchv1.Application{app(outOfSync, degraded, failed, 1)}, nil},
		{"drift", []*navarchv1.Application{app(synced, healthy, "", 0), app(outOfSync, healthy, "", 0), app(outOfSync, healthy, "", 0), app(synced, healthy, "", 0)},
			[][]Trigger{{OutOfSync}, nil, nil}},
		{"unknown to out of sync", []*navarchv1.Application{app(unknown, healthy, "", 0), app(outOfSync, healthy, "", 0)}, [][]Trigger{{OutOfSync}}},
		{"an unreachable cluster between two OutOfSync comparisons is not drift again", []*navarchv1.Application{
			app(synced, healthy, "", 0), app(outOfSync, healthy, "", 0), app(unknown, healthy, "", 0), app(outOfSync, healthy, "", 0), app(unknown, healthy, "", 0), app(outOfSync, healthy, "", 0)},
			[][]Trigger{{OutOfSync}, nil, nil, nil, nil}},
		{"synced, unreachable, then out of sync is drift", []*navarchv1.Application{app(synced, healthy, "", 0), app(unknown, healthy, "", 0), app(outOfSync, healthy, "", 0)},
			[][]Trigger{nil, {OutOfSync}}},
		{"unknown health between two Degraded is not degrading again", []*navarchv1.Application{
			app(synced, healthy, "", 0), app(synced, degraded, "", 0), app(synced, navarchv1.HealthUnknown, "", 0), app(synced, degraded, "", 0)},
			[][]Trigger{{Degraded}, nil, nil}},
		{"a new Application's first comparison is not drift", []*navarchv1.Application{app("", none, "", 0), app(outOfSync, none, "", 0)}, [][]Trigger{nil}},
		{"degraded once", []*navarchv1.Application{app(synced, progressing, "", 0), app(synced, degraded, "", 0), app(synced, degraded, "", 0), app(synced, healthy, "", 0), app(synced, degraded, "", 0)},
			[][]Trigger{{Degraded}, nil, nil, {Degraded}}},
		{"one failed operation observed many times is one message", []*navarchv1.Application{
			app(outOfSync, healthy, "", 0), app(outOfSync, healthy, running, 1), app(outOfSync, healthy, failed, 1), app(outOfSync, healthy, failed, 1), app(outOfSync, healthy, failed, 1)},
			[][]Trigger{nil, {SyncFailed}, nil, nil}},
		{"two failed operations are two messages", []*navarchv1.Application{
			app(outOfSync, healthy, failed, 1), app(outOfSync, healthy, running, 5), app(outOfSync, healthy, errored, 5), app(outOfSync, healthy, failed, 9)},
			[][]Trigger{nil, {SyncFailed}, {SyncFailed}}},
		{"a sync of a drifted Application", []*navarchv1.Application{
			app(synced, healthy, ok, 1), app(outOfSync, healthy, ok, 1), app(outOfSync, healthy, running, 5), app(synced, healthy, ok, 5)},
			[][]Trigger{{OutOfSync}, nil, {SyncSucceeded}}},
		{"a finished operation seen at the baseline is not sent", []*navarchv1.Application{app(synced, healthy, ok, 1), app(synced, healthy, ok, 1)}, [][]Trigger{nil}},
		{"preview ready once per commit", []*navarchv1.Application{
			preview(app(outOfSync, progressing, running, 1), sha), preview(app(synced, progressing, ok, 1), sha), preview(app(synced, healthy, ok, 1), sha),
			preview(app(synced, degraded, ok, 1), sha), preview(app(synced, healthy, ok, 1), sha)},
			[][]Trigger{{SyncSucceeded}, {PreviewReady}, {Degraded}, nil}},
		{"a pushed preview is not ready until synced at its new head", []*navarchv1.Application{
			preview(app(synced, healthy, ok, 1), sha), preview(app(outOfSync, healthy, ok, 1), other), preview(app(synced, healthy, ok, 1), other)},
			[][]Trigger{{OutOfSync}, nil}},
		{"a preview is not ready at another commit", []*navarchv1.Application{preview(app(synced, progressing, "", 0), other), preview(app(synced, healthy, "", 0), other)}, [][]Trigger{nil}},
		{"a preview is not ready while an operation runs", []*navarchv1.Application{preview(app(synced, progressing, "", 0), sha), preview(app(synced, healthy, running, 2), sha)}, [][]Trigger{nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker()
			if got := tr.Application(tc.states[0]); got != nil {
				t.Fatalf("baseline gave %v", got)
			}
			for i, s := range tc.states[1:] {
				if got := tr.Application(s); !slices.Equal(got, tc.want[i]) {
					t.Errorf("state %d: %v, want %v", i+1, got, tc.want[i])
				}
			}
		})
	}
}

func TestTrackerPreviewReadyAtNewCommit(t *testing.T) {
	// The last case above needs the revision to move with the commit: a push to the pull
	// request changes both the annotation and the revision the preview syncs.
	other := "ffffffffffffffffffffffffffffffffffffffff"
	tr := NewTracker()
	tr.Application(preview(app(navarchv1.SyncStatusSynced, navarchv1.HealthHealthy, "", 0), sha))
	next := preview(app(navarchv1.SyncStatusSynced, navarchv1.HealthHealthy, "", 0), other)
	next.Status.Sync.Revision = other
	if got := tr.Application(next); !slices.Equal(got, []Trigger{PreviewReady}) {
		t.Errorf("ready at a new commit: %v, want [PreviewReady]", got)
	}
}

func TestTrackerRollouts(t *testing.T) {
	set := func(phase navarchv1.RolloutPhase, revs string) *navarchv1.ApplicationSet {
		s := &navarchv1.ApplicationSet{ObjectMeta: metav1.ObjectMeta{UID: "s1"}}
		if phase != "" {
			s.Status.Rollout = &navarchv1.RolloutStatus{Phase: phase, Revisions: revs}
		}
		return s
	}
	tr := NewTracker()
	steps := []struct {
		set  *navarchv1.ApplicationSet
		want []Trigger
	}{
		{set("", ""), nil},
		{set(navarchv1.RolloutPhaseProgressing, "a"), nil},
		{set(navarchv1.RolloutPhaseHalted, "a"), []Trigger{RolloutHalted}},
		{set(navarchv1.RolloutPhaseHalted, "a"), nil},
		{set(navarchv1.RolloutPhaseHalted, "b"), []Trigger{RolloutHalted}}, // a new revision halted again
		{set(navarchv1.RolloutPhaseProgressing, "c"), nil},
		{set(navarchv1.RolloutPhaseCompleted, "c"), []Trigger{RolloutCompleted}},
		{set(navarchv1.RolloutPhaseCompleted, "c"), nil},
		// A completed rollout that finds work again (a workload whose health flaps, a new
		// cluster) goes back to Progressing and completes again at the same revisions: the
		// rollout of those revisions completed once. Seen in fleet/notify_test.go.
		{set(navarchv1.RolloutPhaseProgressing, "c"), nil},
		{set(navarchv1.RolloutPhaseCompleted, "c"), nil},
		{set(navarchv1.RolloutPhaseProgressing, "c"), nil},
		{set(navarchv1.RolloutPhaseCompleted, "c"), nil},
		// Likewise a rollout halted, going on and halting again at the same revisions.
		{set(navarchv1.RolloutPhaseProgressing, "e"), nil},
		{set(navarchv1.RolloutPhaseHalted, "e"), []Trigger{RolloutHalted}},
		{set(navarchv1.RolloutPhaseProgressing, "e"), nil},
		{set(navarchv1.RolloutPhaseHalted, "e"), nil},
		// The next revisions complete: a message.
		{set(navarchv1.RolloutPhaseCompleted, "f"), []Trigger{RolloutCompleted}},
	}
	for i, s := range steps {
		if got := tr.ApplicationSet(s.set); !slices.Equal(got, s.want) {
			t.Errorf("state %d: %v, want %v", i, got, s.want)
		}
	}
	tr.Forget("s1")
	if got := tr.ApplicationSet(set(navarchv1.RolloutPhaseHalted, "d")); got != nil {
		t.Errorf("after Forget, the state is a new baseline; got %v", got)
	}
	// A baseline that is already Completed does not complete again at its revisions.
	tr.Forget("s1")
	for i, s := range []*navarchv1.ApplicationSet{set(navarchv1.RolloutPhaseCompleted, "g"), set(navarchv1.RolloutPhaseProgressing, "g"), set(navarchv1.RolloutPhaseCompleted, "g")} {
		if got := tr.ApplicationSet(s); got != nil {
			t.Errorf("baseline Completed, state %d: %v, want nothing", i, got)
		}
	}
}

// The Tracker keeps 32 bytes of each of a fleet's Applications, besides its UID.
func TestAppStateIsSmall(t *testing.T) {
	if got := unsafe.Sizeof(appState{}); got > 32 {
		t.Errorf("appState takes %d bytes, want 32 at most", got)
	}
}
