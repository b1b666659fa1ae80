package fleet_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/fixture"
	"github.com/navarch-io/navarch/internal/testenv"
)

// An operator reading the controller's log at its default level sees each operation start,
// each retry, and its end, once, with the Application, the cluster, the revision, the reason
// and the reconcile; and the metrics endpoint shows each cluster's reconciles and backlog.
func TestObserveOperationsInTheLogAndClusterMetrics(t *testing.T) {
	logs := &testenv.LogRecorder{}
	controllerOptions.Logger = logs.Wrap(env.Logger)
	restartController(t)
	t.Cleanup(func() {
		controllerOptions.Logger = env.Logger
		restartController(t)
	})
	reconciles, durations := clusterReconciles(t, "east")

	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{
		"web/cm.yaml": webConfigMap,
		// No CRD defines Sprocket: every attempt fails.
		"broken/sprocket.yaml": "apiVersion: observe.example.com/v1\nkind: Sprocket\nmetadata: {name: s}\n",
	})
	web := manualApp(t, ns, url, "web", "east", ns+"-web", "")
	broken := manualApp(t, ns, url, "broken", "east", ns+"-broken", `
    retry: {limit: 1, backoff: {duration: 1s}}`)
	for _, app := range []*navarchv1.Application{web, broken} {
		waitForApp(t, app, "OutOfSync", func(a *navarchv1.Application) bool { return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync })
		requestSync(t, app)
	}
	done := map[*navarchv1.Application]*navarchv1.OperationState{}
	for app, want := range map[*navarchv1.Application]navarchv1.OperationPhase{web: navarchv1.OperationSucceeded, broken: navarchv1.OperationFailed} {
		s := waitForApp(t, app, "operation done", operationDone).Status.OperationState
		if s.Phase != want || (app == broken && s.RetryCount != 1) {
			t.Fatalf("%s: operation %s after %d retries (%q), want %s", app.Name, s.Phase, s.RetryCount, s.Message, want)
		}
		done[app] = s
	}

	// Each transition is logged once: it is not logged again by later passes either.
	want := map[*navarchv1.Application]map[string]int{
		web:    {"Operation started": 1, "Operation failed; retrying": 0, "Operation succeeded": 1, "Operation ended": 0},
		broken: {"Operation started": 1, "Operation failed; retrying": 1, "Operation succeeded": 0, "Operation ended": 1},
	}
	logged := func() string {
		var wrong []string
		for app, counts := range want {
			for msg, n := range counts {
				if got := len(logs.Lines(msg, "application", ns+"/"+app.Name)); got != n {
					wrong = append(wrong, fmt.Sprintf("%s: %q logged %d times, want %d", app.Name, msg, got, n))
				}
			}
		}
		return strings.Join(wrong, "; ")
	}
	// The controller logs an operation's end after writing it to the status, where the test
	// has seen it: the line may follow a moment later.
	testenv.Eventually(t, "each operation transition logged", logged)
	testenv.Consistently(t, 3*time.Second, "each operation transition is logged exactly once", logged)

	// Each line names the Application, its cluster, the revision, the reconcile, and, for a
	// retry or a failure, the reason.
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for app, counts := range want {
		s := done[app]
		for msg, n := range counts {
			if n == 0 {
				continue
			}
			line := logs.Lines(msg, "application", ns+"/"+app.Name)[0]
			keys := map[string]string{"cluster": "east", "revision": s.SyncResult.Revision}
			switch msg {
			case "Operation started":
				keys["initiatedBy"] = "test"
			case "Operation succeeded":
				keys["message"] = s.Message
			case "Operation failed; retrying":
				keys["retry"] = "1"
			case "Operation ended":
				keys["phase"], keys["reason"], keys["retries"] = string(navarchv1.OperationFailed), s.Message, "1"
			}
			for k, v := range keys {
				if got := fmt.Sprint(line.Values[k]); got != v {
					t.Errorf("%s: %q has %s=%q, want %q (all: %v)", app.Name, msg, k, got, v, line.Values)
				}
			}
			if id := fmt.Sprint(line.Values["reconcileID"]); !uuid.MatchString(id) {
				t.Errorf("%s: %q has reconcileID=%q, want a UUID (all: %v)", app.Name, msg, id, line.Values)
			}
			if msg == "Operation failed; retrying" {
				if reason := fmt.Sprint(line.Values["reason"]); !strings.Contains(reason, "Sprocket") {
					t.Errorf("%s: %q has reason=%q, which does not say what failed", app.Name, msg, reason)
				}
			}
		}
	}
	if len(done[web].SyncResult.Revision) != 40 {
		t.Errorf("the operation's revision is %q, want a commit", done[web].SyncResult.Revision)
	}

	// Per-cluster metrics: the reconciles of east were counted and timed, and its queue has a
	// depth gauge.
	if r, d := clusterReconciles(t, "east"); r <= reconciles || d <= durations {
		t.Errorf("navarch_cluster_reconcile_total{cluster=east} went from %v to %v and navarch_cluster_reconcile_duration_seconds{cluster=east} "+
			"from %d to %d observations, want both to grow", reconciles, r, durations, d)
	}
	if m := fixture.Metrics(t, "navarch_cluster_queue_depth", map[string]string{"cluster": "east"}); len(m) != 1 {
		t.Errorf(`navarch_cluster_queue_depth{cluster="east"} is served %d times, want once`, len(m))
	} else if depth := m[0].GetGauge().GetValue(); depth < 0 {
		t.Errorf(`navarch_cluster_queue_depth{cluster="east"} is %v`, depth)
	}
}

// clusterReconciles returns the Application reconciles counted for cluster (all results) and
// the observations of their duration.
func clusterReconciles(t *testing.T, cluster string) (total float64, durations uint64) {
	t.Helper()
	for _, m := range fixture.Metrics(t, "navarch_cluster_reconcile_total", map[string]string{"cluster": cluster}) {
		total += m.GetCounter().GetValue()
	}
	for _, m := range fixture.Metrics(t, "navarch_cluster_reconcile_duration_seconds", map[string]string{"cluster": cluster}) {
		durations += m.GetHistogram().GetSampleCount()
	}
	return total, durations
}
