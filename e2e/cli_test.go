package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/localcluster"
)

// The CLI tests run the navarch binary against one real control plane with navarch's CRDs.
// No controller runs: each test plays the controller's part by writing status the way the
// controller does, and checks what the user sees and what the CLI wrote.

const (
	cliCommit    = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
	cliOldCommit = "0f0e0d0c0b0a09080706050403020100ffeeddcc"
	cliRepo      = "https://github.com/org/deploy.git"
)

// cliEnv is the management cluster the CLI tests share.
type cliEnv struct {
	cluster    *localcluster.Cluster
	c          client.Client
	kubeconfig string
	// user is the kubeconfig user, which the CLI records as the initiator of operations.
	user string
}

func TestCLI(t *testing.T) {
	cluster := localcluster.StartForTest(t, localcluster.Options{Name: "cli", CRDDirectoryPaths: []string{"../config/crd/bases"}})
	env := &cliEnv{cluster: cluster, c: cliClientFor(t, cluster.KubeconfigPath()), kubeconfig: cluster.KubeconfigPath(), user: "cli-admin"}
	env.createNamespace(t, "navarch-system")
	for _, cl := range []struct{ name, env string }{{"prod-eu", "prod"}, {"prod-us", "prod"}, {"dev-1", "dev"}} {
		obj := &navarchv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: cl.name, Labels: map[string]string{"env": cl.env}},
			Spec: navarchv1.ClusterSpec{Server: "https://" + cl.name + ".example.com",
				KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: "navarch-system", Name: cl.name + "-kubeconfig"}},
		}
		if err := env.c.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("AppListGetHistoryAndDiffShowWhatTheControllerFound", env.testInspect)
	t.Run("SyncAsksTheControllerAndWaitFollowsTheOperationToItsEnd", env.testSync)
	t.Run("RollbackAndTerminateOp", env.testRollbackAndTerminate)
	t.Run("DiffRefreshWaitsForTheControllerToCompareAgain", env.testDiffRefresh)
	t.Run("ClusterAddRegistersAContextOfAnotherKubeconfig", env.testClusterAdd)
	t.Run("StatusPrintsTheFleetMatrix", env.testStatus)
	t.Run("AppSetListGetAndGenerateFromTheLiveObject", env.testAppSet)
	t.Run("ImportedArgoCDObjectsAreAcceptedByTheAPIServer", env.testImport)
	t.Run("UsageErrorsExit2AndMissingObjectsAreNamed", env.testErrors)
}

// cliResult is what one run of the binary printed and how it exited.
type cliResult struct {
	stdout, stderr string
	code           int
}

// run runs navarch against the management cluster (--kubeconfig is appended) without
// $KUBECONFIG, so the machine's own kubeconfig never plays a part.
func (e *cliEnv) run(t *testing.T, args ...string) cliResult {
	t.Helper()
	return runCLI(t, append(args, "--kubeconfig", e.kubeconfig)...)
}

// runCLI runs navarch with exactly args.
func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(navarchBinary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = cliEnviron()
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("navarch %s: %v", strings.Join(args, " "), err)
	}
	return cliResult{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func cliEnviron() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "NO_COLOR=")
	})
}

// mustRun runs navarch and fails the test unless it exits 0.
func (e *cliEnv) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	r := e.run(t, args...)
	if r.code != 0 {
		t.Fatalf("navarch %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// expectExit runs navarch and checks its exit code and that stderr contains want.
func (e *cliEnv) expectExit(t *testing.T, code int, want string, args ...string) cliResult {
	t.Helper()
	r := e.run(t, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Errorf("navarch %s: exit %d, want %d with %q on stderr\nstdout:\n%s\nstderr:\n%s",
			strings.Join(args, " "), r.code, code, want, r.stdout, r.stderr)
	}
	return r
}

// cliProcess is a navarch process the test interacts with while it runs: it reads one of its
// streams (stderr for progress, stdout for a watch) line by line as it comes and buffers the
// other.
type cliProcess struct {
	cmd      *exec.Cmd
	stream   string // the stream followed: "stdout" or "stderr"
	other    bytes.Buffer
	lines    chan string
	mu       sync.Mutex
	followed []string
	done     chan struct{}
}

// start starts navarch and follows its stderr.
func (e *cliEnv) start(t *testing.T, args ...string) *cliProcess {
	t.Helper()
	return e.startFollowing(t, "stderr", args...)
}

// startFollowing starts navarch and follows stream ("stdout" or "stderr").
func (e *cliEnv) startFollowing(t *testing.T, stream string, args ...string) *cliProcess {
	t.Helper()
	b := &cliProcess{stream: stream, lines: make(chan string, 1000), done: make(chan struct{})}
	b.cmd = exec.Command(navarchBinary, append(args, "--kubeconfig", e.kubeconfig)...)
	b.cmd.Env = cliEnviron()
	var pipe io.ReadCloser
	var err error
	if stream == "stdout" {
		b.cmd.Stderr = &b.other
		pipe, err = b.cmd.StdoutPipe()
	} else {
		b.cmd.Stdout = &b.other
		pipe, err = b.cmd.StderrPipe()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(b.done)
		s := bufio.NewScanner(pipe)
		for s.Scan() {
			b.mu.Lock()
			b.followed = append(b.followed, s.Text())
			b.mu.Unlock()
			b.lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			_ = b.cmd.Process.Kill()
			_ = b.cmd.Wait()
		}
	})
	return b
}

// waitForLine waits until the process prints a line to the followed stream that contains want.
func (b *cliProcess) waitForLine(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line := <-b.lines:
			if strings.Contains(line, want) {
				return
			}
		case <-b.done:
			t.Fatalf("navarch ended without printing %q; %s:\n%s", want, b.stream, b.followedText())
		case <-deadline:
			t.Fatalf("navarch did not print %q within 30s; %s so far:\n%s", want, b.stream, b.followedText())
		}
	}
}

func (b *cliProcess) followedText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.followed, "\n")
}

// wait waits for the process to exit and returns its result.
func (b *cliProcess) wait(t *testing.T) cliResult {
	t.Helper()
	exited := make(chan error, 1)
	go func() {
		<-b.done // the whole followed stream read before Wait closes the pipe
		exited <- b.cmd.Wait()
	}()
	var err error
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("navarch did not exit within a minute; %s:\n%s", b.stream, b.followedText())
	}
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r := cliResult{stdout: b.other.String(), stderr: b.followedText(), code: code}
	if b.stream == "stdout" {
		r.stdout, r.stderr = b.followedText()+"\n", b.other.String()
	}
	return r
}

