package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/testenv"
)

// createProject creates the Project name in the controller's namespace from the YAML of its
// spec, and deletes it after the test.
func createProject(t *testing.T, name, spec string) {
	t.Helper()
	p := &navarchv1.Project{}
	if err := yaml.UnmarshalStrict([]byte("spec:\n"+spec), p); err != nil {
		t.Fatal(err)
	}
	p.Name, p.Namespace = name, testenv.SystemNamespace
	if err := mgmt.Create(context.Background(), p); err != nil {
		t.Fatalf("create Project: %v", err)
	}
	t.Cleanup(func() { _ = mgmt.Delete(context.Background(), p) })
}

// teamProject is a Project for the team of namespace ns: one repository, Applications only in
// ns, deploying only to namespaces ns-* on east, no cluster-scoped kinds.
func teamProject(t *testing.T, ns, url string) {
	createProject(t, ns, fmt.Sprintf(`
  sourceRepos: ['%s']
  destinations: [{name: east, namespace: '%s-*'}]
  sourceNamespaces: [%s]
`, url, ns, ns))
}

func condition(a *navarchv1.Application, typ string) *metav1.Condition {
	return meta.FindStatusCondition(a.Status.Conditions, typ)
}

func hasCondition(typ string, parts ...string) func(*navarchv1.Application) bool {
	return func(a *navarchv1.Application) bool {
		c := condition(a, typ)
		return c != nil && c.Status == "True" && containsAll(c.Message, parts...)
	}
}

func operationFailed(parts ...string) func(*navarchv1.Application) bool {
	return func(a *navarchv1.Application) bool {
		st := a.Status.OperationState
		return st != nil && st.Phase == navarchv1.OperationFailed && containsAll(st.Message, parts...)
	}
}

const clusterAdminBinding = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: %s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
`

// A team's Project confines its ApplicationSet: the Application it would generate into
// kube-system is refused with a condition while the others are written, and nothing is
// deleted while one is refused.
func TestAProjectRefusesAGeneratedApplicationAndKeepsTheOthers(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"web/cm.yaml": configMap("web", "hello")})
	teamProject(t, ns, url)
	set := &navarchv1.ApplicationSet{}
	if err := yaml.UnmarshalStrict(fmt.Appendf(nil, `
metadata: {name: team, namespace: %[1]s}
spec:
  goTemplate: true
  generators: [{list: {elements: [{name: web, namespace: %[1]s-web}, {name: api, namespace: %[1]s-api}]}}]
  template:
    metadata: {name: '{{.name}}'}
    spec:
      project: %[1]s
      source: {repoURL: %[2]s, targetRevision: main, path: web}
      destination: {name: east, namespace: '{{.namespace}}'}
      syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, ns, url), set); err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Create(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	web := &navarchv1.Application{}
	web.Namespace, web.Name = ns, "web"
	api := web.DeepCopy()
	api.Name = "api"
	for _, app := range []*navarchv1.Application{web, api} {
		testenv.Eventually(t, app.Name+" is generated", func() string {
			return errString(mgmt.Get(context.Background(), client.ObjectKeyFromObject(app), app))
		})
		waitForApp(t, app, "Synced and Healthy", syncedAndHealthy)
	}

	// api now targets kube-system: refused, and kept as it was; web proceeds.
	testenv.Update(t, mgmt, set, func(s *navarchv1.ApplicationSet) {
		s.Spec.Generators[0].List.Elements[1].Raw = []byte(`{"name":"api","namespace":"kube-system"}`)
		s.Spec.Template.Metadata.Labels = map[string]string{"team": ns}
	})
	testenv.Eventually(t, "the ApplicationSet reports the refusal", func() string {
		got := &navarchv1.ApplicationSet{}
		if err := mgmt.Get(context.Background(), client.ObjectKeyFromObject(set), got); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, navarchv1.ApplicationSetErrorOccurred)
		if c == nil || c.Status != "True" || !containsAll(c.Message, "api", "the Project "+ns+" does not allow namespace kube-system on cluster east") {
			return fmt.Sprintf("ErrorOccurred: %+v", c)
		}
		return ""
	})
	testenv.Eventually(t, "web is updated", func() string {
		if got := getApp(t, web); got.Labels["team"] != ns {
			return fmt.Sprintf("labels %v", got.Labels)
		}
		return ""
	})
	testenv.Consistently(t, 2*time.Second, "api is neither changed nor deleted", func() string {
		got := &navarchv1.Application{}
		if err := mgmt.Get(context.Background(), client.ObjectKeyFromObject(api), got); err != nil {
			return err.Error()
		}
		if got.Spec.Destination.Namespace != ns+"-api" || got.DeletionTimestamp != nil {
			return fmt.Sprintf("destination %s, deleted %v", got.Spec.Destination.Namespace, got.DeletionTimestamp)
		}
		return ""
	})
}

