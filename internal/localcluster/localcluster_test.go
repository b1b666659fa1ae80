package localcluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/navarch-io/navarch/internal/localcluster"
)

const buildHint = `run "make k8s" (hack/k8s/build.sh) to build it`

func TestConcurrentClustersAreIndependent(t *testing.T) {
	start := time.Now()
	clusters, err := localcluster.StartMany(t.Context(), []localcluster.Options{{Name: "left"}, {Name: "right"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started two clusters concurrently in %s", time.Since(start).Round(time.Millisecond))
	for _, c := range clusters {
		t.Cleanup(func() {
			if err := c.Stop(); err != nil {
				t.Error(err)
			}
		})
	}
	left, right := clusters[0], clusters[1]

	if left.Server() == right.Server() {
		t.Errorf("both clusters serve at %s", left.Server())
	}
	if left.Dir() == right.Dir() {
		t.Errorf("both clusters live in %s", left.Dir())
	}
	for _, pid := range left.PIDs() {
		if slices.Contains(right.PIDs(), pid) {
			t.Errorf("pid %d belongs to both clusters", pid)
		}
	}
	for _, c := range clusters {
		if !strings.HasPrefix(c.Server(), "https://127.0.0.1:") {
			t.Errorf("cluster %s serves at %s, want https://127.0.0.1:<port>", c.Name, c.Server())
		}
		if got := len(c.PIDs()); got != 2 {
			t.Errorf("cluster %s runs %d processes, want 2 (etcd, kube-apiserver)", c.Name, got)
		}
	}

	// Other processes reach the cluster through the kubeconfig file.
	fileConfig, err := clientcmd.BuildConfigFromFlags("", left.KubeconfigPath())
	if err != nil {
		t.Fatalf("loading %s: %v", left.KubeconfigPath(), err)
	}
	if fileConfig.Host != left.Server() {
		t.Errorf("kubeconfig server %s, want %s", fileConfig.Host, left.Server())
	}
	leftClient := kubernetes.NewForConfigOrDie(fileConfig)
	rightClient := kubernetes.NewForConfigOrDie(right.RESTConfig())

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "only-left", Namespace: metav1.NamespaceDefault},
		Data:       map[string]string{"cluster": left.Name},
	}
	if _, err := leftClient.CoreV1().ConfigMaps(cm.Namespace).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ConfigMap in %s: %v", left.Name, err)
	}
	got, err := leftClient.CoreV1().ConfigMaps(cm.Namespace).Get(t.Context(), cm.Name, metav1.GetOptions{})
	if err != nil || got.Data["cluster"] != left.Name {
		t.Fatalf("ConfigMap in %s: got %v, %v", left.Name, got, err)
	}
	_, err = rightClient.CoreV1().ConfigMaps(cm.Namespace).Get(t.Context(), cm.Name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap created in %s: in %s got error %v, want NotFound", left.Name, right.Name, err)
	}

	// An outage of one API server: its clients fail, the other cluster is untouched, and after
	// the restart the same kubeconfig reaches the same data.
	if err := left.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := leftClient.CoreV1().ConfigMaps(cm.Namespace).Get(t.Context(), cm.Name, metav1.GetOptions{}); !isConnRefused(err) {
		t.Errorf("with %s's API server stopped: got error %v, want connection refused", left.Name, err)
	}
	if _, err := rightClient.CoreV1().Namespaces().Get(t.Context(), metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		t.Errorf("%s during %s's outage: %v", right.Name, left.Name, err)
	}
	if err := left.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, err := leftClient.CoreV1().ConfigMaps(cm.Namespace).Get(t.Context(), cm.Name, metav1.GetOptions{}); err != nil || got.Data["cluster"] != left.Name {
		t.Errorf("after restarting %s's API server: got %v, %v", left.Name, got, err)
	}
}

func isConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

