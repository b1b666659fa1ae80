package main

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func cluster(name, server string) navarchv1.Cluster {
	return navarchv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: navarchv1.ClusterSpec{Server: server}}
}

// fleetApp is an Application of appSet (none when empty) at path, on destination d.
func fleetApp(namespace, name, appSet, path string, d navarchv1.ApplicationDestination,
	sync navarchv1.SyncStatusCode, health navarchv1.HealthStatusCode) navarchv1.Application {
	app := navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       navarchv1.ApplicationSpec{Source: navarchv1.ApplicationSource{Path: path}, Destination: d},
		Status: navarchv1.ApplicationStatus{Sync: navarchv1.SyncStatus{Status: sync, Revision: commit},
			Health: navarchv1.HealthStatus{Status: health}},
	}
	if appSet != "" {
		app.Labels = map[string]string{navarchv1.LabelApplicationSet: appSet}
	}
	return app
}

func byName(n string) navarchv1.ApplicationDestination {
	return navarchv1.ApplicationDestination{Name: n}
}
func byServer(s string) navarchv1.ApplicationDestination {
	return navarchv1.ApplicationDestination{Server: s}
}

const (
	synced, outOfSync          = navarchv1.SyncStatusSynced, navarchv1.SyncStatusOutOfSync
	healthy, degraded, missing = navarchv1.HealthHealthy, navarchv1.HealthDegraded, navarchv1.HealthMissing
	progressing                = navarchv1.HealthProgressing
)

func TestFleetMatrix(t *testing.T) {
	clusters := []navarchv1.Cluster{cluster("prod-us", "https://prod-us:6443"), cluster("prod-eu", "https://prod-eu:6443"), cluster("dev-1", "https://dev-1:6443")}
	tests := []struct {
		name     string
		apps     []navarchv1.Application
		wide     bool
		want     string
		summary  matrixSummary
		clusters []string
	}{
		{
			name: "an ApplicationSet's paths are rows, its clusters columns; servers resolve to Clusters",
			apps: []navarchv1.Application{
				fleetApp("apps", "api-prod-eu", "fleet", "apps/api", byName("prod-eu"), synced, healthy),
				fleetApp("apps", "api-prod-us", "fleet", "apps/api", byServer("https://prod-us:6443"), outOfSync, progressing),
				fleetApp("apps", "web-prod-eu", "fleet", "apps/web", byName("prod-eu"), synced, degraded),
				fleetApp("apps", "web-dev-1", "fleet", "apps/web", byName("dev-1"), synced, healthy),
				fleetApp("apps", "ingress", "", "infra/ingress", byServer("https://kubernetes.default.svc"), synced, healthy),
			},
			want: "" +
				"APPLICATION         dev-1     prod-eu   prod-us    in-cluster\n" +
				"fleet:apps/api      -         Sync/OK   OOS/Prog   -\n" +
				"fleet:apps/web      Sync/OK   Sync/Degr -          -\n" +
				"ingress             -         -         -          Sync/OK\n",
			summary:  matrixSummary{Applications: 3, Clusters: 4, Total: 5, NotOK: 2},
			clusters: []string{"dev-1", "prod-eu", "prod-us", "in-cluster"},
		},
		{
			name: "wide spells out the status and adds the revision; namespaces prefix rows when several",
			apps: []navarchv1.Application{
				fleetApp("apps", "api-prod-eu", "fleet", "apps/api", byName("prod-eu"), synced, healthy),
				fleetApp("team", "api-prod-eu", "fleet", "apps/api", byName("prod-eu"), outOfSync, missing),
			},
			wide: true,
			want: "" +
				"APPLICATION           dev-1   prod-eu                    prod-us\n" +
				"apps/fleet:apps/api   -       Synced/Healthy@1a2b3c4d    -\n" +
				"team/fleet:apps/api   -       OutOfSync/Missing@1a2b3c4d -\n",
			summary:  matrixSummary{Applications: 2, Clusters: 3, Total: 2, NotOK: 1},
			clusters: []string{"dev-1", "prod-eu", "prod-us"},
		},
		{
			name: "two Applications in one cell show the worse; an unknown destination gets its own column",
			apps: []navarchv1.Application{
				fleetApp("apps", "api-a", "fleet", "apps/api", byName("prod-eu"), synced, healthy),
				fleetApp("apps", "api-b", "fleet", "apps/api", byName("prod-eu"), synced, degraded),
				fleetApp("apps", "api-old", "fleet", "apps/api", byName("staging"), synced, healthy),
			},
			want: "" +
				"APPLICATION      dev-1   prod-eu      prod-us   staging?\n" +
				"fleet:apps/api   -       Sync/Degr(2) -         Sync/OK\n",
			summary:  matrixSummary{Applications: 1, Clusters: 4, Total: 3, NotOK: 1},
			clusters: []string{"dev-1", "prod-eu", "prod-us", "staging"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := buildFleetMatrix(tt.apps, clusters)
			if m.Summary != tt.summary {
				t.Errorf("summary %+v, want %+v", m.Summary, tt.summary)
			}
			var names []string
			for _, c := range m.Clusters {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.clusters, ",") {
				t.Errorf("columns %v, want %v", names, tt.clusters)
			}
			var b bytes.Buffer
			if err := printFleetMatrix(&b, m, tt.wide, palette{}); err != nil {
				t.Fatal(err)
			}
			// Compare cell by cell: the expected tables above are aligned for reading.
			got := strings.SplitN(b.String(), "\n\n", 2)
			if cells(got[0]) != cells(tt.want) {
				t.Errorf("matrix\n%s\nwant\n%s", got[0], tt.want)
			}
			if len(got) < 2 || !strings.Contains(got[1], "of") {
				t.Fatalf("no summary after the matrix:\n%s", b.String())
			}
			if !strings.Contains(got[1], " Applications not Synced/Healthy\n") {
				t.Errorf("summary line:\n%s", got[1])
			}
			if legend := strings.Contains(got[1], matrixLegend); legend == tt.wide {
				t.Errorf("legend shown %v with wide %v:\n%s", legend, tt.wide, got[1])
			}
		})
	}
}

func cells(table string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(table), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

func TestFleetMatrixSummaryAndColumnsAlign(t *testing.T) {
	apps := []navarchv1.Application{
		fleetApp("apps", "api-prod-eu", "fleet", "apps/api", byName("prod-eu"), synced, healthy),
		fleetApp("apps", "api-staging", "fleet", "apps/api", byName("staging"), outOfSync, degraded),
	}
	m := buildFleetMatrix(apps, []navarchv1.Cluster{cluster("prod-eu", "https://prod-eu:6443")})
	var b bytes.Buffer
	if err := printFleetMatrix(&b, m, false, palette{enabled: true}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"APPLICATION      prod-eu   staging?\n" +
		"fleet:apps/api   \x1b[32mSync/OK\x1b[0m   \x1b[31mOOS/Degr\x1b[0m\n" +
		"\n" +
		matrixLegend + "\n" +
		"1 application, 2 clusters, 1 of 2 Applications not Synced/Healthy\n" +
		"No Cluster is registered for staging (marked ?): see navarch cluster list\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