func (e *cliEnv) createNamespace(t *testing.T, name string) {
	t.Helper()
	if err := e.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// createApp creates an Application and then writes status as the controller would.
func (e *cliEnv) createApp(t *testing.T, app *navarchv1.Application, status navarchv1.ApplicationStatus) {
	t.Helper()
	ctx := context.Background()
	if err := e.c.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	app.Status = status
	if err := e.c.Status().Update(ctx, app); err != nil {
		t.Fatalf("write the status of %s: %v", app.Name, err)
	}
}

// controllerStep changes an Application as one reconcile of the controller would: first its
// status, then (when clearOperation) the operation field it has taken up.
func (e *cliEnv) controllerStep(t *testing.T, namespace, name string, clearOperation bool, mutate func(*navarchv1.ApplicationStatus)) {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: namespace, Name: name}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := &navarchv1.Application{}
		if err := e.c.Get(ctx, key, app); err != nil {
			return err
		}
		mutate(&app.Status)
		if err := e.c.Status().Update(ctx, app); err != nil {
			return err
		}
		if !clearOperation {
			return nil
		}
		app.Operation = nil
		return e.c.Update(ctx, app)
	})
	if err != nil {
		t.Fatalf("controller step on %s: %v", key, err)
	}
}

// getApp reads an Application.
func (e *cliEnv) getApp(t *testing.T, namespace, name string) *navarchv1.Application {
	t.Helper()
	app := &navarchv1.Application{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, app); err != nil {
		t.Fatal(err)
	}
	return app
}

// eventually polls cond until it holds, for at most 30s.
func cliEventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// waitForOperation waits until the CLI has set the operation of an Application and returns it.
func (e *cliEnv) waitForOperation(t *testing.T, namespace, name string) *navarchv1.Operation {
	t.Helper()
	var op *navarchv1.Operation
	cliEventually(t, "the CLI sets the operation of "+name, func(ctx context.Context) (bool, error) {
		app := &navarchv1.Application{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, app); err != nil {
			return false, err
		}
		op = app.Operation
		return op != nil, nil
	})
	return op
}

func cliApp(namespace, name, appSet, path string, dest navarchv1.ApplicationDestination) *navarchv1.Application {
	app := &navarchv1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: navarchv1.ApplicationSpec{
			Source:      navarchv1.ApplicationSource{RepoURL: cliRepo, Path: path, TargetRevision: "main"},
			Destination: dest,
			SyncPolicy:  &navarchv1.SyncPolicy{Automated: &navarchv1.SyncPolicyAutomated{Prune: true, SelfHeal: true}},
		},
	}
	if appSet != "" {
		app.Labels = map[string]string{navarchv1.LabelApplicationSet: appSet}
	}
	return app
}

func cliAgo(d time.Duration) metav1.Time {
	return metav1.NewTime(time.Now().Add(-d).Truncate(time.Second))
}

func cliAgoPtr(d time.Duration) *metav1.Time { t := cliAgo(d); return &t }

// syncedStatus is the status of an Application the controller synced to cliCommit.
func cliSyncedStatus() navarchv1.ApplicationStatus {
	return navarchv1.ApplicationStatus{
		Sync:         navarchv1.SyncStatus{Status: navarchv1.SyncStatusSynced, Revision: cliCommit},
		Health:       navarchv1.HealthStatus{Status: navarchv1.HealthHealthy},
		ReconciledAt: cliAgoPtr(15 * time.Minute),
		Resources: []navarchv1.ResourceStatus{
			{ResourceRef: navarchv1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "web"},
				Status: navarchv1.SyncStatusSynced, Health: &navarchv1.HealthStatus{Status: navarchv1.HealthHealthy}},
		},
		OperationState: &navarchv1.OperationState{
			Operation:  navarchv1.Operation{Sync: &navarchv1.SyncOperation{}, InitiatedBy: navarchv1.OperationInitiator{Automated: true}},
			Phase:      navarchv1.OperationSucceeded,
			Message:    "successfully synced (all tasks run)",
			StartedAt:  cliAgo(31 * time.Minute),
			FinishedAt: cliAgoPtr(30 * time.Minute),
			SyncResult: &navarchv1.SyncOperationResult{Revision: cliCommit},
		},
		History: []navarchv1.RevisionHistory{
			{ID: 1, Revision: cliOldCommit, DeployedAt: cliAgo(48 * time.Hour), InitiatedBy: navarchv1.OperationInitiator{Automated: true},
				Source: navarchv1.ApplicationSource{RepoURL: cliRepo, Path: "apps/web-v1", TargetRevision: "main"}},
			{ID: 2, Revision: cliCommit, DeployedAt: cliAgo(30 * time.Minute), InitiatedBy: navarchv1.OperationInitiator{Username: "alice"},
				Source: navarchv1.ApplicationSource{RepoURL: cliRepo, Path: "apps/web", TargetRevision: "main"}},
		},
	}
}

// degradedStatus is the status of an Application whose last sync failed and that drifted.
func cliDegradedStatus() navarchv1.ApplicationStatus {
	started := cliAgo(22 * time.Minute)
	finished := metav1.NewTime(started.Add(2 * time.Minute))
	return navarchv1.ApplicationStatus{
		Sync:         navarchv1.SyncStatus{Status: navarchv1.SyncStatusOutOfSync, Revision: cliCommit},
		Health:       navarchv1.HealthStatus{Status: navarchv1.HealthDegraded, Message: "Deployment api: 0/2 replicas available"},
		ReconciledAt: cliAgoPtr(15 * time.Minute),
		Conditions: []metav1.Condition{{Type: navarchv1.ApplicationSyncError, Status: metav1.ConditionTrue, Reason: "SyncFailed",
			Message: "one or more tasks failed", LastTransitionTime: cliAgo(20 * time.Minute)}},
		Resources: []navarchv1.ResourceStatus{
			{ResourceRef: navarchv1.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "api", Name: "api"},
				Status: navarchv1.SyncStatusOutOfSync, Message: "spec.replicas: live 1, Git 2",
				Health: &navarchv1.HealthStatus{Status: navarchv1.HealthDegraded, Message: "0/2 replicas available"}},
			{ResourceRef: navarchv1.ResourceRef{Version: "v1", Kind: "Service", Namespace: "api", Name: "api"},
				Status: navarchv1.SyncStatusSynced, Health: &navarchv1.HealthStatus{Status: navarchv1.HealthHealthy}},
			{ResourceRef: navarchv1.ResourceRef{Version: "v1", Kind: "ConfigMap", Namespace: "api", Name: "old-settings"},
				Status: navarchv1.SyncStatusOutOfSync, RequiresPruning: true, Message: "not in Git"},
		},
		OperationState: &navarchv1.OperationState{
			Operation: navarchv1.Operation{Sync: &navarchv1.SyncOperation{Prune: true}, InitiatedBy: navarchv1.OperationInitiator{Username: "alice"}},
			Phase:     navarchv1.OperationFailed,
			Message:   "one or more tasks failed",
			StartedAt: started, FinishedAt: &finished, RetryCount: 3,
			SyncResult: &navarchv1.SyncOperationResult{Revision: cliCommit, Resources: []navarchv1.ResourceResult{
				{ResourceRef: navarchv1.ResourceRef{Kind: "Job", Namespace: "api", Name: "migrate"}, Status: navarchv1.ResultSynced,
					HookType: "PreSync", HookPhase: navarchv1.HookSucceeded, SyncPhase: navarchv1.SyncPhasePreSync, Message: "job completed"},
				{ResourceRef: navarchv1.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "api", Name: "api"}, Status: navarchv1.ResultSyncFailed,
					SyncPhase: navarchv1.SyncPhaseSync, SyncWave: 1, Message: `admission webhook "policy.example.com" denied the request`},
			}},
		},
	}
}

