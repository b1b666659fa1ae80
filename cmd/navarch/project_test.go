package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/project"
)

// teamAProject is a Project whose windows, at now (Wednesday 12:00 UTC), are: a deny window
// over prod-* namespaces open until 14:00, an office-hours allow window open until 17:00, and
// a weekend freeze of prod-eu that opens on Friday at 22:00 in Berlin.
func teamAProject() navarchv1.Project {
	return navarchv1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "navarch-system", CreationTimestamp: at(-72 * time.Hour)},
		Spec: navarchv1.ProjectSpec{
			Description:                "Team A's services",
			SourceRepos:                []string{"https://github.com/org/team-a-*", "https://charts.example.com", "oci://registry.example.com/team-a"},
			Destinations:               []navarchv1.ProjectDestination{{Name: "prod-*", Namespace: "prod-*"}, {Server: "https://dev-1.example.com", Namespace: "*"}},
			NamespaceResourceBlacklist: []navarchv1.GroupKind{{Kind: "Secret"}, {Group: "networking.k8s.io", Kind: "NetworkPolicy"}},
			SourceNamespaces:           []string{"team-a"},
			SyncWindows: []navarchv1.SyncWindow{
				{Kind: navarchv1.SyncWindowDeny, Schedule: "0 10 * * *", Duration: "4h", Namespaces: []string{"prod-*"}},
				{Kind: navarchv1.SyncWindowAllow, Schedule: "0 9 * * 1-5", Duration: "8h", Applications: []string{"*"}, ManualSync: true},
				{Kind: navarchv1.SyncWindowDeny, Schedule: "0 22 * * 5", Duration: "60h", Clusters: []string{"prod-eu"}, TimeZone: "Europe/Berlin"},
			},
		},
	}
}

func defaultProject() navarchv1.Project {
	return navarchv1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "navarch-system", CreationTimestamp: at(-240 * time.Hour)},
		Spec: navarchv1.ProjectSpec{
			Description:              "Applications without spec.project: everything is allowed",
			SourceRepos:              []string{"*"},
			Destinations:             []navarchv1.ProjectDestination{{Name: "*", Server: "*", Namespace: "*"}},
			ClusterResourceWhitelist: []navarchv1.GroupKind{{Group: "*", Kind: "*"}},
			SourceNamespaces:         []string{"*"},
		},
	}
}

// teamAApps are three Applications: two of team-a, one blocked by the open deny window and one
// the controller refused; and one of the default Project.
func teamAApps() projectApplications {
	blocked := fleetApp("team-a", "api-prod-eu", "", "apps/api", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "prod-api"}, outOfSync, healthy)
	blocked.Spec.Project = "team-a"
	blocked.Status.Conditions = []metav1.Condition{{Type: navarchv1.ApplicationSyncBlocked, Status: metav1.ConditionTrue, Reason: navarchv1.ReasonSyncWindow,
		Message: `syncs wait: the deny window "0 10 * * *" (4h; namespaces prod-*) of Project team-a is open until 2026-03-04T14:00:00Z`}}
	web := fleetApp("team-a", "web", "", "apps/web", navarchv1.ApplicationDestination{Server: "https://dev-1.example.com/", Namespace: "web"}, synced, healthy)
	web.Spec.Project = "team-a"
	refused := fleetApp("team-a", "db", "", "apps/db", navarchv1.ApplicationDestination{Name: "dev-1", Namespace: "kube-system"}, navarchv1.SyncStatusUnknown, navarchv1.HealthUnknown)
	refused.Spec.Project = "team-a"
	refused.Status.Conditions = []metav1.Condition{{Type: navarchv1.ApplicationInvalidSpecError, Status: metav1.ConditionTrue, Reason: navarchv1.ReasonNotPermitted,
		Message: "refused by its Project: spec.destination: the Project team-a does not allow namespace kube-system on cluster dev-1"}}
	other := fleetApp("apps", "ingress", "", "infra/ingress", byName("in-cluster"), synced, healthy)
	apps := []navarchv1.Application{blocked, web, refused, other}
	sortApplications(apps)
	return projectApplications{listed: true, apps: apps,
		clusters: []navarchv1.Cluster{cluster("prod-eu", "https://prod-eu.example.com"), cluster("dev-1", "https://dev-1.example.com")}}
}

