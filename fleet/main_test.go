package fleet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/controller"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/localcluster"
	"github.com/navarch-io/navarch/internal/scheme"
)

// The tests share a management cluster (control plane only: it holds navarch's objects), two
// workload clusters registered as Clusters "east" and "west", a Git server and one controller
// started through controller.Run, the code path of `navarch controller`. Each test works in
// its own namespaces.
var (
	mgmt      client.WithWatch
	workloads = map[string]*workloadCluster{}
	git       *gitserver.Server
	systemNS  = "navarch-system"
)

// workloadCluster is a destination cluster and a client for it.
type workloadCluster struct {
	*localcluster.Cluster
	client client.Client
}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := localcluster.StopOnSignal()
	defer release()

	clusters, err := localcluster.StartMany(ctx, []localcluster.Options{
		{Name: "management", CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}},
		{Name: "east", Workloads: true},
		{Name: "west", Workloads: true},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start clusters:", err)
		return 1
	}
	for _, c := range clusters {
		defer func() { _ = c.Stop() }()
	}
	if mgmt, err = client.NewWithWatch(clusters[0].RESTConfig(), client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := mgmt.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, c := range clusters[1:] {
		wc := &workloadCluster{Cluster: c}
		if wc.client, err = client.New(c.RESTConfig(), client.Options{Scheme: scheme.New()}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := register(ctx, c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		workloads[c.Name] = wc
	}

	gitRoot, err := os.MkdirTemp("", "navarch-fleet-git")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(gitRoot)
	if git, err = gitserver.Start(gitserver.Options{Root: gitRoot}); err != nil {
		fmt.Fprintln(os.Stderr, "start git server:", err)
		return 1
	}
	defer func() { _ = git.Close() }()

	// Errors only: the tests provoke failures on purpose (outages, bad manifests).
	logger := zap.New(zap.Level(zapcore.ErrorLevel), zap.WriteTo(os.Stderr))
	ctrl.SetLogger(logger)
	// The controller's production timings: the Git poll (3 minutes), the cluster probes, the
	// selfHeal backoff and the error requeues are its defaults. A test that needs a new commit
	// seen asks for it with a refresh, as a user would; every other timed behaviour must run on
	// its own timer or watch, which a 3-minute poll cannot hide.
	controllerOptions = controller.Options{
		Config: clusters[0].RESTConfig(), MetricsAddr: "0", ProbeAddr: "0", Logger: logger,
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

// register adds a workload cluster to the management cluster as a kubeconfig Secret and a
// Cluster, as `navarch cluster add` does.
func register(ctx context.Context, c *localcluster.Cluster) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name + "-kubeconfig", Namespace: systemNS},
		Data:       map[string][]byte{"value": c.Kubeconfig()},
	}
	if err := mgmt.Create(ctx, secret); err != nil {
		return err
	}
	return mgmt.Create(ctx, &navarchv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: map[string]string{"region": c.Name}},
		Spec: navarchv1.ClusterSpec{
			Server:              c.Server(),
			KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: systemNS, Name: secret.Name, Key: "value"},
		},
	})
}

// --- helpers -------------------------------------------------------------------------------

// testName is a DNS-safe name derived from the test's name.
func testName(t *testing.T) string {
	name := regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-")
	name = strings.TrimPrefix(name, "test")
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-")
}

// appNamespace creates the namespace of the test's Applications in the management cluster.
func appNamespace(t *testing.T) string {
	t.Helper()
	ns := testName(t)
	if err := mgmt.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns
}

// repo creates a Git repository holding files (path → content) and returns its URL.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	src := t.TempDir()
	writeFiles(t, src, files)
	name := testName(t)
	if _, err := git.CreateRepo(name, src); err != nil {
		t.Fatalf("create repo: %v", err)
	}
	return git.RepoURL(name)
}

// push commits changes to the test's repository: a file with content "" is deleted.
func push(t *testing.T, message string, files map[string]string) string {
	t.Helper()
	commit, err := git.Update(testName(t), message, func(dir string) error {
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

// eventually polls cond until it returns "" or 60 s pass; then it fails with the last message,
// which says what a user would have seen. 60 s is far below the Git poll interval (3 minutes),
// so nothing a test waits for can have been brought about by the poll.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	eventuallyWithin(t, 60*time.Second, what, cond)
}

// eventuallyWithin is eventually with another deadline, for waits on a cluster probe (every
// 30 s by default).
func eventuallyWithin(t *testing.T, within time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: still not true after %s: %s", what, within, last)
}

// consistently checks that cond keeps returning "" for the whole window: the way to assert
// that nothing happens. It fails with cond's message as soon as it does not.
func consistently(t *testing.T, window time.Duration, what string, cond func() string) {
	t.Helper()
	for deadline := time.Now().Add(window); ; {
		if msg := cond(); msg != "" {
			t.Fatalf("%s: no longer true: %s", what, msg)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForApp waits until the Application's status satisfies cond.
func waitForApp(t *testing.T, app *navarchv1.Application, what string, cond func(*navarchv1.Application) bool) *navarchv1.Application {
	t.Helper()
	var got *navarchv1.Application
	eventually(t, app.Name+" "+what, func() string {
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

// update edits an object with retries on conflicts.
func update[T client.Object](t *testing.T, c client.Client, obj T, edit func(T)) {
	t.Helper()
	for range 10 {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		edit(obj)
		err := c.Update(context.Background(), obj)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	t.Fatal("update: too many conflicts")
}

// requestRefresh asks the controller to look for a new commit now, as a user (or a Git
// webhook) does after a push: the Git poll runs every 3 minutes.
func requestRefresh(t *testing.T, app *navarchv1.Application) {
	t.Helper()
	update(t, mgmt, app, func(a *navarchv1.Application) {
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
	eventually(t, app.Name+": the refresh is handled", func() string {
		if _, ok := getApp(t, app).Annotations[navarchv1.AnnotationRefresh]; ok {
			return "the controller has not compared the Application again yet"
		}
		return ""
	})
}

// requestSync asks for a manual sync through the Application's operation field.
func requestSync(t *testing.T, app *navarchv1.Application) {
	t.Helper()
	update(t, mgmt, app, func(a *navarchv1.Application) {
		a.Operation = &navarchv1.Operation{Sync: &navarchv1.SyncOperation{}, InitiatedBy: navarchv1.OperationInitiator{Username: "test"}}
	})
}

func objectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
