package argocd

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// everyFieldAppProject sets every field of Argo CD's AppProject.
const everyFieldAppProject = `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata:
  name: payments
  namespace: argocd
  labels: {team: payments}
  annotations: {notifications.argoproj.io/subscribe.email: payments@example.com}
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  description: Payments services
  sourceRepos: ['https://github.com/org/payments*', '!https://github.com/org/payments-legacy.git']
  destinations:
  - {name: in-cluster, namespace: 'payments-*'}
  - {server: 'https://prod-eu.example.com:6443', namespace: payments}
  - {name: '*', server: '*', namespace: '!kube-system'}
  clusterResourceWhitelist: [{group: '', kind: Namespace}]
  clusterResourceBlacklist: [{group: rbac.authorization.k8s.io, kind: '*'}]
  namespaceResourceWhitelist: [{group: '*', kind: '*'}]
  namespaceResourceBlacklist: [{group: '', kind: ResourceQuota}]
  sourceNamespaces: [payments, 'payments-*']
  syncWindows:
  - kind: deny
    schedule: '0 22 * * 5'
    duration: 60h
    applications: ['*']
    namespaces: [payments]
    clusters: [prod-eu]
    manualSync: true
    timeZone: Europe/Berlin
    andOperator: false
    description: no deploys over the weekend
  roles:
  - name: deployer
    policies: ['p, proj:payments:deployer, applications, sync, payments/*, allow']
    groups: [payments-team]
  orphanedResources: {warn: true}
  signatureKeys: []
  destinationServiceAccounts: []
  permitOnlyProjectScopedClusters: false
`

func TestAppProjectBecomesAProject(t *testing.T) {
	proj, warnings, err := Project(decode(t, everyFieldAppProject), "navarch-system")
	if err != nil {
		t.Fatalf("does not convert: %v", err)
	}
	if proj.APIVersion != "navarch.io/v1alpha1" || proj.Kind != "Project" || proj.Name != "payments" || proj.Namespace != "navarch-system" {
		t.Errorf("converted %s %s %s/%s, want navarch.io/v1alpha1 Project navarch-system/payments", proj.APIVersion, proj.Kind, proj.Namespace, proj.Name)
	}
	if proj.Labels["team"] != "payments" || proj.Annotations["notifications.argoproj.io/subscribe.email"] == "" || len(proj.Finalizers) != 0 {
		t.Errorf("metadata labels %v annotations %v finalizers %v", proj.Labels, proj.Annotations, proj.Finalizers)
	}
	want := navarchv1.ProjectSpec{
		Description: "Payments services",
		SourceRepos: []string{"https://github.com/org/payments*", "!https://github.com/org/payments-legacy.git"},
		Destinations: []navarchv1.ProjectDestination{
			{Name: "in-cluster", Namespace: "payments-*"},
			{Server: "https://prod-eu.example.com:6443", Namespace: "payments"},
			{Name: "*", Server: "*", Namespace: "!kube-system"},
		},
		ClusterResourceWhitelist:   []navarchv1.GroupKind{{Group: "", Kind: "Namespace"}},
		ClusterResourceBlacklist:   []navarchv1.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "*"}},
		NamespaceResourceWhitelist: []navarchv1.GroupKind{{Group: "*", Kind: "*"}},
		NamespaceResourceBlacklist: []navarchv1.GroupKind{{Group: "", Kind: "ResourceQuota"}},
		SourceNamespaces:           []string{"payments", "payments-*"},
		SyncWindows: []navarchv1.SyncWindow{{
			Kind: navarchv1.SyncWindowDeny, Schedule: "0 22 * * 5", Duration: "60h",
			Applications: []string{"*"}, Namespaces: []string{"payments"}, Clusters: []string{"prod-eu"},
			ManualSync: true, TimeZone: "Europe/Berlin",
		}},
	}
	if !reflect.DeepEqual(proj.Spec, want) {
		t.Errorf("spec\n got %+v\nwant %+v", proj.Spec, want)
	}
	assertWarnings(t, warnings, []string{
		"metadata.finalizers", "metadata.namespace",
		"spec.roles", "spec.orphanedResources", "spec.signatureKeys", "spec.destinationServiceAccounts",
		"spec.permitOnlyProjectScopedClusters", "spec.syncWindows[0].andOperator", "spec.syncWindows[0].description",
	})
	for _, w := range warnings {
		if w.Field == "spec.roles" && !strings.Contains(w.Message, "Kubernetes RBAC") {
			t.Errorf("the roles warning does not say where access is granted instead: %s", w)
		}
	}
}

