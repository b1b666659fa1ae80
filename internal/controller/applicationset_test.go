package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/testenv"
)

// The tests share one management cluster (workload mode, so the garbage collector deletes the
// Applications of a deleted ApplicationSet, as in production), one Git server and one
// controller started through Run, the code path of `navarch controller`. Each test works in
// its own namespace (testenv.Namespace).
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	env, err = testenv.Start(context.Background(), testenv.Options{Name: "controller", ManagementWorkloads: true, Git: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	controllerConfig := env.Management.RESTConfig()
	controllerConfig.Wrap(controllerWrites.wrap)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Config: controllerConfig, MetricsAddr: "0", ProbeAddr: "0", ErrorRequeue: time.Second,
			Logger: controllerLogs.Wrap(env.Logger),
			// These tests are about the ApplicationSet controller alone; the fleet tests
			// (fleet/) run all controllers.
			Controllers: []string{"applicationset"},
			// The pull_request webhooks of webhook_test.go come here.
			WebhookAddr: webhookAddr,
		})
	}()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		return 1
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// --- helpers -------------------------------------------------------------------------------

func createRepo(t *testing.T, name string, dirs ...string) string {
	t.Helper()
	src := t.TempDir()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, d, "kustomization.yaml"), []byte("resources: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Git.CreateRepo(name, src); err != nil {
		t.Fatalf("create repo: %v", err)
	}
	return env.Git.RepoURL(name)
}

func applyAppSet(t *testing.T, ns, y string) *navarchv1.ApplicationSet {
	t.Helper()
	set := &navarchv1.ApplicationSet{}
	if err := yaml.UnmarshalStrict([]byte(y), set); err != nil {
		t.Fatal(err)
	}
	set.Namespace = ns
	if err := env.Client.Create(context.Background(), set); err != nil {
		t.Fatalf("create ApplicationSet: %v", err)
	}
	return set
}

func listApps(t *testing.T, ns string) map[string]navarchv1.Application {
	t.Helper()
	var list navarchv1.ApplicationList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]navarchv1.Application{}
	for _, a := range list.Items {
		out[a.Name] = a
	}
	return out
}

func appNames(apps map[string]navarchv1.Application) string {
	var names []string
	for n, a := range apps {
		if a.DeletionTimestamp.IsZero() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func waitForApps(t *testing.T, ns, want string) map[string]navarchv1.Application {
	t.Helper()
	var apps map[string]navarchv1.Application
	testenv.Eventually(t, "Applications "+want, func() string {
		apps = listApps(t, ns)
		if got := appNames(apps); got != want {
			return fmt.Sprintf("Applications are %q", got)
		}
		return ""
	})
	return apps
}

func getAppSet(t *testing.T, ns, name string) *navarchv1.ApplicationSet {
	t.Helper()
	set := &navarchv1.ApplicationSet{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, set); err != nil {
		t.Fatal(err)
	}
	return set
}

func waitForCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	testenv.Eventually(t, fmt.Sprintf("condition %s=%s (%s)", typ, status, reason), func() string {
		set := getAppSet(t, ns, name)
		cond = meta.FindStatusCondition(set.Status.Conditions, typ)
		if cond == nil || cond.Status != status || (reason != "" && cond.Reason != reason) {
			return fmt.Sprintf("conditions are %+v", set.Status.Conditions)
		}
		return ""
	})
	return cond
}

// requestRefresh asks the controller for a pass now, as a user does after a push: the Git
// generators poll every requeueAfterSeconds.
func requestRefresh(t *testing.T, set *navarchv1.ApplicationSet) {
	t.Helper()
	testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[navarchv1.AnnotationRefresh] = time.Now().String()
	})
}

// refresh requests a pass and waits until it has begun: the controller removes the annotation
// first thing in a pass.
func refresh(t *testing.T, set *navarchv1.ApplicationSet) {
	t.Helper()
	requestRefresh(t, set)
	testenv.Eventually(t, set.Name+": the refresh is handled", func() string {
		if _, ok := getAppSet(t, set.Namespace, set.Name).Annotations[navarchv1.AnnotationRefresh]; ok {
			return "the refresh annotation is still there"
		}
		return ""
	})
}

// listAppSet is an ApplicationSet named "s" with one Application per element.
func listAppSet(elements ...string) string {
	var els []string
	for _, e := range elements {
		els = append(els, fmt.Sprintf("{name: %s}", e))
	}
	return fmt.Sprintf(`
metadata: {name: s}
spec:
  generators: [{list: {elements: [%s]}}]
  template:
    metadata: {name: '{{name}}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: 'apps/{{name}}'}
      destination: {name: in-cluster, namespace: '{{name}}'}
`, strings.Join(els, ", "))
}