// cliRows splits table output into rows of whitespace-separated cells.
func cliRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) != "" {
			rows = append(rows, strings.Fields(line))
		}
	}
	return rows
}

// assertTable compares the first rows of table output with want, cell by cell.
func cliAssertTable(t *testing.T, what, out string, want [][]string) {
	t.Helper()
	got := cliRows(out)
	if len(got) < len(want) {
		t.Errorf("%s: %d rows, want %d:\n%s", what, len(got), len(want), out)
		return
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("%s: row %d is %q, want %q\n%s", what, i, got[i], want[i], out)
		}
	}
}

func cliAssertContains(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, out)
		}
	}
}

func (e *cliEnv) testInspect(t *testing.T) {
	const ns = "inspect"
	e.createNamespace(t, ns)
	e.createApp(t, cliApp(ns, "api-prod-eu", "fleet", "apps/api", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "api"}), cliDegradedStatus())
	e.createApp(t, cliApp(ns, "web", "", "apps/web", navarchv1.ApplicationDestination{Server: "https://prod-us.example.com", Namespace: "web"}), cliSyncedStatus())

	// The list shows, per Application, where it goes and how it is.
	cliAssertTable(t, "app list", e.mustRun(t, "app", "list", "-n", ns), [][]string{
		{"NAME", "CLUSTER", "NAMESPACE", "SYNC", "HEALTH", "REVISION", "LAST-OP"},
		{"api-prod-eu", "prod-eu", "api", "OutOfSync", "Degraded", "1a2b3c4d", "Failed", "20m", "ago"},
		{"web", "https://prod-us.example.com", "web", "Synced", "Healthy", "1a2b3c4d", "Succeeded", "30m", "ago"},
	})
	wide := e.mustRun(t, "app", "list", "-A", "-o", "wide", "-l", navarchv1.LabelApplicationSet+"=fleet")
	cliAssertTable(t, "app list -A -o wide -l", wide, [][]string{
		{"NAME", "CLUSTER", "NAMESPACE", "SYNC", "HEALTH", "REVISION", "LAST-OP", "REPO", "PATH", "TARGET", "PROJECT"},
		{ns + "/api-prod-eu", "prod-eu", "api", "OutOfSync", "Degraded", "1a2b3c4d", "Failed", "20m", "ago", cliRepo, "apps/api", "main", "default"},
	})
	if len(cliRows(wide)) != 2 {
		t.Errorf("the label selector let through more than the fleet's Application:\n%s", wide)
	}

	// Without -n, the namespace of the kubeconfig context counts, as with kubectl.
	cfg, err := loadKubeconfig(e.cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	withNS := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, withNS); err != nil {
		t.Fatal(err)
	}
	byContext := runCLI(t, "app", "list", "--kubeconfig", withNS).stdout
	if rows := cliRows(byContext); len(rows) != 3 || rows[1][0] != "api-prod-eu" {
		t.Errorf("app list without -n does not list the context's namespace %s:\n%s", ns, byContext)
	}

	// get tells what is wrong, where, and what the last operation did.
	get := e.mustRun(t, "app", "get", "api-prod-eu", "-n", ns)
	cliAssertContains(t, "app get", get,
		"Name:             inspect/api-prod-eu",
		"ApplicationSet:   fleet",
		"Source:           https://github.com/org/deploy.git, path apps/api, revision main",
		"Destination:      cluster prod-eu, namespace api",
		"Sync policy:      automated (prune, self-heal)",
		"Sync:             OutOfSync with 1a2b3c4d (compared 15m ago)",
		"Health:           Degraded: Deployment api: 0/2 replicas available",
		"SyncError   True     SyncFailed",
		"Resources (3):",
		"spec.replicas: live 1, Git 2; 0/2 replicas available",
		"RequiresPruning",
		"Last operation:   sync to 1a2b3c4d (prune), by alice, started 22m ago, finished after 2m0s",
		"Phase:            Failed",
		"Retry:            3 retries so far",
		`admission webhook "policy.example.com" denied the request`,
		"PreSync:Succeeded",
	)
	var fromJSON navarchv1.Application
	if err := cliDecodeJSON(e.mustRun(t, "app", "get", "api-prod-eu", "-n", ns, "-o", "json"), &fromJSON); err != nil {
		t.Fatalf("app get -o json: %v", err)
	}
	if fromJSON.Kind != "Application" || fromJSON.Status.OperationState == nil || fromJSON.Status.OperationState.RetryCount != 3 {
		t.Errorf("app get -o json: %+v", fromJSON)
	}
	cliAssertContains(t, "app get -o yaml", e.mustRun(t, "app", "get", "web", "-n", ns, "-o", "yaml"),
		"apiVersion: navarch.io/v1alpha1\n", "kind: Application\n", "  name: web\n")

	// history lists the entries rollback goes back to.
	history := e.getApp(t, ns, "web").Status.History
	deployed := func(i int) []string {
		at := history[i].DeployedAt.Local()
		return []string{at.Format(time.DateOnly), at.Format(time.TimeOnly)}
	}
	cliAssertTable(t, "app history", e.mustRun(t, "app", "history", "web", "-n", ns), [][]string{
		{"ID", "REVISION", "DEPLOYED-AT", "INITIATED-BY", "SOURCE-PATH"},
		append(append([]string{"1", "0f0e0d0c"}, deployed(0)...), "automated", "apps/web-v1"),
		append(append([]string{"2", "1a2b3c4d"}, deployed(1)...), "alice", "apps/web"),
	})

	// diff shows the controller's comparison, and its exit code says whether anything differs.
	diff := e.expectExit(t, 1, "Error: application inspect/api-prod-eu differs from Git: 2 resources", "app", "diff", "api-prod-eu", "-n", ns)
	cliAssertTable(t, "app diff", strings.SplitN(diff.stdout, "\n", 2)[1], [][]string{
		{"GROUP", "KIND", "NAMESPACE", "NAME", "STATUS", "MESSAGE"},
		{"apps", "Deployment", "api", "api", "OutOfSync", "spec.replicas:", "live", "1,", "Git", "2"},
		{"-", "ConfigMap", "api", "old-settings", "RequiresPruning", "not", "in", "Git"},
	})
	cliAssertContains(t, "app diff", diff.stdout, "Application inspect/api-prod-eu is OutOfSync with 1a2b3c4d (compared 15m ago); 2 resources differ from Git:")
	cliAssertContains(t, "app diff of a Synced Application", e.mustRun(t, "app", "diff", "web", "-n", ns),
		"Application inspect/web is Synced with 1a2b3c4d: no differences")
}

