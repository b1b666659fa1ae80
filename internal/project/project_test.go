package project

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

const controlNS = "navarch-system"

func compile(t *testing.T, spec navarchv1.ProjectSpec) *Policy {
	t.Helper()
	p, err := Compile(&navarchv1.Project{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: spec}, controlNS)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var east = Destination{Name: "east", Server: "https://east.example.com:6443"}

func teamA(t *testing.T) *Policy {
	return compile(t, navarchv1.ProjectSpec{
		SourceRepos:      []string{"https://git.example.com/team-a/*", "!https://git.example.com/team-a/secret*"},
		Destinations:     []navarchv1.ProjectDestination{{Name: "east", Namespace: "team-a-*"}, {Server: "https://kubernetes.default.svc", Namespace: "team-a"}},
		SourceNamespaces: []string{"team-a"},
	})
}

func appSpec(repo, ns string) *navarchv1.ApplicationSpec {
	return &navarchv1.ApplicationSpec{
		Source:      navarchv1.ApplicationSource{RepoURL: repo},
		Destination: navarchv1.ApplicationDestination{Name: "east", Namespace: ns},
	}
}

func TestCheckApplication(t *testing.T) {
	p := teamA(t)
	for _, tc := range []struct {
		name, ns, repo, destNS string
		dest                   Destination
		refused                string // a part of the error; "" when allowed
	}{
		{"allowed", "team-a", "https://git.example.com/team-a/apps.git", "team-a-web", east, ""},
		{"a trailing .git and case do not matter", "team-a", "https://GIT.example.com/team-a/apps/", "team-a-web", east, ""},
		{"the control namespace may always", controlNS, "https://git.example.com/team-a/apps", "team-a-web", east, ""},
		{"another namespace", "team-b", "https://git.example.com/team-a/apps", "team-a-web", east, "spec.project: the Project team-a does not allow Applications in namespace team-b"},
		{"another repository", "team-a", "https://git.example.com/team-b/apps", "team-a-web", east, "spec.source.repoURL: the Project team-a does not allow the repository https://git.example.com/team-b/apps"},
		{"a denied repository", "team-a", "https://git.example.com/team-a/secrets", "team-a-web", east, "spec.source.repoURL"},
		{"another namespace on the cluster", "team-a", "https://git.example.com/team-a/apps", "kube-system", east, "spec.destination: the Project team-a does not allow namespace kube-system on cluster east"},
		{"another cluster", "team-a", "https://git.example.com/team-a/apps", "team-a-web", Destination{Name: "west", Server: "https://west:6443"}, "spec.destination"},
		{"the management cluster by server", "team-a", "https://git.example.com/team-a/apps", "team-a", ManagementCluster, ""},
		{"a dot-dot segment", "team-a", "https://git.example.com/team-a/../team-b/secret", "team-a-web", east, `spec.source.repoURL: the repository URL https://git.example.com/team-a/../team-b/secret has a "." or ".." path segment`},
		{"an encoded dot-dot segment", "team-a", "https://git.example.com/team-a/%2E%2e/team-b/secret", "team-a-web", east, "path segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.CheckApplication(tc.ns, appSpec(tc.repo, tc.destNS), tc.dest)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("got %v, want an error containing %q", err, tc.refused)
			}
			var perr *Error
			if err != nil && !errors.As(err, &perr) {
				t.Fatalf("%v is not a *project.Error", err)
			}
		})
	}
}

func TestMultipleSourcesNameTheRefusedOne(t *testing.T) {
	spec := appSpec("", "team-a-web")
	spec.Source = navarchv1.ApplicationSource{}
	spec.Sources = []navarchv1.ApplicationSource{{RepoURL: "https://git.example.com/team-a/apps"}, {RepoURL: "https://charts.example.com"}}
	err := teamA(t).CheckApplication("team-a", spec, east)
	if err == nil || !strings.HasPrefix(err.Error(), "spec.sources[1].repoURL:") {
		t.Fatalf("got %v", err)
	}
}

func TestDeniedDestinations(t *testing.T) {
	p := compile(t, navarchv1.ProjectSpec{Destinations: []navarchv1.ProjectDestination{
		{Server: "*", Namespace: "!kube-system"},
		{Name: "!prod-*", Namespace: "*"},
	}})
	for _, tc := range []struct {
		dest Destination
		ns   string
		want bool
	}{
		{east, "web", true},
		{east, "kube-system", false},
		{Destination{Name: "prod-1", Server: "https://prod-1:6443"}, "web", false},
	} {
		if got := p.permitsDestination(tc.dest, tc.ns); got != tc.want {
			t.Errorf("%s %s: permitted %v, want %v", tc.dest.Name, tc.ns, got, tc.want)
		}
	}
}