// --- tests ---------------------------------------------------------------------------------

func TestApplicationsFollowTheGitRepository(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	repo := createRepo(t, ns, "apps/api", "apps/web")
	set := applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: all-apps}
spec:
  generators: [{git: {repoURL: %q, revision: main, directories: [{path: 'apps/*'}], requeueAfterSeconds: 300}}]
  template:
    metadata: {name: '{{path.basename}}', labels: {team: platform}}
    spec:
      source: {repoURL: %q, targetRevision: main, path: '{{path}}'}
      destination: {name: in-cluster, namespace: '{{path.basename}}'}
`, repo, repo))

	apps := waitForApps(t, ns, "api,web")
	web := apps["web"]
	if ref := metav1.GetControllerOf(&web); ref == nil || ref.UID != getAppSet(t, ns, "all-apps").UID {
		t.Errorf("web has no controller reference to its ApplicationSet: %+v", web.OwnerReferences)
	}
	if web.Labels[navarchv1.LabelApplicationSet] != "all-apps" || web.Labels["team"] != "platform" {
		t.Errorf("web labels: %v", web.Labels)
	}
	if !slices.Contains(web.Finalizers, navarchv1.FinalizerResources) {
		t.Errorf("web lacks the resources finalizer: %v", web.Finalizers)
	}
	if web.Spec.Source.Path != "apps/web" || web.Spec.Destination.Namespace != "web" {
		t.Errorf("web spec: %+v", web.Spec)
	}
	waitForCondition(t, ns, "all-apps", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")

	// A template change updates every Application.
	testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) { s.Spec.Template.Spec.Source.TargetRevision = "release-1" })
	testenv.Eventually(t, "Applications follow the new template", func() string {
		for name, a := range listApps(t, ns) {
			if a.Spec.Source.TargetRevision != "release-1" {
				return name + " still has targetRevision " + a.Spec.Source.TargetRevision
			}
		}
		return ""
	})

	// A directory removed from Git deletes its Application (after a refresh: the generator
	// polls every 300s).
	if _, err := env.Git.Update(ns, "drop web", func(dir string) error { return os.RemoveAll(filepath.Join(dir, "apps/web")) }); err != nil {
		t.Fatal(err)
	}
	requestRefresh(t, set)
	apps = waitForApps(t, ns, "api")
	if _, ok := getAppSet(t, ns, "all-apps").Annotations[navarchv1.AnnotationRefresh]; ok {
		t.Errorf("the refresh annotation was not cleared")
	}
	if a := apps["web"]; a.Name != "" && !slices.Contains(a.Finalizers, navarchv1.FinalizerResources) {
		t.Errorf("web is being deleted without its resources finalizer")
	}
}

func TestApplicationsSyncPolicies(t *testing.T) {
	tests := []struct {
		policy                 navarchv1.ApplicationsSyncPolicy
		wantUpdate, wantDelete bool
	}{
		{navarchv1.ApplicationsSyncCreateOnly, false, false},
		{navarchv1.ApplicationsSyncCreateUpdate, true, false},
		{navarchv1.ApplicationsSyncCreateDelete, false, true},
		{navarchv1.ApplicationsSyncSync, true, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			ns := testenv.Namespace(t, env.Client)
			set := applyAppSet(t, ns, listAppSet("a", "b"))
			testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
				s.Spec.SyncPolicy = &navarchv1.ApplicationSetSyncPolicy{ApplicationsSync: &tt.policy}
			})
			waitForApps(t, ns, "a,b")

			// Drop b, add c, and change the template.
			testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
				s.Spec.Generators[0].List.Elements = s.Spec.Generators[0].List.Elements[:1]
				s.Spec.Generators[0].List.Elements = append(s.Spec.Generators[0].List.Elements, jsonElement(t, "c"))
				s.Spec.Template.Spec.Source.Path = "v2/{{name}}"
			})
			want := "a,b,c"
			if tt.wantDelete {
				want = "a,c"
			}
			waitForApps(t, ns, want)
			waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")
			apps := listApps(t, ns)
			if got, want := apps["a"].Spec.Source.Path == "v2/a", tt.wantUpdate; got != want {
				t.Errorf("a updated = %v, want %v (path %s)", got, want, apps["a"].Spec.Source.Path)
			}
			if apps["c"].Spec.Source.Path != "v2/c" {
				t.Errorf("c was not created from the new template: %s", apps["c"].Spec.Source.Path)
			}
		})
	}
}

func jsonElement(t *testing.T, name string) apiextensionsv1.JSON {
	t.Helper()
	return apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"name":%q}`, name))}
}