func cliDecodeJSON(s string, v any) error {
	dec := jsonDecoder(s)
	return dec.Decode(v)
}

func (e *cliEnv) testSync(t *testing.T) {
	const ns = "sync"
	e.createNamespace(t, ns)
	e.createApp(t, cliApp(ns, "web", "", "apps/web", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "web"}), cliSyncedStatus())

	// A plain sync sets the operation with every option and says how to follow it.
	out := e.mustRun(t, "app", "sync", "web", "-n", ns, "--revision", "v1.2.0", "--prune", "--dry-run",
		"--resource", "apps:Deployment:web", "--resource", "ConfigMap:web/settings", "--sync-option", "ServerSideApply=true")
	cliAssertContains(t, "app sync", out, "Requested a sync to v1.2.0 (prune, dry run, 2 resources) of Application sync/web.",
		"navarch app get web -n sync")
	op := e.getApp(t, ns, "web").Operation
	want := &navarchv1.Operation{
		Sync: &navarchv1.SyncOperation{Revision: "v1.2.0", Prune: true, DryRun: true,
			SyncOptions: []navarchv1.SyncOption{"ServerSideApply=true"},
			Resources: []navarchv1.SyncOperationResource{{Group: "apps", Kind: "Deployment", Name: "web"},
				{Kind: "ConfigMap", Namespace: "web", Name: "settings"}}},
		InitiatedBy: navarchv1.OperationInitiator{Username: e.user},
	}
	if !equalJSON(op, want) {
		t.Errorf("operation after app sync:\n got %s\nwant %s", toJSON(op), toJSON(want))
	}
	cliAssertContains(t, "app get of an Application with a requested sync", e.mustRun(t, "app", "get", "web", "-n", ns),
		"Requested:        sync to v1.2.0 (prune, dry run, 2 resources) by cli-admin, waiting for the controller to start it")

	// The controller takes it up and runs it; sync refuses to queue another meanwhile.
	e.controllerStep(t, ns, "web", true, func(st *navarchv1.ApplicationStatus) {
		st.OperationState = &navarchv1.OperationState{Operation: *op, Phase: navarchv1.OperationRunning,
			Message: "wave 0: applying 1 resource", StartedAt: metav1.Now(), SyncResult: &navarchv1.SyncOperationResult{Revision: cliCommit}}
	})
	e.expectExit(t, 1, "Error: application sync/web is already running an operation (sync to 1a2b3c4d (prune, dry run, 2 resources) by cli-admin",
		"app", "sync", "web", "-n", ns)
	if e.getApp(t, ns, "web").Operation != nil {
		t.Errorf("a refused sync still set the operation")
	}

	// --wait follows an operation from the moment the controller takes it up to its end.
	e.controllerStep(t, ns, "web", false, func(st *navarchv1.ApplicationStatus) {
		st.OperationState.Phase, st.OperationState.Message, st.OperationState.FinishedAt = navarchv1.OperationSucceeded, "dry run succeeded", cliAgoPtr(0)
	})
	bg := e.start(t, "app", "sync", "web", "-n", ns, "--wait", "--timeout", "1m")
	op = e.waitForOperation(t, ns, "web")
	if op.Sync == nil || op.Sync.Prune || op.InitiatedBy.Username != e.user {
		t.Errorf("operation of app sync --wait: %s", toJSON(op))
	}
	started := metav1.NewTime(time.Now().Truncate(time.Second))
	e.controllerStep(t, ns, "web", true, func(st *navarchv1.ApplicationStatus) {
		st.OperationState = &navarchv1.OperationState{Operation: *op, Phase: navarchv1.OperationRunning,
			Message: "wave -1: PreSync hook Job migrate running", StartedAt: started, SyncResult: &navarchv1.SyncOperationResult{Revision: cliCommit}}
	})
	bg.waitForLine(t, "Running: wave -1: PreSync hook Job migrate running")
	e.controllerStep(t, ns, "web", false, func(st *navarchv1.ApplicationStatus) {
		st.OperationState.Message = "wave 0: waiting for Deployment web to become healthy"
	})
	bg.waitForLine(t, "Running: wave 0: waiting for Deployment web to become healthy")
	e.controllerStep(t, ns, "web", false, func(st *navarchv1.ApplicationStatus) {
		s := st.OperationState
		s.Phase, s.Message, s.FinishedAt = navarchv1.OperationSucceeded, "successfully synced (all tasks run)", cliAgoPtr(0)
		s.SyncResult.Resources = []navarchv1.ResourceResult{
			{ResourceRef: navarchv1.ResourceRef{Kind: "Job", Namespace: "web", Name: "migrate"}, Status: navarchv1.ResultSynced,
				HookType: "PreSync", HookPhase: navarchv1.HookSucceeded, SyncPhase: navarchv1.SyncPhasePreSync, SyncWave: -1},
			{ResourceRef: navarchv1.ResourceRef{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web"}, Status: navarchv1.ResultSynced,
				SyncPhase: navarchv1.SyncPhaseSync, Message: "deployment.apps/web configured"},
		}
	})
	r := bg.wait(t)
	if r.code != 0 {
		t.Fatalf("app sync --wait of a sync that succeeded: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	cliAssertTable(t, "app sync --wait result", strings.SplitN(r.stdout, "\n", 2)[1], [][]string{
		{"PHASE", "WAVE", "KIND", "NAMESPACE", "NAME", "STATUS", "HOOK", "MESSAGE"},
		{"PreSync", "-1", "Job", "web", "migrate", "Synced", "PreSync:Succeeded"},
		{"Sync", "0", "Deployment.apps", "web", "web", "Synced", "-", "deployment.apps/web", "configured"},
	})
	cliAssertContains(t, "app sync --wait", r.stdout, "Sync to 1a2b3c4d of Application sync/web Succeeded: successfully synced (all tasks run)")
	cliAssertContains(t, "app sync --wait progress", r.stderr, "Succeeded: successfully synced (all tasks run)")

	// A sync that fails makes --wait exit 1 with the controller's message.
	bg = e.start(t, "app", "sync", "web", "-n", ns, "--wait")
	op = e.waitForOperation(t, ns, "web")
	e.controllerStep(t, ns, "web", true, func(st *navarchv1.ApplicationStatus) {
		st.OperationState = &navarchv1.OperationState{Operation: *op, Phase: navarchv1.OperationRunning, Message: "sync started",
			StartedAt: metav1.Now(), SyncResult: &navarchv1.SyncOperationResult{Revision: cliCommit}}
	})
	bg.waitForLine(t, "Running: sync started")
	e.controllerStep(t, ns, "web", false, func(st *navarchv1.ApplicationStatus) {
		s := st.OperationState
		s.Phase, s.Message, s.FinishedAt = navarchv1.OperationFailed, "one or more tasks failed: Deployment web: admission webhook denied", cliAgoPtr(0)
	})
	r = bg.wait(t)
	if r.code != 1 || !strings.Contains(r.stderr, "Error: the sync to 1a2b3c4d of Application sync/web Failed: one or more tasks failed: Deployment web: admission webhook denied") {
		t.Errorf("app sync --wait of a sync that failed: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	// Without a controller nothing starts: --wait gives up after --timeout and says why.
	e.expectExit(t, 1, "the controller did not start the operation of Application sync/web within 1s: is navarch controller running",
		"app", "sync", "web", "-n", ns, "--wait", "--timeout", "1s")
	if e.getApp(t, ns, "web").Operation == nil {
		t.Errorf("the operation was withdrawn after the timeout; it should stay requested")
	}
}

func (e *cliEnv) testRollbackAndTerminate(t *testing.T) {
	const ns = "rollback"
	e.createNamespace(t, ns)
	e.createApp(t, cliApp(ns, "checkout", "", "apps/checkout", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "checkout"}), cliSyncedStatus())

	// Nothing runs: terminate-op has nothing to stop.
	e.expectExit(t, 1, "Error: application rollback/checkout has no running operation to terminate (last operation: sync to 1a2b3c4d, Succeeded 30m ago)",
		"app", "terminate-op", "checkout", "-n", ns)
	if _, ok := e.getApp(t, ns, "checkout").Annotations[navarchv1.AnnotationTerminateOperation]; ok {
		t.Errorf("terminate-op annotated an Application without a running operation")
	}

	// A rollback names a history entry; an unknown one is refused with the ones there are.
	e.expectExit(t, 1, "Error: application rollback/checkout has no history entry 9 (its entries: 1, 2)", "app", "rollback", "checkout", "9", "-n", ns)
	out := e.mustRun(t, "app", "rollback", "checkout", "1", "-n", ns)
	cliAssertContains(t, "app rollback", out,
		"Requested a rollback of Application rollback/checkout to history entry 1 (revision 0f0e0d0c, path apps/web-v1).",
		"annotation navarch.io/automated-sync-paused",
		"kubectl annotate applications.navarch.io checkout -n rollback navarch.io/automated-sync-paused-")
	op := e.getApp(t, ns, "checkout").Operation
	if op == nil || op.Rollback == nil || op.Rollback.ID != 1 || op.Sync != nil || op.InitiatedBy.Username != e.user {
		t.Fatalf("operation after app rollback: %s", toJSON(op))
	}

	// The controller runs it; terminate-op asks it to stop.
	e.controllerStep(t, ns, "checkout", true, func(st *navarchv1.ApplicationStatus) {
		st.OperationState = &navarchv1.OperationState{Operation: *op, Phase: navarchv1.OperationRunning, Message: "wave 0: applying 1 resource",
			StartedAt: cliAgo(15 * time.Minute), SyncResult: &navarchv1.SyncOperationResult{Revision: cliOldCommit}}
	})
	cliAssertContains(t, "app terminate-op", e.mustRun(t, "app", "terminate-op", "checkout", "-n", ns),
		"Asked the controller to terminate the rollback to history entry 1 to 0f0e0d0c of Application rollback/checkout (by cli-admin, started 15m ago).")
	if v := e.getApp(t, ns, "checkout").Annotations[navarchv1.AnnotationTerminateOperation]; v != "true" {
		t.Errorf("terminate-op: annotation %s = %q, want true", navarchv1.AnnotationTerminateOperation, v)
	}
	cliAssertContains(t, "app get after terminate-op", e.mustRun(t, "app", "get", "checkout", "-n", ns),
		"Terminating:      requested, waiting for the controller", "Last operation:   rollback to history entry 1 to 0f0e0d0c, by cli-admin")
}

func (e *cliEnv) testDiffRefresh(t *testing.T) {
	const ns = "refresh"
	e.createNamespace(t, ns)
	e.createApp(t, cliApp(ns, "web", "", "apps/web", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "web"}), cliSyncedStatus())

	// Someone edited the Deployment by hand; the last comparison does not know yet.
	bg := e.start(t, "app", "diff", "web", "-n", ns, "--refresh")
	cliEventually(t, "app diff --refresh annotates the Application", func(ctx context.Context) (bool, error) {
		app := &navarchv1.Application{}
		err := e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, app)
		_, ok := app.Annotations[navarchv1.AnnotationRefresh]
		return ok, err
	})
	// The controller compares again, writes the result and removes the annotation.
	e.controllerStep(t, ns, "web", false, func(st *navarchv1.ApplicationStatus) {
		st.Sync.Status, st.ReconciledAt = navarchv1.SyncStatusOutOfSync, cliAgoPtr(0)
		st.Resources[0].Status, st.Resources[0].Message = navarchv1.SyncStatusOutOfSync, "spec.template.spec.containers[0].image: live web:hotfix, Git web:1.4"
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app := e.getApp(t, ns, "web")
		delete(app.Annotations, navarchv1.AnnotationRefresh)
		return e.c.Update(context.Background(), app)
	})
	if err != nil {
		t.Fatal(err)
	}
	r := bg.wait(t)
	if r.code != 1 || !strings.Contains(r.stdout, "live web:hotfix, Git web:1.4") {
		t.Errorf("app diff --refresh: exit %d, want 1 and the new comparison\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func (e *cliEnv) testClusterAdd(t *testing.T) {
	// The platform engineer's own kubeconfig names the cluster with its own context, and keeps
	// the certificates in files next to it, as kubeadm and many installers do.
	src := cliSourceKubeconfig(t, e.cluster.Kubeconfig())
	out := e.mustRun(t, "cluster", "add", "staging-ctx", "--source-kubeconfig", src, "--name", "staging", "--label", "env=staging", "--label", "region=eu")
	cliAssertContains(t, "cluster add", out, "Cluster staging registered: server "+e.cluster.Server()+", kubeconfig in Secret navarch-system/staging-kubeconfig.")

	ctx := context.Background()
	var cl navarchv1.Cluster
	if err := e.c.Get(ctx, client.ObjectKey{Name: "staging"}, &cl); err != nil {
		t.Fatalf("cluster add created no Cluster: %v", err)
	}
	ref := cl.Spec.KubeconfigSecretRef
	if cl.Spec.Server != e.cluster.Server() || ref == nil || ref.Namespace != "navarch-system" || ref.Name != "staging-kubeconfig" || ref.Key != "value" ||
		cl.Labels["env"] != "staging" || cl.Labels["region"] != "eu" {
		t.Errorf("Cluster staging: labels %v spec %s", cl.Labels, toJSON(cl.Spec))
	}
	var secret corev1.Secret
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: "navarch-system", Name: "staging-kubeconfig"}, &secret); err != nil {
		t.Fatalf("cluster add created no Secret: %v", err)
	}
	kubeconfig := secret.Data["value"]
	for _, path := range []string{"ca.crt", "client.crt", "client.key"} {
		if bytes.Contains(kubeconfig, []byte(path)) {
			t.Errorf("the stored kubeconfig refers to the file %s, which the controller cannot read:\n%s", path, kubeconfig)
		}
	}
	if bytes.Contains(kubeconfig, []byte("other-ctx")) {
		t.Errorf("the stored kubeconfig holds more than the one context:\n%s", kubeconfig)
	}
	// The controller can reach the cluster with it, from anywhere.
	stored := filepath.Join(t.TempDir(), "stored")
	if err := os.WriteFile(stored, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := clientForKubeconfig(t, stored).ServerVersion(); err != nil || v.GitVersion == "" {
		t.Errorf("the stored kubeconfig does not reach the cluster: %v", err)
	}

	// Adding it again is refused, unless asked to replace it.
	e.expectExit(t, 1, `Error: cluster "staging" already exists (server `+e.cluster.Server()+"); pass --upsert to replace it",
		"cluster", "add", "staging-ctx", "--source-kubeconfig", src, "--name", "staging")
	cliAssertContains(t, "cluster add --upsert", e.mustRun(t, "cluster", "add", "staging-ctx", "--source-kubeconfig", src, "--name", "staging", "--label", "tier=2", "--upsert"),
		"Cluster staging updated")
	e.expectExit(t, 1, `Error: context "nope" not found in `+src+" (its contexts: other-ctx, staging-ctx)",
		"cluster", "add", "nope", "--source-kubeconfig", src)
	e.expectExit(t, 2, `--name: "Staging_1" is not a valid Cluster name`, "cluster", "add", "staging-ctx", "--source-kubeconfig", src, "--name", "Staging_1")

	// The controller probes it; cluster list shows what it found.
	cl = navarchv1.Cluster{}
	if err := e.c.Get(ctx, client.ObjectKey{Name: "staging"}, &cl); err != nil {
		t.Fatal(err)
	}
	cl.Status = navarchv1.ClusterStatus{ServerVersion: "v1.37.2", LastProbeTime: cliAgoPtr(12 * time.Minute),
		Conditions: []metav1.Condition{{Type: navarchv1.ConditionReady, Status: metav1.ConditionTrue, Reason: navarchv1.ReasonConnected,
			Message: "reached the API server", LastTransitionTime: cliAgo(time.Minute)}}}
	if err := e.c.Status().Update(ctx, &cl); err != nil {
		t.Fatal(err)
	}
	list := e.mustRun(t, "cluster", "list")
	cliAssertTable(t, "cluster list", list, [][]string{
		{"NAME", "SERVER", "READY", "REASON", "VERSION", "LABELS", "CHANGED"},
		{"dev-1", "https://dev-1.example.com", "-", "-", "-", "env=dev", "-"},
	})
	var staging []string
	for _, row := range cliRows(list) {
		if row[0] == "staging" {
			staging = row
		}
	}
	if want := []string{"staging", e.cluster.Server(), "True", "Connected", "v1.37.2", "env=staging,region=eu,tier=2", "12m", "ago"}; !slices.Equal(staging, want) {
		t.Errorf("cluster list shows staging as %q, want %q:\n%s", staging, want, list)
	}
}