func TestCheckObject(t *testing.T) {
	p := compile(t, navarchv1.ProjectSpec{
		Destinations:               []navarchv1.ProjectDestination{{Name: "*", Namespace: "*"}},
		ClusterResourceWhitelist:   []navarchv1.GroupKind{{Group: "", Kind: "Namespace"}, {Group: "rbac.authorization.k8s.io", Kind: "*"}},
		ClusterResourceBlacklist:   []navarchv1.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}},
		NamespaceResourceBlacklist: []navarchv1.GroupKind{{Group: "", Kind: "ResourceQuota"}},
	})
	for _, tc := range []struct {
		obj     Object
		dest    Destination
		appNS   string
		refused string
	}{
		{Object{Kind: "Namespace", Name: "web"}, east, "team-a", ""},
		{Object{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "r"}, east, "team-a", ""},
		{Object{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Name: "x"}, east, "team-a",
			"ClusterRoleBinding x: the Project team-a does not allow cluster-scoped ClusterRoleBinding.rbac.authorization.k8s.io"},
		{Object{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "c"}, east, "team-a", "cluster-scoped"},
		{Object{Kind: "ResourceQuota", Name: "q", Namespace: "web"}, east, "team-a", "ResourceQuota web/q: the Project team-a does not allow ResourceQuota"},
		{Object{Kind: "ConfigMap", Name: "c", Namespace: "web"}, east, "team-a", ""},
		{Object{Group: "navarch.io", Kind: "Application", Name: "a", Namespace: controlNS}, ManagementCluster, "team-a",
			"Application navarch-system/a: only Applications in namespace navarch-system may write into it on the management cluster"},
		{Object{Group: "navarch.io", Kind: "Application", Name: "a", Namespace: controlNS}, ManagementCluster, controlNS, ""},
		{Object{Kind: "Secret", Name: "s", Namespace: controlNS}, east, "team-a", ""}, // not the management cluster
		{Object{Kind: "Namespace", Name: controlNS}, ManagementCluster, "team-a",
			"Namespace navarch-system: only Applications in namespace navarch-system may write into it on the management cluster"},
	} {
		err := p.CheckObject(tc.appNS, tc.dest, tc.obj)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s %s: refused: %v", tc.obj.Kind, tc.obj.Name, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s %s: got %v, want %q", tc.obj.Kind, tc.obj.Name, err, tc.refused)
		}
	}
}

func TestNamespacedWhitelist(t *testing.T) {
	p := compile(t, navarchv1.ProjectSpec{
		Destinations:               []navarchv1.ProjectDestination{{Name: "*", Namespace: "*"}},
		NamespaceResourceWhitelist: []navarchv1.GroupKind{{Group: "apps", Kind: "Deployment"}},
	})
	if err := p.CheckObject("t", east, Object{Group: "apps", Kind: "Deployment", Name: "d", Namespace: "n"}); err != nil {
		t.Error(err)
	}
	if err := p.CheckObject("t", east, Object{Kind: "Secret", Name: "s", Namespace: "n"}); err == nil {
		t.Error("a Secret passed a whitelist of Deployments")
	}
}

func TestCompileNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		spec navarchv1.ProjectSpec
		want string
	}{
		{navarchv1.ProjectSpec{SourceRepos: []string{"ok", "[bad"}}, "spec.sourceRepos[1]"},
		{navarchv1.ProjectSpec{Destinations: []navarchv1.ProjectDestination{{Name: "a", Namespace: "[x"}}}, "spec.destinations[0].namespace"},
		{navarchv1.ProjectSpec{ClusterResourceWhitelist: []navarchv1.GroupKind{{Kind: "[x"}}}, "spec.clusterResourceWhitelist[0].kind"},
		{navarchv1.ProjectSpec{SyncWindows: []navarchv1.SyncWindow{{Kind: "deny", Schedule: "61 * * * *", Duration: "1h"}}}, "spec.syncWindows[0].schedule"},
		{navarchv1.ProjectSpec{SyncWindows: []navarchv1.SyncWindow{{Kind: "deny", Schedule: "0 * * * *", Duration: "-1h"}}}, "spec.syncWindows[0].duration"},
		{navarchv1.ProjectSpec{SyncWindows: []navarchv1.SyncWindow{{Kind: "deny", Schedule: "0 * * * *", Duration: "1h", TimeZone: "Mars/Olympus"}}}, "spec.syncWindows[0].timeZone"},
	} {
		_, err := Compile(&navarchv1.Project{Spec: tc.spec}, controlNS)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("got %v, want an error starting with %q", err, tc.want)
		}
	}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestGate(t *testing.T) {
	nightlyDeny := navarchv1.SyncWindow{Kind: "deny", Schedule: "0 22 * * *", Duration: "8h", Namespaces: []string{"prod-*"}}
	officeAllow := navarchv1.SyncWindow{Kind: "allow", Schedule: "0 9 * * 1-5", Duration: "8h", Applications: []string{"*"}}
	for _, tc := range []struct {
		name              string
		windows           []navarchv1.SyncWindow
		app, ns           string
		now               string
		automated, manual bool
		change            string
		reason            string
	}{
		{"no windows", nil, "web", "prod-a", "2026-12-01T23:00:00Z", true, true, "", ""},
		{"deny open", []navarchv1.SyncWindow{nightlyDeny}, "web", "prod-a", "2026-12-01T23:00:00Z", false, false,
			"2026-12-02T06:00:00Z", `the deny window "0 22 * * *" (8h; namespaces prod-*) of Project team-a is open until 2026-12-02T06:00:00Z`},
		{"deny open, exactly at its start", []navarchv1.SyncWindow{nightlyDeny}, "web", "prod-a", "2026-12-01T22:00:00Z", false, false, "2026-12-02T06:00:00Z", "open until"},
		{"deny closed at its end", []navarchv1.SyncWindow{nightlyDeny}, "web", "prod-a", "2026-12-02T06:00:00Z", true, true, "2026-12-02T22:00:00Z", ""},
		{"deny of another namespace", []navarchv1.SyncWindow{nightlyDeny}, "web", "dev", "2026-12-01T23:00:00Z", true, true, "", ""},
		{"deny with manualSync", []navarchv1.SyncWindow{withManual(nightlyDeny)}, "web", "prod-a", "2026-12-01T23:00:00Z", false, true, "2026-12-02T06:00:00Z", "open until"},
		{"allow open", []navarchv1.SyncWindow{officeAllow}, "web", "dev", "2026-12-01T10:00:00Z", true, true, "2026-12-01T17:00:00Z", ""},
		{"allow closed", []navarchv1.SyncWindow{officeAllow}, "web", "dev", "2026-12-05T10:00:00Z", false, false,
			"2026-12-07T09:00:00Z", "outside the allow windows of Project team-a"},
		{"allow closed, manualSync", []navarchv1.SyncWindow{withManual(officeAllow)}, "web", "dev", "2026-12-05T10:00:00Z", false, true, "2026-12-07T09:00:00Z", "the next opens at 2026-12-07T09:00:00Z"},
		{"deny wins over an open allow", []navarchv1.SyncWindow{officeAllow, {Kind: "deny", Schedule: "0 12 * * *", Duration: "1h", Applications: []string{"web"}}}, "web", "dev", "2026-12-01T12:30:00Z", false, false, "2026-12-01T13:00:00Z", "deny window"},
		{"overlapping openings extend the window", []navarchv1.SyncWindow{{Kind: "deny", Schedule: "*/10 9 * * *", Duration: "15m", Applications: []string{"web"}}}, "web", "dev", "2026-12-01T09:31:00Z", false, false, "2026-12-01T10:05:00Z", "deny"},
		{"time zone", []navarchv1.SyncWindow{{Kind: "deny", Schedule: "0 22 * * *", Duration: "1h", Clusters: []string{"east"}, TimeZone: "Europe/Berlin"}}, "web", "dev", "2026-12-01T21:30:00Z", false, false, "2026-12-01T22:00:00Z", "Europe/Berlin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compile(t, navarchv1.ProjectSpec{SyncWindows: tc.windows})
			g := p.Gate(tc.app, tc.ns, east, at(tc.now))
			if g.Automated != tc.automated || g.Manual != tc.manual {
				t.Errorf("automated %v manual %v, want %v %v (%s)", g.Automated, g.Manual, tc.automated, tc.manual, g.Reason)
			}
			var change time.Time
			if tc.change != "" {
				change = at(tc.change)
			}
			if !g.Change.Equal(change) {
				t.Errorf("change %v, want %v", g.Change, change)
			}
			if !strings.Contains(g.Reason, tc.reason) || (tc.reason == "") != (g.Reason == "") {
				t.Errorf("reason %q, want %q", g.Reason, tc.reason)
			}
		})
	}
}

func withManual(w navarchv1.SyncWindow) navarchv1.SyncWindow {
	w.ManualSync = true
	return w
}

// A Namespace object is the namespace it names: a Project that whitelists Namespace still
// allows only the namespaces of its destinations.
func TestNamespaceObjectsAreTheirNamespace(t *testing.T) {
	p := compile(t, navarchv1.ProjectSpec{
		Destinations:             []navarchv1.ProjectDestination{{Name: "east", Namespace: "team-a-*"}},
		ClusterResourceWhitelist: []navarchv1.GroupKind{{Group: "", Kind: "Namespace"}},
	})
	if err := p.CheckObject("team-a", east, Object{Kind: "Namespace", Name: "team-a-web"}); err != nil {
		t.Error(err)
	}
	err := p.CheckObject("team-a", east, Object{Kind: "Namespace", Name: "team-b-prod"})
	if err == nil || !strings.Contains(err.Error(), "Namespace team-b-prod: the Project team-a does not allow namespace team-b-prod on cluster east") {
		t.Errorf("got %v", err)
	}
}
