package dashboard

import (
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

func testApp(ns, name, set, path, cluster string, sync navarchv1.SyncStatusCode, health navarchv1.HealthStatusCode) *navarchv1.Application {
	app := &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: "https://git.example.com/r.git", Path: path},
			Destination: navarchv1.ApplicationDestination{Name: cluster},
		},
	}
	if set != "" {
		app.Labels[navarchv1.LabelApplicationSet] = set
	}
	app.Status.Sync.Status, app.Status.Health.Status = sync, health
	return app
}

func testCluster(name string, labels map[string]string) navarchv1.Cluster {
	return navarchv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status:     navarchv1.ClusterStatus{Conditions: []metav1.Condition{{Type: navarchv1.ConditionReady, Status: metav1.ConditionTrue}}},
	}
}

func TestAppState(t *testing.T) {
	failedOp := testApp("ns", "a", "", "p", "c", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	failedOp.Status.OperationState = &navarchv1.OperationState{Phase: navarchv1.OperationFailed}
	running := testApp("ns", "a", "", "p", "c", navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy)
	running.Status.OperationState = &navarchv1.OperationState{Phase: navarchv1.OperationRunning}
	for _, tc := range []struct {
		name string
		app  *navarchv1.Application
		want state
	}{
		{"synced and healthy", testApp("ns", "a", "", "p", "c", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy), stateOK},
		{"out of sync", testApp("ns", "a", "", "p", "c", navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy), stateOutOfSync},
		{"degraded wins over out of sync", testApp("ns", "a", "", "p", "c", navarchv1.SyncStatusOutOfSync, navarchv1.HealthDegraded), stateFailed},
		{"failed operation", failedOp, stateFailed},
		{"a running sync is progress", running, stateProgressing},
		{"progressing", testApp("ns", "a", "", "p", "c", navarchv1.SyncStatusSynced, navarchv1.HealthProgressing), stateProgressing},
		{"missing", testApp("ns", "a", "", "p", "c", navarchv1.SyncStatusSynced, navarchv1.HealthMissing), stateUnknown},
		{"never compared", testApp("ns", "a", "", "p", "c", "", ""), stateUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := appState(tc.app); got != tc.want {
				t.Errorf("appState = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBuildMatrixGroupsAnApplicationSetsAppsIntoOneRowWithProblemsFirst(t *testing.T) {
	clusters := []navarchv1.Cluster{testCluster("dev", nil), testCluster("prod", nil)}
	apps := []*navarchv1.Application{
		testApp("demo", "guestbook-dev", "apps", "apps/guestbook", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy),
		testApp("demo", "guestbook-prod", "apps", "apps/guestbook", "prod", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy),
		testApp("demo", "podinfo-prod", "apps", "apps/podinfo", "prod", navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy),
		testApp("demo", "hello", "", "hello", "elsewhere", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy),
	}
	m := buildMatrix(apps, clusters, filter{})
	var rows []string
	for _, r := range m.Rows {
		rows = append(rows, fmt.Sprintf("%s:%d", r.Label, len(r.Cells)))
	}
	if got, want := strings.Join(rows, " "), "apps:apps/podinfo:1 apps:apps/guestbook:2 hello:1"; got != want {
		t.Errorf("rows %q, want %q (problems first, one row per application of the set)", got, want)
	}
	var cols []string
	for _, c := range m.Columns {
		cols = append(cols, fmt.Sprintf("%s/%d/%d/%v", c.Name, c.Total, c.NotOK, c.Registered))
	}
	if got, want := strings.Join(cols, " "), "dev/1/0/true prod/2/1/true elsewhere/1/0/false"; got != want {
		t.Errorf("columns %q, want %q", got, want)
	}
	if m.Total != 4 || m.NotOK != 1 {
		t.Errorf("total %d not OK %d, want 4 and 1", m.Total, m.NotOK)
	}
	cell := string(cellHTML(m.Rows[0].Key, "prod", m.Rows[0].Cells["prod"]))
	for _, want := range []string{`class="cell outofsync"`, "OutOfSync · Healthy", `href="/applications/demo/podinfo-prod"`} {
		if !strings.Contains(cell, want) {
			t.Errorf("cell %s lacks %s", cell, want)
		}
	}
}

func TestFilters(t *testing.T) {
	clusters := []navarchv1.Cluster{testCluster("dev", nil)}
	a := testApp("demo", "a", "apps", "apps/a", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthHealthy)
	a.Labels["env"] = "dev"
	b := testApp("demo", "b", "platform", "platform/b", "dev", navarchv1.SyncStatusOutOfSync, navarchv1.HealthHealthy)
	b.Spec.Project = "platform"
	c := testApp("demo", "c", "", "c", "dev", navarchv1.SyncStatusSynced, navarchv1.HealthDegraded)
	apps := []*navarchv1.Application{a, b, c}
	for _, tc := range []struct {
		query string
		want  string
	}{
		{"", "a b c"},
		{"selector=env%3Ddev", "a"},
		{"selector=env%21%3Ddev", "b c"},
		{"applicationset=platform", "b"},
		{"project=default", "a c"},
		{"project=platform", "b"},
		{"state=problem", "b c"},
		{"state=failed", "c"},
		{"state=ok", "a"},
		{"state=outofsync&project=platform", "b"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			f, err := parseFilter(q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range buildMatrix(apps, clusters, f).Rows {
				for _, cell := range r.Cells {
					for _, app := range cell {
						got = append(got, app.Name)
					}
				}
			}
			slices.Sort(got)
			if strings.Join(got, " ") != tc.want {
				t.Errorf("%s selects %v, want %s", tc.query, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"selector=env%3D%3D%3Dx%21", "state=purple"} {
		q, _ := url.ParseQuery(bad)
		if _, err := parseFilter(q); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// fleetOf builds rows × clusters Applications: rows ApplicationSet rows, one Application
// per cluster each, one in seven of them not Synced and Healthy.
func fleetOf(rows, clusters int) ([]*navarchv1.Application, []navarchv1.Cluster) {
	var cs []navarchv1.Cluster
	for c := range clusters {
		cs = append(cs, testCluster(fmt.Sprintf("cluster-%02d", c), map[string]string{"env": "prod"}))
	}
	var apps []*navarchv1.Application
	n := 0
	for r := range rows {
		for c := range clusters {
			sync, health := navarchv1.SyncStatusSynced, navarchv1.HealthHealthy
			switch n % 7 {
			case 1:
				sync = navarchv1.SyncStatusOutOfSync
			case 3:
				health = navarchv1.HealthDegraded
			}
			app := testApp("apps", fmt.Sprintf("app-%04d-cluster-%02d", r, c), fmt.Sprintf("set-%02d", r%10),
				fmt.Sprintf("apps/app-%04d", r), cs[c].Name, sync, health)
			app.Labels["env"] = "prod"
			app.Status.Sync.Revision = "0123456789abcdef0123456789abcdef01234567"
			apps = append(apps, app)
			n++
		}
	}
	return apps, cs
}

// BenchmarkFleetPage measures the fleet page's server-side cost (build the matrix from the
// cached objects and render the whole page) against its budget: 1,000 Applications over 20
// clusters in ≤ 300 ms. "1000apps" is that fleet (50 rows × 20 clusters); "1000rows" is the
// worst case of the same shape, 1,000 rows × 20 clusters = 20,000 Applications.
func BenchmarkFleetPage(b *testing.B) {
	pages, err := parsePages()
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct {
		name     string
		rows     int
		clusters int
	}{{"1000apps", 50, 20}, {"1000rows", 1000, 20}} {
		b.Run(size.name, func(b *testing.B) {
			apps, clusters := fleetOf(size.rows, size.clusters)
			b.ReportAllocs()
			for b.Loop() {
				v := &fleetView{Matrix: buildMatrix(apps, clusters, filter{}), States: stateOptions()}
				if err := pages["fleet"].ExecuteTemplate(io.Discard, "layout", page{Title: "Fleet", Live: true, Data: v}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
