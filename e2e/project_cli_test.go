package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/localcluster"
	"github.com/navarch-io/navarch/internal/project"
)

// TestOperatorSeesWhichSyncWindowBlocksAnApplication runs the project commands and app get
// against a real management cluster. As in TestCLI no controller runs: the test creates the
// default Project and writes the Application's SyncBlocked condition the way the controller
// does, and checks what the user sees. Which windows are open, and who may sync, the CLI works
// out itself from the Project and the clock.
func TestOperatorSeesWhichSyncWindowBlocksAnApplication(t *testing.T) {
	cluster := localcluster.StartForTest(t, localcluster.Options{Name: "project-cli", CRDDirectoryPaths: []string{"../config/crd/bases"}})
	env := &cliEnv{cluster: cluster, c: cliClientFor(t, cluster.KubeconfigPath()), kubeconfig: cluster.KubeconfigPath()}
	ctx := context.Background()
	env.createNamespace(t, "navarch-system")
	env.createNamespace(t, "team-a")
	prodEU := &navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "prod-eu"}, Spec: navarchv1.ClusterSpec{Server: "https://prod-eu.example.com",
		KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: "navarch-system", Name: "prod-eu-kubeconfig"}}}
	if err := env.c.Create(ctx, prodEU); err != nil {
		t.Fatal(err)
	}

	// A daily deny window over the prod-* namespaces that opened a minute ago and stays open for
	// two hours, and a weekly one over prod-eu that opens in three hours.
	opened := time.Now().UTC().Truncate(time.Minute).Add(-time.Minute)
	closes := opened.Add(2 * time.Hour)
	later := opened.Add(3 * time.Hour)
	teamA := &navarchv1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "navarch-system"},
		Spec: navarchv1.ProjectSpec{
			Description:      "Team A",
			SourceRepos:      []string{cliRepo},
			Destinations:     []navarchv1.ProjectDestination{{Name: "prod-eu", Namespace: "prod-*"}},
			SourceNamespaces: []string{"team-a"},
			SyncWindows: []navarchv1.SyncWindow{
				{Kind: navarchv1.SyncWindowDeny, Schedule: fmt.Sprintf("%d %d * * *", opened.Minute(), opened.Hour()), Duration: "2h", Namespaces: []string{"prod-*"}},
				{Kind: navarchv1.SyncWindowDeny, Schedule: fmt.Sprintf("%d %d * * %d", later.Minute(), later.Hour(), later.Weekday()), Duration: "1h",
					Clusters: []string{"prod-eu"}, ManualSync: true},
			},
		},
	}
	def := &navarchv1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: navarchv1.DefaultProject, Namespace: "navarch-system"},
		Spec: navarchv1.ProjectSpec{SourceRepos: []string{"*"}, Destinations: []navarchv1.ProjectDestination{{Name: "*", Server: "*", Namespace: "*"}},
			ClusterResourceWhitelist: []navarchv1.GroupKind{{Group: "*", Kind: "*"}}, SourceNamespaces: []string{"*"}},
	}
	for _, p := range []*navarchv1.Project{teamA, def} {
		if err := env.c.Create(ctx, p); err != nil {
			t.Fatalf("create Project %s: %v", p.Name, err)
		}
	}

	// The controller's verdict on the Application, as the engine writes it.
	pol, err := project.Compile(teamA, "navarch-system")
	if err != nil {
		t.Fatal(err)
	}
	gate := pol.Gate("api", "prod-api", project.DestinationOf(prodEU), time.Now())
	if gate.Automated {
		t.Fatalf("the deny window is not open at %s: the test's schedule is wrong", time.Now().UTC())
	}
	api := cliApp("team-a", "api", "", "apps/api", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "prod-api"})
	api.Spec.Project = "team-a"
	status := navarchv1.ApplicationStatus{
		Sync:         navarchv1.SyncStatus{Status: navarchv1.SyncStatusOutOfSync, Revision: cliCommit},
		Health:       navarchv1.HealthStatus{Status: navarchv1.HealthHealthy},
		ReconciledAt: cliAgoPtr(10 * time.Second),
		Conditions: []metav1.Condition{{Type: navarchv1.ApplicationSyncBlocked, Status: metav1.ConditionTrue, Reason: navarchv1.ReasonSyncWindow,
			Message: "syncs wait: " + gate.Reason, LastTransitionTime: cliAgo(time.Minute)}},
	}
	env.createApp(t, api, status)
	env.createApp(t, cliApp("team-a", "tools", "", "apps/tools", navarchv1.ApplicationDestination{Name: "in-cluster", Namespace: "tools"}), cliSyncedStatus())

	openState := "open until " + closes.Format(time.RFC3339)
	blockedReason := fmt.Sprintf(`the deny window "%d %d * * *" (2h; namespaces prod-*) of Project team-a is open until %s`,
		opened.Minute(), opened.Hour(), closes.Format(time.RFC3339))

	t.Run("ListCountsWindowsAndApplications", func(t *testing.T) {
		out := env.mustRun(t, "project", "list")
		cliAssertTable(t, "project list", out, [][]string{
			{"NAME", "DESCRIPTION", "REPOS", "DESTINATIONS", "WINDOWS", "APPLICATIONS", "AGE"},
		})
		// The tools Application has no spec.project: it belongs to default. (AGE is left out.)
		rows := cliRows(out)
		want := [][]string{
			{"default", "-", "*", "*@*", "none", "1"},
			{"team-a", "Team", "A", cliRepo, "prod-*@prod-eu", "2,", "1", "open", "1"},
		}
		if len(rows) != 3 || !slices.Equal(rows[1][:len(want[0])], want[0]) || !slices.Equal(rows[2][:len(want[1])], want[1]) {
			t.Errorf("project list: want default with no windows and 1 Application, team-a with 2 windows, 1 open, and 1 Application:\n%s", out)
		}
	})

	t.Run("GetSaysWhatTheProjectAllowsAndWhichWindowIsOpen", func(t *testing.T) {
		out := env.mustRun(t, "project", "get", "team-a")
		cliAssertContains(t, "project get team-a", out,
			"Name:             navarch-system/team-a\n",
			"Repositories:     "+cliRepo+"\n",
			"Destinations:     namespace prod-* on cluster prod-eu\n",
			"Cluster kinds:    no cluster-scoped kinds\n",
			"Namespaced kinds: every namespaced kind\n",
			"App namespaces:   navarch-system, team-a\n",
			"Sync windows (2):\n",
			openState,
			"closed, opens at "+later.Format(time.RFC3339),
			"Applications (1):\n")
		_, apps, _ := strings.Cut(out, "Applications (1):")
		cliAssertContains(t, "project get team-a: its Applications", apps, "team-a/api", "OutOfSync", "syncs blocked")

		var got navarchv1.Project
		if err := json.Unmarshal([]byte(env.mustRun(t, "project", "get", "team-a", "-o", "json")), &got); err != nil {
			t.Fatal(err)
		}
		if got.Name != "team-a" || len(got.Spec.SyncWindows) != 2 {
			t.Errorf("project get -o json: %s", toJSON(got))
		}
	})

	t.Run("WindowsSayWhenEachOpensAndWhoMaySyncNow", func(t *testing.T) {
		out := env.mustRun(t, "project", "windows", "team-a")
		windows, apps, ok := strings.Cut(out, "\n\n")
		if !ok {
			t.Fatalf("project windows: want two tables:\n%s", out)
		}
		cliAssertTable(t, "project windows", windows, [][]string{{"KIND", "SCHEDULE", "DURATION", "TIMEZONE", "MATCHES", "MANUAL-SYNC", "STATE"}})
		lines := strings.Split(strings.TrimSpace(windows), "\n")
		cells := func(line string) string { return strings.Join(strings.Fields(line), " ") }
		if len(lines) != 3 || !strings.Contains(cells(lines[1]), "namespaces prod-* no "+openState) ||
			!strings.Contains(cells(lines[2]), "clusters prod-eu yes closed, opens at "+later.Format(time.RFC3339)) {
			t.Errorf("project windows: want the deny window open until %s and the other closed:\n%s", closes.Format(time.RFC3339), windows)
		}
		cliAssertTable(t, "project windows applications", apps, [][]string{
			{"APPLICATION", "CLUSTER", "NAMESPACE", "AUTOMATED", "MANUAL", "REASON"},
			append([]string{"team-a/api", "prod-eu", "prod-api", "waits", "refused"}, strings.Fields(blockedReason)...),
		})

		var doc struct {
			Windows []struct {
				Open     bool       `json:"open"`
				ClosesAt *time.Time `json:"closesAt"`
				OpensAt  *time.Time `json:"opensAt"`
			} `json:"windows"`
			Applications []struct {
				Name      string `json:"name"`
				Automated bool   `json:"automated"`
				Reason    string `json:"reason"`
			} `json:"applications"`
		}
		if err := json.Unmarshal([]byte(env.mustRun(t, "project", "windows", "team-a", "-o", "json")), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Windows) != 2 || !doc.Windows[0].Open || doc.Windows[0].ClosesAt == nil || !doc.Windows[0].ClosesAt.Equal(closes) ||
			doc.Windows[1].Open || doc.Windows[1].OpensAt == nil || !doc.Windows[1].OpensAt.Equal(later) ||
			len(doc.Applications) != 1 || doc.Applications[0].Automated || doc.Applications[0].Reason != blockedReason {
			t.Errorf("project windows -o json: %s", toJSON(doc))
		}
	})

	t.Run("AppGetAndListShowTheBlockingWindow", func(t *testing.T) {
		cliAssertContains(t, "app get api", env.mustRun(t, "app", "get", "api", "-n", "team-a"),
			"Project:          team-a\n",
			"Sync window:      automated syncs wait: "+blockedReason+"\n",
			"  SyncBlocked   True     SyncWindow")
		cliAssertTable(t, "app list -o wide", env.mustRun(t, "app", "list", "-n", "team-a", "-o", "wide"), [][]string{
			{"NAME", "CLUSTER", "NAMESPACE", "SYNC", "HEALTH", "REVISION", "LAST-OP", "REPO", "PATH", "TARGET", "PROJECT"},
			{"api", "prod-eu", "prod-api", "OutOfSync", "(blocked)", "Healthy", "1a2b3c4d", "-", cliRepo, "apps/api", "main", "team-a"},
			{"tools", "in-cluster", "tools", "Synced", "Healthy", "1a2b3c4d", "Succeeded", "30m", "ago", cliRepo, "apps/tools", "main", "default"},
		})
	})

	t.Run("AMissingProjectIsNamed", func(t *testing.T) {
		env.expectExit(t, 1, `project "nope" not found in namespace navarch-system (its Projects: default, team-a)`, "project", "get", "nope")
		env.expectExit(t, 1, `project "team-a" not found in namespace elsewhere, which holds no Projects`, "project", "windows", "team-a", "--system-namespace", "elsewhere")
		env.expectExit(t, 2, `--output must be table, yaml or json, got "wide"`, "project", "windows", "team-a", "-o", "wide")
	})
}