// An Application of a team cannot render a cluster-admin ClusterRoleBinding: its sync fails
// before anything is applied, naming the object and the Project. One aimed at a namespace
// its Project does not allow renders nothing, and syncs once moved to an allowed one.
func TestAProjectRefusesForbiddenObjectsAndDestinations(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	binding := ns + "-admin"
	url := repo(t, map[string]string{
		"web/cm.yaml":   configMap("web", "hello"),
		"rbac/cm.yaml":  configMap("rbac", "hello"),
		"rbac/crb.yaml": fmt.Sprintf(clusterAdminBinding, binding),
	})
	teamProject(t, ns, url)

	rbac := createApp(t, ns, fmt.Sprintf(`
metadata: {name: rbac}
spec:
  project: %[1]s
  source: {repoURL: %[2]s, targetRevision: main, path: rbac}
  destination: {name: east, namespace: %[1]s-rbac}
  syncPolicy: {syncOptions: [CreateNamespace=true]}
`, ns, url))
	// The controller has seen the Project (its cache may lag the create) before the request.
	waitForApp(t, rbac, "OutOfSync under its Project", func(a *navarchv1.Application) bool {
		return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync && condition(a, navarchv1.ApplicationInvalidSpecError) == nil
	})
	requestSync(t, rbac)
	waitForApp(t, rbac, "sync Failed before anything is applied", operationFailed(
		"nothing was applied: ClusterRoleBinding "+binding+": the Project "+ns+" does not allow cluster-scoped ClusterRoleBinding"))
	east := workloads["east"].Client
	if err := east.Get(ctx, client.ObjectKey{Name: binding}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRoleBinding exists on east (err %v)", err)
	}
	if err := east.Get(ctx, client.ObjectKey{Name: ns + "-rbac"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace was created although the sync was refused (err %v)", err)
	}

	system := createApp(t, ns, fmt.Sprintf(`
metadata: {name: system}
spec:
  project: %[1]s
  source: {repoURL: %[2]s, targetRevision: main, path: web}
  destination: {name: east, namespace: kube-system}
  syncPolicy: {automated: {prune: true}}
`, ns, url))
	got := waitForApp(t, system, "refused by its Project", hasCondition(navarchv1.ApplicationInvalidSpecError,
		"spec.destination: the Project "+ns+" does not allow namespace kube-system on cluster east"))
	if c := condition(got, navarchv1.ConditionReady); c == nil || c.Reason != navarchv1.ReasonNotPermitted || c.Status != "False" {
		t.Errorf("Ready: %+v", c)
	}
	if len(got.Status.Resources) > 0 || got.Status.OperationState != nil {
		t.Errorf("a refused Application rendered or synced: %s", describe(got))
	}
	testenv.Update(t, mgmt, system, func(a *navarchv1.Application) {
		a.Spec.Destination.Namespace = ns + "-moved"
		a.Spec.SyncPolicy.SyncOptions = []navarchv1.SyncOption{"CreateNamespace=true"}
	})
	got = waitForApp(t, system, "Synced and Healthy once moved", syncedAndHealthy)
	if condition(got, navarchv1.ApplicationInvalidSpecError) != nil {
		t.Errorf("InvalidSpecError stayed: %s", describe(got))
	}

	unknown := createApp(t, ns, fmt.Sprintf(`
metadata: {name: unknown}
spec:
  project: no-such-project
  source: {repoURL: %s, targetRevision: main, path: web}
  destination: {name: east, namespace: %s-web}
`, url, ns))
	waitForApp(t, unknown, "ProjectNotFound", hasCondition(navarchv1.ApplicationInvalidSpecError,
		`spec.project: Project "no-such-project" does not exist in namespace navarch-system`))
}

// App-of-apps cannot reach into another team: team-a's Application renders an Application
// named like team-b's in team-b's namespace, and one in the controller's namespace; its sync
// fails before applying either, and team-b's Application is untouched. An object that
// team-b's Application tracks is not taken over by team-a even where team-a's Project allows
// the namespace, and both Applications say so.
func TestAppOfAppsCannotReachIntoAnotherTeam(t *testing.T) {
	ctx := context.Background()
	teamA := testenv.Namespace(t, mgmt)
	teamB := teamA + "-b"
	if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamB}}); err != nil {
		t.Fatal(err)
	}
	// One repository holds both teams' sources, which both Projects allow.
	planted := func(ns, name string) string {
		return fmt.Sprintf(`apiVersion: navarch.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: %s}
spec:
  source: {repoURL: https://git.example.com/evil.git, targetRevision: main, path: evil}
  destination: {name: east, namespace: kube-system}
  syncPolicy: {automated: {prune: true}}
`, name, ns)
	}
	url := repo(t, map[string]string{
		"web/cm.yaml":      configMap("shared", "team-b"),
		"apps/b.yaml":      planted(teamB, "web"),
		"apps/system.yaml": planted(testenv.SystemNamespace, teamA+"-admin"),
		"takeover/cm.yaml": configMap("shared", "team-a"),
	})
	createProject(t, teamB, fmt.Sprintf(`
  sourceRepos: ['%s']
  destinations: [{name: east, namespace: '%s-*'}]
  sourceNamespaces: [%s]
`, url, teamB, teamB))
	b := createApp(t, teamB, fmt.Sprintf(`
metadata: {name: web}
spec:
  project: %[1]s
  source: {repoURL: %[2]s, targetRevision: main, path: web}
  destination: {name: east, namespace: %[1]s-web}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, teamB, url))
	waitForApp(t, b, "Synced and Healthy", syncedAndHealthy)

	// team-a may deploy anywhere on east and into its own namespace of the management cluster.
	createProject(t, teamA, fmt.Sprintf(`
  sourceRepos: ['%s']
  destinations: [{name: east, namespace: '*'}, {name: in-cluster, namespace: %s}]
  sourceNamespaces: [%s]
`, url, teamA, teamA))
	apps := createApp(t, teamA, fmt.Sprintf(`
metadata: {name: apps}
spec:
  project: %[1]s
  source: {repoURL: %[2]s, targetRevision: main, path: apps}
  destination: {name: in-cluster, namespace: %[1]s}
  syncPolicy: {automated: {prune: true}}
`, teamA, url))
	waitForApp(t, apps, "sync Failed before anything is applied", operationFailed("nothing was applied:",
		"Application "+teamB+"/web: the Project "+teamA+" does not allow namespace "+teamB+" on cluster in-cluster",
		"Application navarch-system/"+teamA+"-admin: only Applications in namespace navarch-system may write into it on the management cluster"))
	if got := getApp(t, b); got.Spec.Source.Path != "web" || got.Annotations[navarchv1.AnnotationTrackingID] != "" {
		t.Errorf("team-b's Application was changed: path %s, annotations %v", got.Spec.Source.Path, got.Annotations)
	}
	err := mgmt.Get(ctx, client.ObjectKey{Namespace: testenv.SystemNamespace, Name: teamA + "-admin"}, &navarchv1.Application{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("an Application was planted in the controller's namespace (err %v)", err)
	}

	takeover := createApp(t, teamA, fmt.Sprintf(`
metadata: {name: takeover}
spec:
  project: %[1]s
  source: {repoURL: %[2]s, targetRevision: main, path: takeover}
  destination: {name: east, namespace: %[3]s-web}
`, teamA, url, teamB))
	waitForApp(t, takeover, "SharedResourceWarning", hasCondition(navarchv1.ApplicationSharedResourceWarning,
		"ConfigMap "+teamB+"-web/shared is tracked by Application "+teamB+"/web of Project "+teamB))
	requestSync(t, takeover)
	waitForApp(t, takeover, "sync Failed", operationFailed("nothing was applied: ConfigMap "+teamB+"-web/shared is tracked by Application "+teamB+"/web"))
	waitForApp(t, b, "told of the refused takeover", hasCondition(navarchv1.ApplicationSharedResourceWarning,
		"Application "+teamA+"/takeover also renders ConfigMap "+teamB+"-web/shared"))
	cm := &corev1.ConfigMap{}
	if err := workloads["east"].Client.Get(ctx, client.ObjectKey{Namespace: teamB + "-web", Name: "shared"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["greeting"] != "team-b" || !strings.HasPrefix(cm.Annotations[navarchv1.AnnotationTrackingID], teamB+"_web:") {
		t.Errorf("team-b's ConfigMap was taken over: data %v, tracking id %q", cm.Data, cm.Annotations[navarchv1.AnnotationTrackingID])
	}

	// Once team-a's Application is gone, team-b's warning goes too.
	if err := mgmt.Delete(ctx, takeover); err != nil {
		t.Fatal(err)
	}
	waitForApp(t, b, "no warning left", func(a *navarchv1.Application) bool {
		return condition(a, navarchv1.ApplicationSharedResourceWarning) == nil
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Sync windows, at the controller's production timings: while a deny window is open,
// automated syncs and the syncs a rollout asks for wait, and the status names the window and
// when it closes; a manual sync is refused unless the window has manualSync. When the window
// closes the waiting syncs run at once, on the window's own timer, not at the 3-minute Git
// poll.
func TestSyncWindowsHoldSyncsUntilTheyClose(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	url := repo(t, map[string]string{"web/cm.yaml": configMap("web", "hello")})
	// "short" opened at the start of this minute and closes 30 s from now; "long" stays open
	// for the test but lets manual syncs through.
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	closes := now.Add(30 * time.Second).Truncate(time.Second)
	createProject(t, ns, fmt.Sprintf(`
  sourceRepos: ['*']
  destinations: [{name: east, namespace: '%[1]s-*'}]
  sourceNamespaces: [%[1]s]
  syncWindows:
  - {kind: deny, schedule: '%[2]d %[3]d * * *', duration: %[4]s, applications: [web, rollout]}
  - {kind: deny, schedule: '%[2]d %[3]d * * *', duration: 1h, applications: [manual], manualSync: true}
`, ns, start.Minute(), start.Hour(), closes.Sub(start)))
	app := func(name string) *navarchv1.Application {
		return createApp(t, ns, fmt.Sprintf(`
metadata: {name: %[1]s}
spec:
  project: %[2]s
  source: {repoURL: %[3]s, targetRevision: main, path: web}
  destination: {name: east, namespace: %[2]s-%[1]s}
  syncPolicy: {automated: {prune: true}, syncOptions: [CreateNamespace=true]}
`, name, ns, url))
	}
	web, manual, rollout := app("web"), app("manual"), app("rollout")
	until := "is open until " + closes.Format(time.RFC3339)
	waitForApp(t, web, "automated sync blocked", hasCondition(navarchv1.ApplicationSyncBlocked, `deny window "`, until))
	waitForApp(t, manual, "automated sync blocked", hasCondition(navarchv1.ApplicationSyncBlocked, "deny window"))

	requestSync(t, web)
	waitForApp(t, web, "manual sync refused", operationFailed("sync refused: the deny window", "manual syncs need manualSync on the windows that stop them"))
	waitForApp(t, rollout, "automated sync blocked", hasCondition(navarchv1.ApplicationSyncBlocked, until))
	testenv.Update(t, mgmt, rollout, func(a *navarchv1.Application) {
		a.Operation = &navarchv1.Operation{Sync: &navarchv1.SyncOperation{}, InitiatedBy: navarchv1.OperationInitiator{Username: "applicationset/" + ns, Automated: true}}
	})
	testenv.Consistently(t, 2*time.Second, "the rollout's request waits, kept", func() string {
		got := getApp(t, rollout)
		if got.Operation == nil || got.Status.OperationState != nil {
			return fmt.Sprintf("operation %v, state %v", got.Operation, got.Status.OperationState)
		}
		return ""
	})
	if time.Now().After(closes) {
		t.Fatalf("the machine is too slow for this test: the window closed before its checks ran")
	}
	// "long" stays open: its manual sync may come after "short" closed.
	requestSync(t, manual)
	waitForApp(t, manual, "manual sync allowed by manualSync", syncedAndHealthy)

	for _, a := range []*navarchv1.Application{web, rollout} {
		got := waitForApp(t, a, "synced once the window closed", syncedAndHealthy)
		if st := got.Status.OperationState; st.StartedAt.Time.Before(closes) {
			t.Errorf("%s synced at %s, before the window closed at %s", a.Name, st.StartedAt.Time, closes)
		}
		if c := condition(got, navarchv1.ApplicationSyncBlocked); c != nil {
			t.Errorf("%s: SyncBlocked stayed: %s", a.Name, c.Message)
		}
	}
	if got := getApp(t, rollout); got.Operation != nil {
		t.Errorf("the rollout's request was not taken: %+v", got.Operation)
	}
}

// A remote kustomize base counts as a repository the Application renders: from a repository
// outside the Project's sourceRepos it is refused, and a rendering another Application made
// of the same source is not handed to it from the cache.
func TestAProjectRefusesARemoteBaseFromAnotherRepository(t *testing.T) {
	ns := testenv.Namespace(t, mgmt)
	baseURL := repo(t, map[string]string{
		"web/kustomization.yaml": "resources: [cm.yaml]\n",
		"web/cm.yaml":            configMap("web", "from the base"),
	})
	overlay := t.TempDir()
	writeFiles(t, overlay, map[string]string{"prod/kustomization.yaml": fmt.Sprintf("resources:\n- %s//web?ref=main\n", baseURL)})
	overlayName := testenv.Name(t) + "-overlay"
	if _, err := git.CreateRepo(overlayName, overlay); err != nil {
		t.Fatal(err)
	}
	overlayURL := git.RepoURL(overlayName)
	spec := func(name, project string) string {
		return fmt.Sprintf(`
metadata: {name: %s}
spec:
  project: %s
  source: {repoURL: '%s', targetRevision: main, path: prod}
  destination: {name: east, namespace: %s-%s}
`, name, project, overlayURL, ns, name)
	}
	// The default Project's Application renders it first, filling the cache.
	open := createApp(t, ns, spec("open", "default"))
	waitForApp(t, open, "OutOfSync with the base's ConfigMap", func(a *navarchv1.Application) bool {
		return a.Status.Sync.Status == navarchv1.SyncStatusOutOfSync && len(a.Status.Resources) == 1
	})
	teamProject(t, ns, overlayURL)
	closed := createApp(t, ns, spec("closed", ns))
	waitForApp(t, closed, "ComparisonError naming the base", hasCondition(navarchv1.ApplicationComparisonError,
		"the Project "+ns+" does not allow the repository "+baseURL, "(reached while rendering)"))
}

// BeforeHookCreation deletes only an earlier instance of the Application's own hook: an
// object of the same name that is not one fails the hook and stays.
func TestBeforeHookCreationDeletesOnlyItsOwnInstances(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, mgmt)
	target := ns + "-app"
	east := workloads["east"].Client
	if err := east.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}}); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "migrate"}, Data: map[string]string{"owner": "someone else"}}
	if err := east.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	url := repo(t, map[string]string{
		"app/cm.yaml": configMap("web", "hello"),
		"app/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: migrate
  annotations: {navarch.io/hook: PreSync, navarch.io/hook-delete-policy: BeforeHookCreation}
data: {owner: hook}
`,
	})
	app := createApp(t, ns, fmt.Sprintf(`
metadata: {name: hooked}
spec:
  source: {repoURL: %s, targetRevision: main, path: app}
  destination: {name: east, namespace: %s}
`, url, target))
	requestSync(t, app)
	waitForApp(t, app, "the hook failed", operationFailed("ConfigMap migrate exists and is not an earlier instance of this Application's hook"))
	got := &corev1.ConfigMap{}
	if err := east.Get(ctx, client.ObjectKeyFromObject(theirs), got); err != nil {
		t.Fatal(err)
	}
	if got.UID != theirs.UID || got.Data["owner"] != "someone else" {
		t.Errorf("the other ConfigMap was replaced: uid %s (was %s), data %v", got.UID, theirs.UID, got.Data)
	}
}