// writeSourceKubeconfig writes a kubeconfig with two contexts, staging-ctx for the test
// cluster with its certificates in files, and other-ctx.
func cliSourceKubeconfig(t *testing.T, admin []byte) string {
	t.Helper()
	cfg, err := loadKubeconfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cl, user string
	for name := range cfg.Contexts {
		cl, user = cfg.Contexts[name].Cluster, cfg.Contexts[name].AuthInfo
	}
	files := map[string][]byte{
		"ca.crt":     cfg.Clusters[cl].CertificateAuthorityData,
		"client.crt": cfg.AuthInfos[user].ClientCertificateData,
		"client.key": cfg.AuthInfos[user].ClientKeyData,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	server := cfg.Clusters[cl].Server
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: staging-cluster
  cluster: {server: "` + server + `", certificate-authority: ca.crt}
- name: other-cluster
  cluster: {server: "https://other.example.com"}
users:
- name: staging-user
  user: {client-certificate: client.crt, client-key: client.key}
- name: other-user
  user: {token: other-token}
contexts:
- name: staging-ctx
  context: {cluster: staging-cluster, user: staging-user}
- name: other-ctx
  context: {cluster: other-cluster, user: other-user}
current-context: other-ctx
`
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (e *cliEnv) testStatus(t *testing.T) {
	const ns = "status"
	e.createNamespace(t, ns)
	for _, a := range []struct {
		name, set, path string
		dest            navarchv1.ApplicationDestination
		status          navarchv1.ApplicationStatus
	}{
		{"api-prod-eu", "fleet", "apps/api", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "api"}, cliSyncedStatus()},
		{"api-prod-us", "fleet", "apps/api", navarchv1.ApplicationDestination{Server: "https://prod-us.example.com", Namespace: "api"}, cliDegradedStatus()},
		{"web-prod-eu", "fleet", "apps/web", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "web"}, cliSyncedStatus()},
		{"ingress", "", "infra/ingress", navarchv1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "ingress"}, cliSyncedStatus()},
	} {
		e.createApp(t, cliApp(ns, a.name, a.set, a.path, a.dest), a.status)
	}
	out := e.mustRun(t, "status", "-n", ns)
	rows := cliRows(out)
	header := rows[0]
	cell := func(row, cluster string) string {
		col := slices.Index(header, cluster)
		for _, r := range rows[1:] {
			if r[0] == row && col >= 0 && col < len(r) {
				return r[col]
			}
		}
		return "(none)"
	}
	for _, c := range []struct{ row, cluster, want string }{
		{"fleet:apps/api", "prod-eu", "Sync/OK"},
		{"fleet:apps/api", "prod-us", "OOS/Degr"},
		{"fleet:apps/api", "dev-1", "-"},
		{"fleet:apps/web", "prod-eu", "Sync/OK"},
		{"fleet:apps/web", "prod-us", "-"},
		{"ingress", "in-cluster", "Sync/OK"},
		{"ingress", "prod-eu", "-"},
	} {
		if got := cell(c.row, c.cluster); got != c.want {
			t.Errorf("status: row %s, cluster %s shows %q, want %q\n%s", c.row, c.cluster, got, c.want, out)
		}
	}
	if !slices.Contains(header, "staging") || header[0] != "APPLICATION" {
		t.Errorf("status has no column per registered Cluster:\n%s", out)
	}
	cliAssertContains(t, "status", out, "3 applications, ", " clusters, 1 of 4 Applications not Synced/Healthy\n", "OOS=OutOfSync")

	var m struct {
		Rows []struct {
			Name  string
			Cells map[string][]struct{ Application, Sync, Health, Revision string }
		}
		Summary struct{ Applications, Total, NotSyncedHealthy int }
	}
	if err := cliDecodeJSON(e.mustRun(t, "status", "-n", ns, "-o", "json"), &m); err != nil {
		t.Fatalf("status -o json: %v", err)
	}
	if m.Summary.Applications != 3 || m.Summary.Total != 4 || m.Summary.NotSyncedHealthy != 1 || len(m.Rows) != 3 {
		t.Errorf("status -o json: %+v", m)
	}
	if c := m.Rows[0].Cells["prod-us"]; len(c) != 1 || c[0].Application != ns+"/api-prod-us" || c[0].Health != "Degraded" {
		t.Errorf("status -o json: row %s, prod-us: %+v", m.Rows[0].Name, c)
	}
	cliAssertContains(t, "status -o wide", e.mustRun(t, "status", "-n", ns, "-o", "wide"), "OutOfSync/Degraded@1a2b3c4d")
}

func (e *cliEnv) testAppSet(t *testing.T) {
	const ns = "appsets"
	e.createNamespace(t, ns)
	ctx := context.Background()
	set := &navarchv1.ApplicationSet{}
	if err := yamlToObject(`
apiVersion: navarch.io/v1alpha1
kind: ApplicationSet
metadata: {name: fleet, namespace: appsets}
spec:
  generators:
    - clusters:
        selector: {matchLabels: {env: prod}}
  template:
    metadata: {name: 'api-{{name}}'}
    spec:
      source: {repoURL: 'https://github.com/org/deploy.git', targetRevision: main, path: apps/api}
      destination: {name: '{{name}}', namespace: api}
`, set); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	set.Status.Conditions = []metav1.Condition{
		{Type: navarchv1.ApplicationSetParametersGenerated, Status: metav1.ConditionTrue, Reason: navarchv1.ReasonParametersGenerated, LastTransitionTime: cliAgo(time.Minute)},
		{Type: navarchv1.ApplicationSetResourcesUpToDate, Status: metav1.ConditionFalse, Reason: navarchv1.ReasonApplicationError,
			Message: "Application api-prod-us: admission webhook denied", LastTransitionTime: cliAgo(time.Minute)},
		{Type: navarchv1.ApplicationSetErrorOccurred, Status: metav1.ConditionTrue, Reason: navarchv1.ReasonApplicationError,
			Message: "Application api-prod-us: admission webhook denied", LastTransitionTime: cliAgo(time.Minute)},
	}
	if err := e.c.Status().Update(ctx, set); err != nil {
		t.Fatal(err)
	}
	// Only one of the two Applications made it.
	e.createApp(t, cliApp(ns, "api-prod-eu", "fleet", "apps/api", navarchv1.ApplicationDestination{Name: "prod-eu", Namespace: "api"}), cliSyncedStatus())

	list := e.mustRun(t, "appset", "list", "-n", ns, "-o", "wide")
	cliAssertTable(t, "appset list -o wide", list, [][]string{
		{"NAME", "APPLICATIONS", "GENERATED", "UP-TO-DATE", "AGE", "GENERATORS", "MESSAGE"},
	})
	if row := cliRows(list)[1]; len(row) < 6 || !slices.Equal(row[:4], []string{"fleet", "1", "True", "False"}) || row[5] != "clusters" {
		t.Errorf("appset list -o wide row %q\n%s", row, list)
	}
	cliAssertContains(t, "appset list -o wide", list, "Application api-prod-us: admission webhook denied")
	cliAssertContains(t, "appset get", e.mustRun(t, "appset", "get", "fleet", "-n", ns),
		"Name:             appsets/fleet", "Generators:       clusters", "Template:         name api-{{name}} (fasttemplate)",
		"ResourcesUpToDate     False    ApplicationError", "api-prod-eu   prod-eu   api         Synced")

	// generate runs the live ApplicationSet through the same pipeline as navarch generate,
	// with the Clusters registered in the management cluster.
	cliAssertTable(t, "appset generate", e.mustRun(t, "appset", "generate", "fleet", "-n", ns), [][]string{
		{"NAME", "CLUSTER", "NAMESPACE", "REPO", "PATH", "REVISION"},
		{"api-prod-eu", "prod-eu", "api", cliRepo, "apps/api", "main"},
		{"api-prod-us", "prod-us", "api", cliRepo, "apps/api", "main"},
	})
	diff := e.mustRun(t, "appset", "generate", "fleet", "-n", ns, "--diff")
	cliAssertContains(t, "appset generate --diff", diff, "create   fleet            api-prod-us", "1 to create, 1 to update, 0 to delete, 0 unchanged")
}

func (e *cliEnv) testImport(t *testing.T) {
	cfg, err := loadKubeconfig(e.cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	var cl, user string
	for name := range cfg.Contexts {
		cl, user = cfg.Contexts[name].Cluster, cfg.Contexts[name].AuthInfo
	}
	// The Argo CD objects a team keeps in Git, with a declarative cluster Secret for this
	// very cluster (its server and client certificate), and the project they belong to.
	argo := strings.NewReplacer(
		"SERVER", e.cluster.Server(),
		"CA", b64(cfg.Clusters[cl].CertificateAuthorityData),
		"CERT", b64(cfg.AuthInfos[user].ClientCertificateData),
		"KEY", b64(cfg.AuthInfos[user].ClientKeyData),
	).Replace(`apiVersion: v1
kind: Secret
metadata:
  name: cluster-local
  namespace: argocd
  labels:
    argocd.argoproj.io/secret-type: cluster
    env: test
type: Opaque
stringData:
  name: imported-local
  server: SERVER
  config: |
    {"tlsClientConfig": {"insecure": false, "caData": "CA", "certData": "CERT", "keyData": "KEY"}}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: guestbook, namespace: argocd}
spec:
  sourceRepos: ['https://github.com/argoproj/*']
  destinations: [{name: imported-local, namespace: guestbook}, {server: '*', namespace: guestbook}]
  clusterResourceWhitelist: [{group: '', kind: Namespace}]
  sourceNamespaces: [imported]
  syncWindows: [{kind: deny, schedule: '0 22 * * 5', duration: 60h, namespaces: ['*'], timeZone: Europe/Berlin}]
  roles: [{name: ci, policies: ['p, proj:guestbook:ci, applications, sync, guestbook/*, allow']}]
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: guestbook
  namespace: argocd
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: guestbook
  source: {repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: HEAD, path: guestbook}
  destination: {name: imported-local, namespace: guestbook}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [CreateNamespace=true]
---
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbooks, namespace: argocd}
spec:
  generators:
    - clusters: {selector: {matchLabels: {env: test}}}
  template:
    metadata: {name: 'guestbook-{{name}}'}
    spec:
      project: guestbook
      source: {repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: HEAD, path: guestbook}
      destination: {server: '{{server}}', namespace: guestbook}