func assertRows(t *testing.T, got, want [][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}

func TestProjectListRows(t *testing.T) {
	invalid := navarchv1.Project{ObjectMeta: metav1.ObjectMeta{Name: "broken", CreationTimestamp: at(-time.Hour)},
		Spec: navarchv1.ProjectSpec{SyncWindows: []navarchv1.SyncWindow{{Kind: "deny", Schedule: "61 * * * *", Duration: "1h"}}}}
	projects := []navarchv1.Project{invalid, defaultProject(), teamAProject()}
	tests := []struct {
		name string
		wide bool
		apps projectApplications
		want [][]string
	}{
		{
			name: "table",
			apps: teamAApps(),
			want: [][]string{
				{"NAME", "DESCRIPTION", "REPOS", "DESTINATIONS", "WINDOWS", "APPLICATIONS", "AGE"},
				{"broken", "-", "none", "none", "invalid", "0", "60m"},
				{"default", "Applications without spec.project: everything is allowed", "*", "*@*", "none", "1", "10d"},
				{"team-a", "Team A's services", "https://github.com/org/team-a-*,https://charts.example.com (+1)", "prod-*@prod-*,*@https://dev-1.example.com", "3, 2 open", "3", "3d"},
			},
		},
		{
			name: "wide lists everything; Applications that could not be listed are counted as ?",
			wide: true,
			want: [][]string{
				{"NAME", "DESCRIPTION", "REPOS", "DESTINATIONS", "WINDOWS", "APPLICATIONS", "AGE", "APP-NAMESPACES"},
				{"broken", "-", "none", "none", "invalid", "?", "60m", "navarch-system"},
				{"default", "Applications without spec.project: everything is allowed", "*", "*@*", "none", "?", "10d", "navarch-system,*"},
				{"team-a", "Team A's services", "https://github.com/org/team-a-*,https://charts.example.com,oci://registry.example.com/team-a",
					"prod-*@prod-*,*@https://dev-1.example.com", "3, 2 open", "?", "3d", "navarch-system,team-a"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertRows(t, projectListRows(projects, tt.apps, "navarch-system", tt.wide, now), tt.want)
		})
	}
}

func TestProjectWindowsSayWhatIsOpenAndWhoMaySync(t *testing.T) {
	proj := teamAProject()
	pol, err := project.Compile(&proj, "navarch-system")
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, windowRows(pol.Windows(now), now, palette{}), [][]string{
		{"KIND", "SCHEDULE", "DURATION", "TIMEZONE", "MATCHES", "MANUAL-SYNC", "STATE"},
		{"deny", "0 10 * * *", "4h", "UTC", "namespaces prod-*", "no", "open until 2026-03-04T14:00:00Z (in 120m)"},
		{"allow", "0 9 * * 1-5", "8h", "UTC", "applications *", "yes", "open until 2026-03-04T17:00:00Z (in 5h)"},
		{"deny", "0 22 * * 5", "60h", "Europe/Berlin", "clusters prod-eu", "no", "closed, opens at 2026-03-06T21:00:00Z (in 2d9h)"},
	})
	apps := teamAApps()
	assertRows(t, gateRows(pol, apps.of("team-a"), apps.clusters, now, palette{}), [][]string{
		{"APPLICATION", "CLUSTER", "NAMESPACE", "AUTOMATED", "MANUAL", "REASON"},
		{"team-a/api-prod-eu", "prod-eu", "prod-api", "waits", "refused",
			`the deny window "0 10 * * *" (4h; namespaces prod-*) of Project team-a is open until 2026-03-04T14:00:00Z`},
		{"team-a/db", "dev-1", "kube-system", "yes", "yes", "-"},
		{"team-a/web", "https://dev-1.example.com/", "web", "yes", "yes", "-"},
	})

	var b, stderr bytes.Buffer
	if err := printProjectWindows(&b, &stderr, pol, apps, now, palette{}); err != nil {
		t.Fatal(err)
	}
	if tables := strings.Split(b.String(), "\n\n"); len(tables) != 2 || !strings.HasPrefix(tables[1], "APPLICATION ") {
		t.Errorf("want the windows, a blank line and the Applications:\n%s", b.String())
	}

	// -o json: the same, with times a program can read.
	data, err := json.Marshal(windowsDocumentOf(pol, apps.of("team-a"), apps.clusters, now))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"project":"team-a"`,
		`{"kind":"deny","schedule":"0 10 * * *","duration":"4h","namespaces":["prod-*"],"open":true,"closesAt":"2026-03-04T14:00:00Z"}`,
		`"timeZone":"Europe/Berlin","open":false,"opensAt":"2026-03-06T21:00:00Z"}`,
		`{"namespace":"team-a","name":"api-prod-eu","automated":false,"manual":false,"reason":"the deny window`,
		`{"namespace":"team-a","name":"web","automated":true,"manual":true,"changesAt":"2026-03-04T17:00:00Z"}`,
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("project windows -o json lacks %s:\n%s", want, data)
		}
	}
}

func TestProjectWindowsWithoutWindowsSaysSo(t *testing.T) {
	proj := defaultProject()
	pol, err := project.Compile(&proj, "navarch-system")
	if err != nil {
		t.Fatal(err)
	}
	var b, stderr bytes.Buffer
	if err := printProjectWindows(&b, &stderr, pol, teamAApps(), now, palette{}); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 0 || stderr.String() != "Project default has no sync windows: its Applications may sync at any time.\n" {
		t.Errorf("stdout %q, stderr %q", b.String(), stderr.String())
	}
}