func TestDeletingTheApplicationSet(t *testing.T) {
	for _, preserve := range []bool{true, false} {
		t.Run(fmt.Sprintf("preserve=%v", preserve), func(t *testing.T) {
			ns := testenv.Namespace(t, env.Client)
			set := applyAppSet(t, ns, listAppSet("a", "b"))
			testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
				s.Spec.SyncPolicy = &navarchv1.ApplicationSetSyncPolicy{PreserveResourcesOnDeletion: preserve}
			})
			waitForApps(t, ns, "a,b")
			testenv.Eventually(t, "the resources finalizer follows preserveResourcesOnDeletion", func() string {
				for name, a := range listApps(t, ns) {
					if got := slices.Contains(a.Finalizers, navarchv1.FinalizerResources); got == preserve {
						return fmt.Sprintf("%s: resources finalizer present = %v with preserveResourcesOnDeletion=%v", name, got, preserve)
					}
				}
				return ""
			})
			if err := env.Client.Delete(context.Background(), set); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, "the garbage collector deletes the Applications", func() string {
				apps := listApps(t, ns)
				for name, a := range apps {
					if preserve {
						return name + " still exists"
					}
					// Without preserve the Applications wait, being deleted, for the
					// Application controller (not running here) to delete their resources.
					if a.DeletionTimestamp.IsZero() || !slices.Contains(a.Finalizers, navarchv1.FinalizerResources) {
						return name + " is not being deleted behind its resources finalizer"
					}
				}
				if !preserve && len(apps) != 2 {
					return fmt.Sprintf("%d Applications left, want 2 being deleted", len(apps))
				}
				return ""
			})
		})
	}
}

func TestGitServerDownDeletesNothing(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	root := t.TempDir()
	srv, err := gitserver.Start(gitserver.Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	for _, d := range []string{"apps/a", "apps/b"} {
		_ = os.MkdirAll(filepath.Join(src, d), 0o755)
		_ = os.WriteFile(filepath.Join(src, d, "k.yaml"), []byte("{}\n"), 0o644)
	}
	if _, err := srv.CreateRepo("flaky", src); err != nil {
		t.Fatal(err)
	}
	repo, addr := srv.RepoURL("flaky"), strings.TrimPrefix(srv.URL(), "http://")
	set := applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: s}
spec:
  generators: [{git: {repoURL: %q, directories: [{path: 'apps/*'}]}}]
  template:
    metadata: {name: '{{path.basename}}'}
    spec:
      source: {repoURL: %q, path: '{{path}}'}
      destination: {name: in-cluster}
`, repo, repo))
	before := waitForApps(t, ns, "a,b")

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	requestRefresh(t, set)
	cond := waitForCondition(t, ns, "s", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionTrue, navarchv1.ReasonGeneratorError)
	if !strings.Contains(cond.Message, "spec.generators[0].git") {
		t.Errorf("the error does not name the generator: %s", cond.Message)
	}
	// Several failed passes (ErrorRequeue is 1s) leave the Applications as they were.
	testenv.Consistently(t, 3*time.Second, "the Applications are left alone while Git is down", func() string {
		after := listApps(t, ns)
		for name, a := range before {
			if b, ok := after[name]; !ok || !b.DeletionTimestamp.IsZero() || b.ResourceVersion != a.ResourceVersion {
				return fmt.Sprintf("Application %s was written or deleted", name)
			}
		}
		return ""
	})

	// The server comes back on the same address: the ApplicationSet recovers by itself.
	srv, err = gitserver.Start(gitserver.Options{Root: root, Addr: addr})
	if err != nil {
		t.Fatalf("restart git server on %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	waitForCondition(t, ns, "s", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionFalse, "")
	waitForApps(t, ns, "a,b")
}

func TestDuplicateNamesAreNotWritten(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	applyAppSet(t, ns, listAppSet("a", "dup", "dup", "b"))
	cond := waitForCondition(t, ns, "s", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionTrue, navarchv1.ReasonApplicationError)
	if !strings.Contains(cond.Message, `"dup" is generated by 2 parameter sets`) {
		t.Errorf("condition does not explain the duplicate: %s", cond.Message)
	}
	waitForApps(t, ns, "a,b")
	set := getAppSet(t, ns, "s")
	if len(set.Status.Applications) == 0 || set.Status.Applications[0].Name != "dup" || set.Status.Applications[0].Message == "" {
		t.Errorf("status.applications does not lead with the failing Application: %+v", set.Status.Applications)
	}
}

func TestDeletionBudget(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	names := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}
	set := applyAppSet(t, ns, listAppSet(names...))
	budget := intstr.FromString("20%")
	testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
		s.Spec.SyncPolicy = &navarchv1.ApplicationSetSyncPolicy{MaxDeletions: &budget}
	})
	waitForApps(t, ns, strings.Join(names, ","))

	// Removing 6 of 10 is over a 20% budget: nothing is deleted and the status says so.
	testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
		s.Spec.Generators[0].List.Elements = s.Spec.Generators[0].List.Elements[:4]
	})
	cond := waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionFalse, navarchv1.ReasonDeletionBudgetExceeded)
	if !strings.Contains(cond.Message, "would delete 6 Applications, over the budget of 2") {
		t.Errorf("condition message: %s", cond.Message)
	}
	testenv.Consistently(t, 2*time.Second, "nothing is deleted over the budget", func() string {
		if got := appNames(listApps(t, ns)); got != strings.Join(names, ",") {
			return fmt.Sprintf("the Applications are %q", got)
		}
		return ""
	})

	// Confirming exactly that deletion lets it through, once.
	testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[AnnotationConfirmDeletions] = "6"
	})
	waitForApps(t, ns, "a0,a1,a2,a3")
	waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")
	if _, ok := getAppSet(t, ns, "s").Annotations[AnnotationConfirmDeletions]; ok {
		t.Errorf("the confirmation annotation was not cleared")
	}
}

func TestClusterLabelChangesAddAndRemoveApplications(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	selector := "team-" + ns // isolates this test from Clusters other tests create
	applyAppSet(t, ns, fmt.Sprintf(`
metadata: {name: s}
spec:
  generators: [{clusters: {selector: {matchLabels: {env: prod, owner: %s}}}}]
  template:
    metadata: {name: 'web-{{name}}'}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: web}
      destination: {name: '{{name}}', namespace: web}
