// Package e2e holds end-to-end tests that read as user stories. They build the navarch binary
// and drive it as a user would, against real local clusters and a real Git server.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/devfleet"
	"github.com/navarch-io/navarch/internal/scheme"
)

// navarchBinary is built once by TestMain.
var navarchBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "navarch-e2e-bin")
	if err != nil {
		panic(err)
	}
	navarchBinary = filepath.Join(dir, "navarch")
	build := exec.Command("go", "build", "-o", navarchBinary, "github.com/navarch-io/navarch/cmd/navarch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build: a static binary maps fewer pages
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic("build navarch: " + err.Error())
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// navarch runs the binary and returns its stdout; it fails the test with the output if the
// command fails.
func navarch(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(navarchBinary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("navarch %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func TestDevUpStartsAFleetThatDevDownRemoves(t *testing.T) {
	stateDir := t.TempDir()
	sd := []string{"--state-dir", stateDir}
	t.Cleanup(func() {
		// Leave nothing running even when the test fails half-way.
		if _, err := devfleet.ReadState(stateDir); err == nil {
			_ = devfleet.Down(stateDir, os.Stderr)
		}
	})

	out := navarch(t, append([]string{"dev", "up", "--clusters", "2"}, sd...)...)
	for _, want := range []string{"fleet ready", "export KUBECONFIG=", "dev-1", "staging-2", "navarch dev down"} {
		if !strings.Contains(out, want) {
			t.Errorf("dev up output lacks %q:\n%s", want, out)
		}
	}

	state, err := devfleet.ReadState(stateDir)
	if err != nil {
		t.Fatalf("dev up left no state: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The management apiserver lists one Cluster per workload cluster, labelled by env.
	mgmt := clientFor(t, state.Management.Kubeconfig)
	var clusters navarchv1.ClusterList
	if err := mgmt.List(ctx, &clusters); err != nil {
		t.Fatalf("list Clusters through the management apiserver: %v", err)
	}
	wantEnv := map[string]string{"dev-1": "dev", "staging-2": "staging"}
	if len(clusters.Items) != len(wantEnv) {
		t.Fatalf("got %d Clusters, want %d: %v", len(clusters.Items), len(wantEnv), clusters.Items)
	}
	for _, cl := range clusters.Items {
		if env := cl.Labels["env"]; env != wantEnv[cl.Name] {
			t.Errorf("Cluster %s has env=%q, want %q", cl.Name, env, wantEnv[cl.Name])
		}
		if cl.Labels["region"] == "" {
			t.Errorf("Cluster %s has no region label", cl.Name)
		}

		// Each workload cluster is reachable through the kubeconfig in its Secret, and it
		// is a different apiserver from the management cluster.
		ref := cl.Spec.KubeconfigSecretRef
		var secret corev1.Secret
		if err := mgmt.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &secret); err != nil {
			t.Fatalf("kubeconfig Secret of %s: %v", cl.Name, err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[ref.Key])
		if err != nil {
			t.Fatalf("kubeconfig of %s does not parse: %v", cl.Name, err)
		}
		if cfg.Host == state.Management.Server || cfg.Host != cl.Spec.Server {
			t.Errorf("Cluster %s: kubeconfig server %s, spec.server %s, management %s", cl.Name, cfg.Host, cl.Spec.Server, state.Management.Server)
		}
		cs := kubernetes.NewForConfigOrDie(cfg)
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("reach %s through its kubeconfig Secret: %v", cl.Name, err)
		}
		if v.GitVersion != "v1.37.2" {
			t.Errorf("%s reports version %s, want v1.37.2", cl.Name, v.GitVersion)
		}
		marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-to-" + cl.Name, Namespace: "default"}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, marker, metav1.CreateOptions{}); err != nil {
			t.Fatalf("write to %s: %v", cl.Name, err)
		}
	}
	// Writes to one workload cluster are not seen by the other.
	other := kubernetes.NewForConfigOrDie(restConfig(t, state.Clusters[1].Kubeconfig))
	if _, err := other.CoreV1().ConfigMaps("default").Get(ctx, "written-to-"+state.Clusters[0].Name, metav1.GetOptions{}); err == nil {
		t.Errorf("%s sees a ConfigMap written to %s: the clusters are not independent", state.Clusters[1].Name, state.Clusters[0].Name)
	}

	// Running up again is a no-op, never a second fleet.
	again := navarch(t, append([]string{"dev", "up", "--clusters", "2"}, sd...)...)
	if !strings.Contains(again, "already running") {
		t.Errorf("a second dev up did not say the fleet already runs:\n%s", again)
	}
	if s2, _ := devfleet.ReadState(stateDir); s2 == nil || s2.PID != state.PID {
		t.Errorf("a second dev up replaced the supervisor (pid %d)", state.PID)
	}

	// status lists every component as running, also as JSON.
	status := navarch(t, append([]string{"dev", "status"}, sd...)...)
	if strings.Count(status, "Running") != 7 { // supervisor, git, github, charts, management, 2 workload clusters
		t.Errorf("dev status does not show 7 running components:\n%s", status)
	}
	if fleetState, _ := devfleet.ReadState(stateDir); fleetState == nil || fleetState.Charts.URL == "" || !strings.Contains(status, fleetState.Charts.URL) {
		t.Errorf("dev status does not show the Helm chart repository:\n%s", status)
	}
	var fromJSON devfleet.State
	if err := json.Unmarshal([]byte(navarch(t, append([]string{"dev", "status", "-o", "json"}, sd...)...)), &fromJSON); err != nil {
		t.Fatalf("dev status -o json: %v", err)
	}
	if len(fromJSON.Clusters) != 2 || !fromJSON.Ready || fromJSON.GitHub.APIURL == "" || fromJSON.GitHub.Token == "" {
		t.Errorf("dev status -o json: %+v", fromJSON)
	}

	// down stops every process it started.
	pids := state.AllPIDs()
	navarch(t, append([]string{"dev", "down"}, sd...)...)
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still running after dev down", pid)
		}
	}
	if _, err := devfleet.ReadState(stateDir); err == nil {
		t.Errorf("dev down left the state file behind")
	}
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

func restConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	return cfg
}

func clientFor(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	c, err := client.New(restConfig(t, kubeconfig), client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}