func TestWorkloadsRun(t *testing.T) {
	start := time.Now()
	c := localcluster.StartForTest(t, localcluster.Options{Name: "workloads", Workloads: true})
	t.Logf("started workload-mode cluster in %s", time.Since(start).Round(time.Millisecond))
	t.Logf("RSS of the cluster's %d processes: %s", len(c.PIDs()), rssReport(t, c.PIDs()))

	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	ctx := t.Context()

	// A fresh namespace also exercises the default ServiceAccount the controller manager creates.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "workloads"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	labels := map[string]string{"app": "web"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       podSpec(corev1.RestartPolicyAlways),
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns.Name).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	succeeding := job(ns.Name, "succeeds", nil)
	failing := job(ns.Name, "fails", map[string]string{"navarch.io/simulate": "fail"})
	for _, j := range []*batchv1.Job{succeeding, failing} {
		if _, err := client.BatchV1().Jobs(ns.Name).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	eventually(t, "Deployment web to become Available with 2 replicas", func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(ns.Name).Get(ctx, deployment.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		available := slices.ContainsFunc(d.Status.Conditions, func(c appsv1.DeploymentCondition) bool {
			return c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
		})
		return available && d.Status.AvailableReplicas == 2 && d.Status.ReadyReplicas == 2, nil
	})
	pods, err := client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || pod.Spec.NodeName == "" || pod.Status.PodIP == "" {
			t.Errorf("pod %s: phase %s on node %q with IP %q, want Running on a node with an IP",
				pod.Name, pod.Status.Phase, pod.Spec.NodeName, pod.Status.PodIP)
		}
	}

	eventually(t, "Job succeeds to complete", func(ctx context.Context) (bool, error) {
		j, err := client.BatchV1().Jobs(ns.Name).Get(ctx, succeeding.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return jobCondition(j, batchv1.JobComplete) && j.Status.Succeeded == 1, nil
	})
	eventually(t, "Job fails to fail", func(ctx context.Context) (bool, error) {
		j, err := client.BatchV1().Jobs(ns.Name).Get(ctx, failing.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return jobCondition(j, batchv1.JobFailed) && j.Status.Failed == 1, nil
	})
	failedPods, err := client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + failing.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(failedPods.Items) != 1 || failedPods.Items[0].Status.Phase != corev1.PodFailed {
		t.Errorf("pods of Job %s: %v, want one Failed pod", failing.Name, podPhases(failedPods.Items))
	}
}

func TestStopKillsEveryProcess(t *testing.T) {
	c, err := localcluster.Start(t.Context(), localcluster.Options{Name: "stopped", Workloads: true})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.PIDs()
	wantBinaries := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
	if len(pids) != len(wantBinaries) {
		t.Errorf("PIDs() = %v, want one per binary %v", pids, wantBinaries)
	}
	for i, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("pid %d before Stop: %v", pid, err)
		}
		exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if err != nil || i < len(wantBinaries) && filepath.Base(exe) != wantBinaries[i] {
			t.Errorf("pid %d runs %q (%v), want %s", pid, exe, err, wantBinaries[i])
		}
	}
	dir := c.Dir()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())

	start := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped workload-mode cluster in %s", time.Since(start).Round(time.Millisecond))
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d after Stop: kill(pid, 0) = %v, want ESRCH", pid, err)
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pid %d after Stop: /proc entry still there (%v)", pid, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary cluster directory %s after Stop: %v, want it removed", dir, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("API server still answers after Stop")
	}
}

func TestStartManyStopsTheOthersWhenOneFails(t *testing.T) {
	dir := t.TempDir()
	missingCRDs := filepath.Join(dir, "no-such-crds")
	// The broken cluster fails only after its control plane is up, to install its CRDs.
	_, err := localcluster.StartMany(t.Context(), []localcluster.Options{
		{Name: "fine", Dir: filepath.Join(dir, "fine")},
		{Name: "broken", Dir: filepath.Join(dir, "broken"), CRDDirectoryPaths: []string{missingCRDs}},
	})
	if err == nil || !strings.Contains(err.Error(), missingCRDs) {
		t.Fatalf("StartMany with a broken cluster: %v, want an error about %s", err, missingCRDs)
	}
	t.Logf("StartMany: %v", err)
	for _, name := range []string{"fine", "broken"} {
		if _, err := os.Stat(filepath.Join(dir, name, "kube-apiserver.log")); err != nil {
			t.Errorf("cluster %s never started kube-apiserver: %v", name, err)
		}
	}
	if children := childProcesses(t); len(children) > 0 {
		t.Errorf("processes left running after failed StartMany: %v", children)
	}
}