func TestAppProjectRefusesWhatWouldWidenIt(t *testing.T) {
	tests := []struct {
		name, spec string
		// errors maps each field refused to a substring of its message.
		errors map[string]string
	}{
		{
			name: "signature keys, impersonation, project-scoped clusters, AND-ed sync windows",
			spec: `
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  signatureKeys: [{keyID: 4AEE18F83AFDEB23}]
  destinationServiceAccounts: [{server: '*', namespace: '*', defaultServiceAccount: deployer}]
  permitOnlyProjectScopedClusters: true
  syncWindows: [{kind: allow, schedule: '0 8 * * *', duration: 8h, applications: [a], clusters: [prod], andOperator: true}]`,
			errors: map[string]string{
				"spec.signatureKeys":                   "does not verify commit signatures",
				"spec.destinationServiceAccounts":      "does not impersonate",
				"spec.permitOnlyProjectScopedClusters": "spec.destinations",
				"spec.syncWindows[0].andOperator":      "any of applications",
			},
		},
		{
			name: "a destination naming no cluster, a field navarch does not know",
			spec: `
  destinations: [{namespace: payments}, {name: prod, namespace: payments}]
  clusterResourceWhitelist: [{group: '', kind: Namespace, name: payments}]`,
			errors: map[string]string{
				"spec.destinations[0]":                  "one of name and server must be set",
				"spec.clusterResourceWhitelist[0].name": "unknown field",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Project(decode(t, "apiVersion: argoproj.io/v1alpha1\nkind: AppProject\nmetadata: {name: p}\nspec:"+tt.spec), "navarch-system")
			var errs ConvertErrors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want ConvertErrors naming %v", err, tt.errors)
			}
			for _, fe := range errs {
				want, ok := tt.errors[fe.Field]
				if !ok || !strings.Contains(fe.Message, want) {
					t.Errorf("unexpected error %v; want one per field of %v", fe, tt.errors)
				}
			}
			if len(errs) != len(tt.errors) {
				t.Errorf("got %d errors, want %d:\n%v", len(errs), len(tt.errors), err)
			}
		})
	}
}

// A Project is checked as the controller checks it, so what it would refuse is reported before
// anything is applied.
func TestProjectIsCheckedAsTheControllerChecksIt(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"an invalid schedule", `
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: p}
spec:
  sourceNamespaces: ['*']
  syncWindows: [{kind: deny, schedule: '0 25 * * *', duration: 1h, namespaces: ['*']}]`, "spec.syncWindows[0].schedule"},
		{"an unknown field in a navarch Project", `
apiVersion: navarch.io/v1alpha1
kind: Project
metadata: {name: p, namespace: navarch-system}
spec: {roles: [{name: admin}]}`, "spec.roles: unknown field"},
		{"Argo CD's kind with navarch's apiVersion", `
apiVersion: navarch.io/v1alpha1
kind: AppProject
metadata: {name: p}
spec: {}`, "apiVersion: want argoproj.io/v1alpha1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Project(decode(t, tc.doc), "navarch-system")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A navarch Project is checked and placed in the controller's namespace, without the warnings
// meant for Argo CD's AppProjects.
func TestNavarchProjectIsKept(t *testing.T) {
	proj, warnings, err := Project(decode(t, `
apiVersion: navarch.io/v1alpha1
kind: Project
metadata: {name: web}
spec:
  sourceRepos: ['*']
  destinations: [{name: '*', namespace: 'web-*'}]`), "navarch-system")
	if err != nil {
		t.Fatalf("does not convert: %v", err)
	}
	assertWarnings(t, warnings, nil)
	if proj.Namespace != "navarch-system" || proj.Spec.Destinations[0].Namespace != "web-*" {
		t.Errorf("got %s/%s %+v", proj.Namespace, proj.Name, proj.Spec)
	}
}