func TestDescribeProject(t *testing.T) {
	tests := []struct {
		name string
		proj navarchv1.Project
		apps projectApplications
		want []string
	}{
		{
			name: "a team's Project",
			proj: teamAProject(),
			apps: teamAApps(),
			want: []string{
				"Name:             navarch-system/team-a\n",
				"Description:      Team A's services\n",
				"Repositories:     https://github.com/org/team-a-*\n" +
					"                  https://charts.example.com\n" +
					"                  oci://registry.example.com/team-a\n",
				"Destinations:     namespace prod-* on cluster prod-*\n" +
					"                  namespace * on server https://dev-1.example.com\n",
				"Cluster kinds:    no cluster-scoped kinds\n",
				"Namespaced kinds: every namespaced kind except Secret, NetworkPolicy.networking.k8s.io\n",
				"App namespaces:   navarch-system, team-a\n",
				"Created:          3d ago\n",
				"Sync windows (3):\n",
				"  deny    0 10 * * *    4h         UTC             namespaces prod-*   no            open until 2026-03-04T14:00:00Z (in 120m)\n",
				"Applications (3):\n",
				"  team-a/api-prod-eu   prod-eu                      prod-api      OutOfSync   Healthy   syncs blocked\n",
				"  team-a/db            dev-1                        kube-system   Unknown     Unknown   refused (NotPermitted)\n",
				"  team-a/web           https://dev-1.example.com/   web           Synced      Healthy   -\n",
			},
		},
		{
			name: "the default Project",
			proj: defaultProject(),
			apps: teamAApps(),
			want: []string{
				"Destinations:     namespace * on cluster * or server *\n",
				"Cluster kinds:    every cluster-scoped kind\n",
				"Namespaced kinds: every namespaced kind\n",
				"App namespaces:   navarch-system, *\n",
				"Sync windows:     none; its Applications may sync at any time\n",
				"Applications (1):\n",
				"  apps/ingress   in-cluster",
			},
		},
		{
			name: "an empty Project allows nothing; Applications that could not be listed are unknown",
			proj: navarchv1.Project{ObjectMeta: metav1.ObjectMeta{Name: "locked", Namespace: "navarch-system", CreationTimestamp: at(-time.Minute)},
				Spec: navarchv1.ProjectSpec{NamespaceResourceWhitelist: []navarchv1.GroupKind{{Group: "apps", Kind: "Deployment"}, {Kind: "Service"}},
					SyncWindows: []navarchv1.SyncWindow{{Kind: "deny", Schedule: "0 10 * * *", Duration: "soon"}}}},
			want: []string{
				"Repositories:     none: its Applications may render no repository\n",
				"Destinations:     none: its Applications may sync nowhere\n",
				"Namespaced kinds: only Deployment.apps, Service\n",
				"App namespaces:   navarch-system\n",
				`Invalid:          spec.syncWindows[0].duration: "soon" is not a positive duration such as 1h or 30m; the controller refuses every Application of this Project` + "\n",
				"Applications:     unknown (see the warning)\n",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := describeProject(&b, &tt.proj, "navarch-system", tt.apps, now, palette{}); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !strings.Contains(b.String(), want) {
					t.Errorf("description lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}

func TestAppGetAndListSayWhatTheProjectStops(t *testing.T) {
	apps := teamAApps()
	blocked, refused := apps.apps[1], apps.apps[2] // sorted: apps/ingress, team-a/api-prod-eu, team-a/db, team-a/web
	for _, tt := range []struct {
		app  navarchv1.Application
		want []string
	}{
		{blocked, []string{
			"Project:          team-a\n",
			"Sync policy:      manual\n" +
				`Sync window:      automated syncs wait: the deny window "0 10 * * *" (4h; namespaces prod-*) of Project team-a is open until 2026-03-04T14:00:00Z` + "\n",
		}},
		{refused, []string{
			"Project:          team-a\n" +
				"Invalid spec:     refused by its Project: spec.destination: the Project team-a does not allow namespace kube-system on cluster dev-1 (NotPermitted; nothing is rendered or synced)\n",
		}},
		{apps.apps[0], []string{"Project:          default\n"}},
	} {
		var b bytes.Buffer
		if err := describeApplication(&b, &tt.app, now, palette{}); err != nil {
			t.Fatal(err)
		}
		for _, want := range tt.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("app get %s lacks %q:\n%s", tt.app.Name, want, b.String())
			}
		}
		if tt.app.Name == "ingress" && strings.Contains(b.String(), "Sync window:") {
			t.Errorf("app get %s shows a sync window it does not have:\n%s", tt.app.Name, b.String())
		}
	}

	rows := appListRows(apps.apps, true, true, now, palette{})
	for i, want := range [][2]string{{"Synced", "default"}, {"OutOfSync (blocked)", "team-a"}, {"Unknown (refused)", "team-a"}, {"Synced", "team-a"}} {
		row := rows[i+1]
		if row[3] != want[0] || row[len(row)-1] != want[1] {
			t.Errorf("app list -o wide row %d: SYNC %q, PROJECT %q; want %q, %q", i+1, row[3], row[len(row)-1], want[0], want[1])
		}
	}
}