func TestMissingBinariesSayHowToBuild(t *testing.T) {
	t.Setenv("NAVARCH_K8S_ASSETS", t.TempDir())
	for _, workloads := range []bool{false, true} {
		_, err := localcluster.Start(t.Context(), localcluster.Options{Workloads: workloads})
		if err == nil || !errors.Is(err, localcluster.ErrBinaryMissing) || !strings.Contains(err.Error(), buildHint) {
			t.Errorf("Start(Workloads: %t) with empty NAVARCH_K8S_ASSETS: %v, want an error that says %s", workloads, err, buildHint)
		}
		t.Logf("Start(Workloads: %t): %v", workloads, err)
		if err != nil && !strings.Contains(err.Error(), "kube-apiserver") {
			t.Errorf("error does not name the missing kube-apiserver: %v", err)
		}
	}

	t.Setenv("NAVARCH_K8S_ASSETS", filepath.Join(t.TempDir(), "missing"))
	if _, err := localcluster.BinDir(); err == nil || !strings.Contains(err.Error(), buildHint) {
		t.Errorf("BinDir with NAVARCH_K8S_ASSETS pointing nowhere: %v, want an error that says %s", err, buildHint)
	}

	t.Setenv("NAVARCH_K8S_ASSETS", "")
	t.Setenv("NAVARCH_CACHE_DIR", t.TempDir())
	if _, err := localcluster.BinDir(); err == nil || !strings.Contains(err.Error(), buildHint) {
		t.Errorf("BinDir with an empty cache: %v, want an error that says %s", err, buildHint)
	}
}

func TestEarlyExitIsRetriedAndReported(t *testing.T) {
	// Fake binaries: etcd fails the way a lost port race does.
	bin := t.TempDir()
	const complaint = "listen tcp 127.0.0.1:2379: bind: address already in use"
	for name, script := range map[string]string{
		"etcd":           "#!/bin/sh\necho '" + complaint + "' >&2\nexit 1\n",
		"kube-apiserver": "#!/bin/sh\nexit 1\n",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	_, err := localcluster.Start(t.Context(), localcluster.Options{Name: "crashing", BinDir: bin, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), complaint) {
		t.Fatalf("Start with a crashing etcd: %v, want an error quoting its log", err)
	}
	t.Logf("Start: %v", err)
	log, err := os.ReadFile(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(log), complaint); got != 3 {
		t.Errorf("etcd ran %d times, want 3 attempts", got)
	}
}

func podSpec(restart corev1.RestartPolicy) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: restart,
		Containers:    []corev1.Container{{Name: "main", Image: "registry.invalid/navarch/fake:1"}},
	}
}

func job(namespace, name string, annotations map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
				Spec:       podSpec(corev1.RestartPolicyNever),
			},
		},
	}
}

func jobCondition(j *batchv1.Job, condition batchv1.JobConditionType) bool {
	return slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
		return c.Type == condition && c.Status == corev1.ConditionTrue
	})
}

func podPhases(pods []corev1.Pod) map[string]corev1.PodPhase {
	phases := make(map[string]corev1.PodPhase, len(pods))
	for _, p := range pods {
		phases[p.Name] = p.Status.Phase
	}
	return phases
}

// eventually polls cond for up to 60s and fails the test if it never holds.
func eventually(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	start := time.Now()
	var lastErr error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			lastErr = err
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last error: %v)", what, err, lastErr)
	}
	t.Logf("%s took %s", what, time.Since(start).Round(time.Millisecond))
}

// rssReport sums VmRSS over pids, as "total (name rss, ...)".
func rssReport(t *testing.T, pids []int) string {
	t.Helper()
	var totalKiB int
	var parts []string
	for _, pid := range pids {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			t.Fatalf("reading status of pid %d: %v", pid, err)
		}
		var name string
		var rssKiB int
		for line := range strings.Lines(string(status)) {
			fields := strings.Fields(line)
			switch {
			case len(fields) >= 2 && fields[0] == "Name:":
				name = fields[1]
			case len(fields) >= 2 && fields[0] == "VmRSS:":
				rssKiB, _ = strconv.Atoi(fields[1])
			}
		}
		totalKiB += rssKiB
		parts = append(parts, name+" "+strconv.Itoa(rssKiB/1024)+" MiB")
	}
	return strconv.Itoa(totalKiB/1024) + " MiB (" + strings.Join(parts, ", ") + ")"
}

// childProcesses lists the live (non-zombie) child processes of the test binary as "pid name".
func childProcesses(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var children []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may contain spaces, so split after the last ')'.
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[end+1:])
		if len(fields) >= 2 && fields[1] == self && fields[0] != "Z" {
			children = append(children, e.Name()+" "+s[strings.IndexByte(s, '(')+1:end])
		}
	}
	return children
}