`, selector))
	mkCluster := func(name, stage string) *navarchv1.Cluster {
		c := &navarchv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"env": stage, "owner": selector}},
			Spec:       navarchv1.ClusterSpec{InCluster: true},
		}
		if err := env.Client.Create(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
		return c
	}
	c1 := mkCluster(ns+"-1", "prod")
	waitForApps(t, ns, "web-"+c1.Name)
	// A dev cluster gets no Application. The prod cluster registered after it shows that the
	// controller has seen both.
	c2 := mkCluster(ns+"-2", "dev")
	c3 := mkCluster(ns+"-3", "prod")
	waitForApps(t, ns, "web-"+c1.Name+",web-"+c3.Name)
	testenv.Consistently(t, 2*time.Second, "a dev cluster gets no Application", func() string {
		if got := appNames(listApps(t, ns)); got != "web-"+c1.Name+",web-"+c3.Name {
			return fmt.Sprintf("the Applications are %q", got)
		}
		return ""
	})
	testenv.Update(t, env.Client, c2, func(c *navarchv1.Cluster) { c.Labels["env"] = "prod" })
	waitForApps(t, ns, "web-"+c1.Name+",web-"+c2.Name+",web-"+c3.Name)
	testenv.Update(t, env.Client, c1, func(c *navarchv1.Cluster) { c.Labels["env"] = "dev" })
	waitForApps(t, ns, "web-"+c2.Name+",web-"+c3.Name)
}

func TestManualEditsAreRevertedUnlessIgnored(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	set := applyAppSet(t, ns, listAppSet("a", "b"))
	waitForApps(t, ns, "a,b")
	setRevision := func(name, rev string) {
		testenv.Update(t, env.Client, &navarchv1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
			func(a *navarchv1.Application) { a.Spec.Source.TargetRevision = rev })
	}
	setRevision("a", "hotfix")
	testenv.Eventually(t, "the hand edit of a is reverted", func() string {
		if rev := listApps(t, ns)["a"].Spec.Source.TargetRevision; rev != "" {
			return "targetRevision is " + rev
		}
		return ""
	})

	testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
		s.Spec.IgnoreApplicationDifferences = []navarchv1.ApplicationSetIgnoreDifferences{
			{Name: "b", JSONPointers: []string{"/spec/source/targetRevision"}},
		}
	})
	waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")
	setRevision("b", "hotfix")
	refresh(t, set)
	testenv.Consistently(t, 2*time.Second, "the ignored hand edit of b is kept", func() string {
		if rev := listApps(t, ns)["b"].Spec.Source.TargetRevision; rev != "hotfix" {
			return fmt.Sprintf("targetRevision was reverted to %q", rev)
		}
		return ""
	})
}

func TestAnUnchangedPassWritesNothing(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	set := applyAppSet(t, ns, listAppSet("a", "b", "c"))
	waitForApps(t, ns, "a,b,c")
	waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")

	// Watch every write in the namespace while a refresh forces a pass that changes nothing.
	w, err := env.Client.Watch(context.Background(), &navarchv1.ApplicationList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ws, err := env.Client.Watch(context.Background(), &navarchv1.ApplicationSetList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Stop()
	var appWrites, setWrites atomic.Int64
	go countWrites(w, &appWrites)
	go countWrites(ws, &setWrites)
	requestRefresh(t, set)
	// The test's own annotation and the controller clearing it; a status patch would be a third.
	testenv.Eventually(t, "the refresh is set and cleared", func() string {
		if n := setWrites.Load(); n < 2 {
			return fmt.Sprintf("the ApplicationSet was written %d times", n)
		}
		return ""
	})
	testenv.Consistently(t, 3*time.Second, "a pass that changes nothing writes nothing more", func() string {
		if n := appWrites.Load(); n != 0 {
			return fmt.Sprintf("the Applications were written %d times", n)
		}
		if n := setWrites.Load(); n != 2 {
			return fmt.Sprintf("the ApplicationSet was written %d times, want 2 (refresh set and cleared)", n)
		}
		return ""
	})
}

// countWrites counts the events of w other than the ADDED of the initial list, until w stops.
func countWrites(w watch.Interface, n *atomic.Int64) {
	for e := range w.ResultChan() {
		if e.Type != watch.Added {
			n.Add(1)
		}
	}
}

func TestADeletedApplicationIsRecreated(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	applyAppSet(t, ns, listAppSet("a", "b"))
	apps := waitForApps(t, ns, "a,b")
	a := apps["a"]
	// Without the fleet controller, the resources finalizer would hold the deletion: remove it,
	// after the deletion has started. Removed before, a pass in between would put it back (the
	// finalizer is the ApplicationSet's to manage); once the deletion has started, nobody can
	// add one.
	if err := env.Client.Delete(context.Background(), &a); err != nil {
		t.Fatal(err)
	}
	testenv.Update(t, env.Client, &a, func(app *navarchv1.Application) { app.Finalizers = nil })
	testenv.Eventually(t, "a is recreated with a new identity", func() string {
		got, ok := listApps(t, ns)["a"]
		if !ok || got.UID == a.UID {
			return "a has not been recreated"
		}
		return ""
	})
}

// A mistake in the name template must not delete anything. While any parameter set renders an
// invalid or shared name, the Applications that look gone may be the very ones whose names
// broke (issue 12: a constant name reported the duplicates, then deleted all three).
func TestANameTemplateMistakeDeletesNothing(t *testing.T) {
	tests := []struct {
		name    string
		mistake func(*navarchv1.ApplicationSet)
		// problem is a phrase of the condition message; during the Applications while the
		// mistake is in place.
		problem, during string
	}{
		{
			name:    "every parameter set renders the same name",
			mistake: func(s *navarchv1.ApplicationSet) { s.Spec.Template.Metadata.Name = "app" },
			problem: `"app" is generated by 3 parameter sets`,
			during:  "a,b,c",
		},
		{
			name: "names longer than 253 characters",
			mistake: func(s *navarchv1.ApplicationSet) {
				s.Spec.Template.Metadata.Name = "{{name}}-" + strings.Repeat("x", 252) // 254 characters
			},
			problem: "must be no more than 253 characters",
			during:  "a,b,c",
		},
		{
			// The valid new names are still created; the old ones stay.
			name: "a new name template and one duplicate parameter set",
			mistake: func(s *navarchv1.ApplicationSet) {
				s.Spec.Template.Metadata.Name = "{{name}}-v2"
				s.Spec.Generators[0].List.Elements = append(s.Spec.Generators[0].List.Elements, jsonElement(t, "a"))
			},
			problem: `"a-v2" is generated by 2 parameter sets`,
			during:  "a,b,b-v2,c,c-v2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := testenv.Namespace(t, env.Client)
			set := applyAppSet(t, ns, listAppSet("a", "b", "c"))
			waitForApps(t, ns, "a,b,c")
			waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")

			testenv.Update(t, env.Client, set, tt.mistake)
			cond := waitForCondition(t, ns, "s", navarchv1.ApplicationSetErrorOccurred, metav1.ConditionTrue, navarchv1.ReasonApplicationError)
			requestRefresh(t, set) // one more pass inside the window
			testenv.Consistently(t, 3*time.Second, "no Application is deleted while a name is broken", func() string {
				if got := appNames(listApps(t, ns)); got != tt.during {
					return fmt.Sprintf("Applications are %q, want %q", got, tt.during)
				}
				return ""
			})
			for _, phrase := range []string{tt.problem, "deletions are held back"} {
				if !strings.Contains(cond.Message, phrase) {
					t.Errorf("the condition does not say %q: %s", phrase, cond.Message)
				}
			}

			// Once every name is valid and unique, the deletions go ahead.
			testenv.Update(t, env.Client, set, func(s *navarchv1.ApplicationSet) {
				s.Spec.Template.Metadata.Name = "{{name}}-v2"
				s.Spec.Generators[0].List.Elements = s.Spec.Generators[0].List.Elements[:3]
			})
			waitForApps(t, ns, "a-v2,b-v2,c-v2")
			waitForCondition(t, ns, "s", navarchv1.ApplicationSetResourcesUpToDate, metav1.ConditionTrue, "")
		})
	}
}

func TestDeletionBudgetCountsAndPercentages(t *testing.T) {
	tests := []struct {
		maxDeletions *intstr.IntOrString
		want         int
		limited      bool
	}{
		{nil, 0, false},
		{new(intstr.FromInt32(0)), 0, true},
		{new(intstr.FromString("0")), 0, true},
		{new(intstr.FromInt32(3)), 3, true},
		{new(intstr.FromString("3")), 3, true},
		{new(intstr.FromString("25%")), 2, true},
		{new(intstr.FromString("0%")), 0, true},
	}
	for _, tt := range tests {
		set := &navarchv1.ApplicationSet{Spec: navarchv1.ApplicationSetSpec{
			SyncPolicy: &navarchv1.ApplicationSetSyncPolicy{MaxDeletions: tt.maxDeletions},
		}}
		got, limited := deletionBudget(set, 10)
		if got != tt.want || limited != tt.limited {
			t.Errorf("maxDeletions %v of 10 Applications: budget %d (limited %v), want %d (limited %v)",
				tt.maxDeletions, got, limited, tt.want, tt.limited)
		}
	}
}

// The "Applied ApplicationSet" log line is what an operator reads: it must count the writes
// that happened, and every Application that was not written as an error.
func TestTheAppliedLogLineCountsWhatHappened(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	applyAppSet(t, ns, `
metadata: {name: s}
spec:
  generators:
  - list:
      elements:
      - {name: good, team: web}
      - {name: rejected, team: 'not a label value!'}
      - {name: Not_A_Name, team: web}
  template:
    metadata: {name: '{{name}}', labels: {team: '{{team}}'}}
    spec:
      source: {repoURL: 'https://git.example/r.git', path: 'apps/{{name}}'}
      destination: {name: in-cluster, namespace: '{{name}}'}
`)
	counts := func(e testenv.LogEntry) string {
		return fmt.Sprintf("created=%v updated=%v deleted=%v errors=%v",
			e.Values["created"], e.Values["updated"], e.Values["deleted"], e.Values["errors"])
	}
	var lines []testenv.LogEntry
	testenv.Eventually(t, "two passes are logged (the first and its retry)", func() string {
		lines = controllerLogs.Lines("Applied ApplicationSet", "applicationSet", ns+"/s")
		if len(lines) < 2 {
			return fmt.Sprintf("%d Applied ApplicationSet lines", len(lines))
		}
		return ""
	})
	// The first pass creates good; the apiserver rejects rejected's label; Not_A_Name is not a
	// valid name.
	if got, want := counts(lines[0]), "created=1 updated=0 deleted=0 errors=2"; got != want {
		t.Errorf("the first pass logged %s, want %s", got, want)
	}
	created := 0
	for _, l := range lines {
		if n, ok := l.Values["created"].(int); ok {
			created += n
		}
	}
	if got := appNames(listApps(t, ns)); got != "good" || created != 1 {
		t.Errorf("the log counts %d creates over %d passes; the Applications are %q", created, len(lines), got)
	}
}