`)
	file := filepath.Join(t.TempDir(), "argocd.yaml")
	if err := os.WriteFile(file, []byte(argo), 0o600); err != nil {
		t.Fatal(err)
	}
	e.createNamespace(t, "imported")
	r := runCLI(t, "import", "-f", file, "-n", "imported")
	if r.code != 0 {
		t.Errorf("import: exit %d, want 0\nstderr:\n%s", r.code, r.stderr)
	}
	cliAssertContains(t, "import stderr", r.stderr,
		`warning: AppProject argocd/guestbook (`+file+` document 2): spec.roles: dropped: navarch has no project roles`,
		`warning: AppProject argocd/guestbook (`+file+` document 2): metadata.namespace: "argocd" becomes "navarch-system"`,
		`warning: ApplicationSet argocd/guestbooks (`+file+` document 4): metadata.namespace: "argocd" becomes "imported" (--namespace)`)
	if strings.Contains(r.stderr, "spec.project") || strings.Contains(r.stderr, "error:") {
		t.Errorf("import stderr mentions spec.project or an error; the project is kept as it is:\n%s", r.stderr)
	}

	// What import printed, kubectl apply would create: the API server accepts every object.
	objs, err := decodeObjects(r.stdout)
	if err != nil {
		t.Fatalf("import printed no YAML objects: %v\n%s", err, r.stdout)
	}
	var kinds []string
	for _, obj := range objs {
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind+" "+obj.GetName())
		if err := e.c.Create(context.Background(), obj); err != nil {
			t.Errorf("the API server rejects the imported %s: %v", kinds[len(kinds)-1], err)
		}
	}
	if want := []string{"Secret imported-local-kubeconfig", "Cluster imported-local", "Project guestbook", "Application guestbook", "ApplicationSet guestbooks"}; !slices.Equal(kinds, want) {
		t.Errorf("import printed %v, want %v", kinds, want)
	}
	// The Project keeps what the AppProject allowed, in navarch's namespace; the Application
	// still names it.
	var proj navarchv1.Project
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "navarch-system", Name: "guestbook"}, &proj); err != nil {
		t.Fatalf("the imported Project is not in navarch-system: %v", err)
	}
	if s := proj.Spec; len(s.Destinations) != 2 || s.Destinations[0].Name != "imported-local" || s.SourceRepos[0] != "https://github.com/argoproj/*" ||
		s.SourceNamespaces[0] != "imported" || len(s.SyncWindows) != 1 || s.SyncWindows[0].TimeZone != "Europe/Berlin" {
		t.Errorf("imported Project spec %+v", s)
	}
	if app := e.getApp(t, "imported", "guestbook"); app.Spec.Project != "guestbook" {
		t.Errorf("imported Application names project %q, want guestbook", app.Spec.Project)
	}
	// The Cluster's kubeconfig reaches the cluster the Argo CD Secret described.
	var secret corev1.Secret
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "navarch-system", Name: "imported-local-kubeconfig"}, &secret); err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join(t.TempDir(), "stored")
	if err := os.WriteFile(stored, secret.Data["value"], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := clientForKubeconfig(t, stored).ServerVersion(); err != nil {
		t.Errorf("the imported kubeconfig does not reach the cluster: %v", err)
	}
	// And the imported ApplicationSet selects the imported Cluster by its copied label.
	cliAssertContains(t, "appset generate of the imported ApplicationSet", e.mustRun(t, "appset", "generate", "guestbooks", "-n", "imported"),
		"guestbook-imported-local")
}

func (e *cliEnv) testErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"app", "get"}, "missing NAME"},
		{[]string{"app", "get", "a", "b"}, `unexpected argument "b"`},
		{[]string{"app", "list", "-o", "xml"}, `--output must be table, wide, yaml or json, got "xml"`},
		{[]string{"app", "sync", "web", "--resource", "web"}, `--resource "web": want [GROUP:]KIND:[NAMESPACE/]NAME`},
		{[]string{"app", "rollback", "web", "latest"}, `ID must be a history entry id`},
		{[]string{"app", "frobnicate"}, `unknown command "frobnicate" for "navarch app"`},
		{[]string{"app", "list", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"import"}, `required flag "--filename" (-f) not set`},
		{[]string{"cluster", "add", "ctx", "--label", "env"}, `--label "env": want KEY=VALUE`},
	} {
		r := runCLI(t, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("navarch %s: exit %d, want 2 (a usage error) with %q on stderr:\n%s", strings.Join(tc.args, " "), r.code, tc.want, r.stderr)
		}
	}
	e.expectExit(t, 1, `Error: Application "nope" not found in namespace "default" (choose another with -n NAMESPACE)`, "app", "get", "nope")
	e.expectExit(t, 1, `Error: ApplicationSet "nope" not found in namespace "appsets"`, "appset", "generate", "nope", "-n", "appsets")
}
