package fleet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/controller"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/testenv"
)

// The tests share a management cluster (control plane only: it holds navarch's objects), two
// workload clusters registered as Clusters "east" and "west", a Git server (see
// internal/testenv) and one controller started through controller.Run, the code path of
// `navarch controller`. Each test works in its own namespaces.
var (
	env       *testenv.Env
	mgmt      client.WithWatch
	workloads map[string]*testenv.Workload
	git       *gitserver.Server
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	var err error
	env, err = testenv.Start(context.Background(), testenv.Options{Workloads: []string{"east", "west"}, Git: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	mgmt, workloads, git = env.Client, env.Workloads, env.Git

	// The controller's production timings: the Git poll (3 minutes), the cluster probes, the
	// selfHeal backoff and the error requeues are its defaults. A test that needs a new commit
	// seen asks for it with a refresh, as a user would; every other timed behaviour must run on
	// its own timer or watch, which a 3-minute poll cannot hide.
	controllerOptions = controller.Options{
		Config: env.Management.RESTConfig(), MetricsAddr: "0", ProbeAddr: "0", Logger: env.Logger,
	}
	startController()
	code := m.Run()
	if err := stopController(); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		return 1
	}
	return code
}

// The controller runs in the test process, through controller.Run; tests may restart it.
var (
	controllerOptions controller.Options
	controllerStop    context.CancelFunc
	controllerDone    chan error
)

func startController() {
	ctx, cancel := context.WithCancel(context.Background())
	controllerStop, controllerDone = cancel, make(chan error, 1)
	go func() { controllerDone <- controller.Run(ctx, controllerOptions) }()
}

func stopController() error {
	controllerStop()
	return <-controllerDone
}

// restartController stops the controller, as a crash or a rollout would, and starts a new
// one with empty caches.
func restartController(t *testing.T) {
	t.Helper()
	if err := stopController(); err != nil {
		t.Fatalf("stop the controller: %v", err)
	}
	startController()
}

// --- helpers -------------------------------------------------------------------------------

// repo creates a Git repository holding files (path → content) and returns its URL.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	src := t.TempDir()
	writeFiles(t, src, files)
	name := testenv.Name(t)
	if _, err := git.CreateRepo(name, src); err != nil {
		t.Fatalf("create repo: %v", err)
	}
	return git.RepoURL(name)
}

// push commits changes to the test's repository: a file with content "" is deleted.
func push(t *testing.T, message string, files map[string]string) string {
	t.Helper()
	commit, err := git.Update(testenv.Name(t), message, func(dir string) error {
		writeFiles(t, dir, files)
		return nil
	})
	if err != nil {
		t.Fatalf("push %q: %v", message, err)
	}
	return commit
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		writeFile(t, dir, path, content)
	}
}

// writeFile writes one file under dir; empty content deletes it.
func writeFile(t testing.TB, dir, path, content string) {
	t.Helper()
	full := filepath.Join(dir, path)
	if content == "" {
		if err := os.Remove(full); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// createApp creates an Application from YAML in namespace ns.
func createApp(t *testing.T, ns, y string) *navarchv1.Application {
	t.Helper()
	app := &navarchv1.Application{}
	if err := yaml.UnmarshalStrict([]byte(y), app); err != nil {
		t.Fatal(err)
	}
	app.Namespace = ns
	if err := mgmt.Create(context.Background(), app); err != nil {
		t.Fatalf("create Application: %v", err)
	}
	return app
}

func getApp(t *testing.T, app *navarchv1.Application) *navarchv1.Application {
	t.Helper()
	got := &navarchv1.Application{}
	if err := mgmt.Get(context.Background(), client.ObjectKeyFromObject(app), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// waitForApp waits until the Application's status satisfies cond.
func waitForApp(t *testing.T, app *navarchv1.Application, what string, cond func(*navarchv1.Application) bool) *navarchv1.Application {
	t.Helper()
	var got *navarchv1.Application
	testenv.Eventually(t, app.Name+" "+what, func() string {
		got = getApp(t, app)
		if cond(got) {
			return ""
		}
		return describe(got)
	})
	return got
}

func syncedAndHealthy(a *navarchv1.Application) bool {
	return a.Status.Sync.Status == navarchv1.SyncStatusSynced && a.Status.Health.Status == navarchv1.HealthHealthy &&
		(a.Status.OperationState == nil || a.Status.OperationState.Phase != navarchv1.OperationRunning)
}

// describe summarises an Application's status the way `kubectl get -o yaml` would show it.
func describe(a *navarchv1.Application) string {
	data, _ := yaml.Marshal(a.Status)
	return "status:\n" + string(data)
}

// requestRefresh asks the controller to look for a new commit now, as a user (or a Git
// webhook) does after a push: the Git poll runs every 3 minutes.
func requestRefresh(t *testing.T, app *navarchv1.Application) {
	t.Helper()
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) {
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		a.Annotations[navarchv1.AnnotationRefresh] = time.Now().Format(time.RFC3339Nano)
	})
}

// refresh requests a refresh and waits until the controller has handled it: it removes the
// annotation once it has compared the Application again.
func refresh(t *testing.T, app *navarchv1.Application) {
	t.Helper()
	requestRefresh(t, app)
	testenv.Eventually(t, app.Name+": the refresh is handled", func() string {
		if _, ok := getApp(t, app).Annotations[navarchv1.AnnotationRefresh]; ok {
			return "the controller has not compared the Application again yet"
		}
		return ""
	})
}

// requestSync asks for a manual sync through the Application's operation field.
func requestSync(t *testing.T, app *navarchv1.Application) {
	t.Helper()
	testenv.Update(t, mgmt, app, func(a *navarchv1.Application) {
		a.Operation = &navarchv1.Operation{Sync: &navarchv1.SyncOperation{}, InitiatedBy: navarchv1.OperationInitiator{Username: "test"}}
	})
}

func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
