package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/devfleet"
	"github.com/navarch-io/navarch/internal/gitserver"
)

// The newcomer's path: `make demo` runs `navarch demo`, which must end with every example
// Synced and Healthy on the three workload clusters; a change pushed to Git then reaches all
// three clusters.
func TestDemoSyncsTheExamplesAndAGitChangeReachesEveryCluster(t *testing.T) {
	stateDir := t.TempDir()
	t.Cleanup(func() {
		if _, err := devfleet.ReadState(stateDir); err == nil {
			_ = devfleet.Down(stateDir, os.Stderr)
		}
	})
	out := navarch(t, "demo", "--state-dir", stateDir, "--examples", filepath.Join("..", "examples"), "--timeout", "5m")
	if !strings.Contains(out, "every Application is Synced and Healthy") {
		t.Fatalf("navarch demo did not report success:\n%s", out)
	}

	// The fleet matrix (navarch status's): the header names the clusters; every app row is
	// Synced and Healthy ("Sync/OK") on the clusters it targets.
	start := strings.Index(out, "APPLICATION")
	if start < 0 {
		t.Fatalf("navarch demo printed no fleet matrix:\n%s", out)
	}
	matrix, _, _ := strings.Cut(out[start:], "\n\n")
	rows := tableRows(matrix)
	if got := strings.Join(rows[0], " "); got != "APPLICATION dev-1 prod-3 staging-2 in-cluster" {
		t.Errorf("matrix header %q", got)
	}
	want := map[string]int{ // row → clusters it runs on
		"apps:guestbook": 3, "apps:podinfo": 3, "platform": 1, "hello": 1,
		"checkout-dev-1": 1, "checkout-staging-2": 1, "checkout-prod-3": 1,
		"monitoring-crds-dev-1": 1, "monitoring-crds-staging-2": 1, "monitoring-crds-prod-3": 1,
	}
	for _, row := range rows[1:] {
		healthy := 0
		for _, cell := range row[1:] {
			switch cell {
			case "Sync/OK":
				healthy++
			case "-":
			default:
				t.Errorf("row %s has cell %q", row[0], cell)
			}
		}
		if n, ok := want[row[0]]; !ok || n != healthy {
			t.Errorf("row %s: %d Synced and Healthy cells, want %d", row[0], healthy, n)
		}
		delete(want, row[0])
	}
	if len(want) > 0 {
		t.Errorf("matrix lacks rows %v:\n%s", want, matrix)
	}

	// A change pushed to Git reaches every cluster.
	state, err := devfleet.ReadState(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	git := gitserver.Remote(state.Git.Root, state.Git.URL)
	if _, err := git.Update("examples", "guestbook: greet in French", func(dir string) error {
		path := filepath.Join(dir, "apps", "guestbook", "base", "deployment.yaml")
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		changed := strings.Replace(string(data), "        ports:\n", "        env:\n        - {name: GREETING, value: bonjour}\n        ports:\n", 1)
		return os.WriteFile(path, []byte(changed), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	pushed := time.Now()
	for _, c := range state.Clusters {
		cl := clientFor(t, c.Kubeconfig)
		deadline := time.Now().Add(2 * time.Minute)
		for {
			d := &appsv1.Deployment{}
			err := cl.Get(context.Background(), client.ObjectKey{Namespace: "guestbook", Name: "guestbook"}, d)
			if err == nil && len(d.Spec.Template.Spec.Containers[0].Env) == 1 && d.Spec.Template.Spec.Containers[0].Env[0].Value == "bonjour" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pushed change did not reach cluster %s within 2m (%v)", c.Name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Logf("the change reached all %d clusters %s after the push", len(state.Clusters), time.Since(pushed).Round(100*time.Millisecond))

	// The apps ApplicationSet rolls out env by env: staging's sync began once dev's had
	// finished and dev had stayed Healthy for its 5 s soak, prod's once staging's had finished.
	mgmt := clientFor(t, state.Management.Kubeconfig)
	ops := map[string]*navarchv1.OperationState{}
	for _, name := range []string{"guestbook-dev-1", "guestbook-staging-2", "guestbook-prod-3"} {
		app := &navarchv1.Application{}
		if err := mgmt.Get(context.Background(), client.ObjectKey{Namespace: "demo", Name: name}, app); err != nil {
			t.Fatal(err)
		}
		op := app.Status.OperationState
		if op == nil || op.FinishedAt == nil || op.Operation.InitiatedBy.Username != "applicationset/apps" {
			t.Fatalf("%s: the last operation %+v was not the rollout's", name, op)
		}
		ops[name] = op
	}
	dev, staging, prod := ops["guestbook-dev-1"], ops["guestbook-staging-2"], ops["guestbook-prod-3"]
	// Times are recorded to the second.
	if staging.StartedAt.Time.Before(dev.FinishedAt.Add(4 * time.Second)) {
		t.Errorf("staging's sync started at %s, before dev's (finished %s) had soaked 5 s", staging.StartedAt, dev.FinishedAt)
	}
	if prod.StartedAt.Time.Before(staging.FinishedAt.Time) {
		t.Errorf("prod's sync started at %s, before staging's finished at %s", prod.StartedAt, staging.FinishedAt)
	}

	t.Run("a pull request gets a preview environment until it closes", func(t *testing.T) {
		previewEnvironmentIsCreatedAndTornDown(t, stateDir, state)
	})
}
