// Package devfleet runs a local navarch fleet for development and demos: a management cluster
// with navarch's CRDs, N workload clusters registered in it as Cluster objects, and a Git
// server. `navarch dev up` starts Run in a detached supervisor process that owns every cluster
// process; the supervisor records what it started in a state file that `navarch dev status`
// and `navarch dev down` read.
package devfleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/config/crd"
	"github.com/navarch-io/navarch/internal/chartserver"
	"github.com/navarch-io/navarch/internal/controller"
	"github.com/navarch-io/navarch/internal/githubserver"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/localcluster"
	"github.com/navarch-io/navarch/internal/scheme"
)

// SystemNamespace holds the kubeconfig Secrets of the registered workload clusters.
const SystemNamespace = "navarch-system"

// The dev fleet's GitHub-compatible server holds one repository, GitHubOwner/ExamplesRepo,
// whose clone URL is the Git server's repository ExamplesRepo, and accepts GitHubToken.
const (
	GitHubOwner  = "navarch"
	ExamplesRepo = "examples"
	GitHubToken  = "navarch-dev-token"
)

// ManagementName is the name of the management cluster in the state file and in logs.
const ManagementName = "management"

var (
	envCycle    = []string{"dev", "staging", "prod"}
	regionCycle = []string{"eu-west", "us-east", "ap-south"}
)

// Options configure a dev fleet.
type Options struct {
	// StateDir holds the state file, the clusters' data and every log.
	StateDir string
	// Clusters is the number of workload clusters.
	Clusters int
	// Workloads runs controllers, a scheduler and simulated nodes in the workload clusters, so
	// Deployments become Available and Jobs complete.
	Workloads bool
	// Controller runs navarch's controller in the supervisor against the management cluster,
	// logging to controller.log in StateDir.
	Controller bool
	// Progress receives one line per step.
	Progress io.Writer
}

// WorkloadClusterName is the name of the i-th (0-based) workload cluster: its env label and
// its position, e.g. dev-1, staging-2, prod-3.
func WorkloadClusterName(i int) string {
	return fmt.Sprintf("%s-%d", envCycle[i%len(envCycle)], i+1)
}

// Run starts the fleet, records it in the state file, and keeps it running until ctx is done;
// then it stops everything it started. A start failure stops whatever had started.
func Run(ctx context.Context, opts Options) (err error) {
	if opts.Clusters < 0 {
		return fmt.Errorf("--clusters must be 0 or more, got %d", opts.Clusters)
	}
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	start := time.Now()
	p := newProgress(opts.Progress)
	say, log := p.say, p.logger()

	state := &State{PID: os.Getpid(), StartedAt: time.Now().UTC(), Workloads: opts.Workloads}

	git, err := gitserver.Start(gitserver.Options{Root: filepath.Join(opts.StateDir, "git")})
	if err != nil {
		return fmt.Errorf("start git server: %w", err)
	}
	defer func() { err = errors.Join(err, git.Close()) }()
	state.Git = GitState{URL: git.URL(), Root: git.Root()}
	say("git server listening on %s (bare repositories in %s)", git.URL(), git.Root())

	github, err := startGitHub(git, log.WithName("github"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, github.Close()) }()
	state.GitHub = GitHubState{URL: github.URL(), APIURL: github.APIURL(), Token: GitHubToken}
	say("GitHub-compatible server listening on %s (repository %s/%s)", github.URL(), GitHubOwner, ExamplesRepo)

	charts, err := chartserver.StartRepository(chartserver.RepositoryOptions{})
	if err != nil {
		return fmt.Errorf("start the Helm chart repository: %w", err)
	}
	defer func() { err = errors.Join(err, charts.Close()) }()
	state.Charts = ChartsState{URL: charts.URL()}
	say("Helm chart repository listening on %s", charts.URL())

	clusterOpts := []localcluster.Options{{
		Name:   ManagementName,
		Dir:    filepath.Join(opts.StateDir, "clusters", ManagementName),
		Logger: log.WithName(ManagementName),
	}}
	for i := range opts.Clusters {
		name := WorkloadClusterName(i)
		clusterOpts = append(clusterOpts, localcluster.Options{
			Name:      name,
			Workloads: opts.Workloads,
			Dir:       filepath.Join(opts.StateDir, "clusters", name),
			Logger:    log.WithName(name),
		})
	}
	say("starting %d clusters (management + %d workload, workload mode %v)", len(clusterOpts), opts.Clusters, opts.Workloads)
	clusters, err := localcluster.StartMany(ctx, clusterOpts)
	if err != nil {
		return fmt.Errorf("start clusters: %w", err)
	}
	defer func() {
		say("stopping %d clusters", len(clusters))
		for _, c := range clusters {
			err = errors.Join(err, c.Stop())
		}
	}()
	mgmt := clusters[0]
	state.Management = clusterState(mgmt, nil)
	say("clusters ready")

	if err := crd.Install(ctx, mgmt.RESTConfig()); err != nil {
		return fmt.Errorf("install CRDs into the management cluster: %w", err)
	}
	say("installed navarch CRDs into the management cluster")

	c, err := client.New(mgmt.RESTConfig(), client.Options{Scheme: scheme.New()})
	if err != nil {
		return fmt.Errorf("management client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, ns)); err != nil {
		return fmt.Errorf("create namespace %s: %w", SystemNamespace, err)
	}
	for i, wc := range clusters[1:] {
		labels := map[string]string{"env": envCycle[i%len(envCycle)], "region": regionCycle[i%len(regionCycle)]}
		if err := register(ctx, c, wc, labels); err != nil {
			return fmt.Errorf("register %s: %w", wc.Name, err)
		}
		state.Clusters = append(state.Clusters, clusterState(wc, labels))
		say("registered Cluster %s (env=%s, region=%s)", wc.Name, labels["env"], labels["region"])
	}

	controllerDone := make(chan error, 1)
	if opts.Controller {
		hook, err := webhookFor(ctx, c)
		if err != nil {
			return err
		}
		logPath := filepath.Join(opts.StateDir, "controller.log")
		stop, err := runController(ctx, mgmt, opts.StateDir, logPath, hook.addr, controllerDone)
		if err != nil {
			return err
		}
		defer stop()
		state.ControllerLog = logPath
		say("controller running (log: %s)", logPath)
		github.AddHook(GitHubOwner, ExamplesRepo, hook.url, hook.secret)
		state.GitHub.WebhookURL = hook.url
		say("GitHub delivers the webhooks of %s/%s to %s", GitHubOwner, ExamplesRepo, hook.url)
	}

	state.Ready = true
	if err := state.write(opts.StateDir); err != nil {
		return err
	}
	say("fleet ready in %s", time.Since(start).Round(100*time.Millisecond))

	select {
	case <-ctx.Done():
	case err := <-controllerDone:
		return fmt.Errorf("controller stopped: %w", err)
	}
	say("shutting down")
	return nil
}

// startGitHub starts the GitHub-compatible server with the examples repository.
func startGitHub(git *gitserver.Server, log logr.Logger) (*githubserver.Server, error) {
	gh, err := githubserver.Start(githubserver.Options{Logger: log, RequireAuth: true})
	if err != nil {
		return nil, fmt.Errorf("start the GitHub-compatible server: %w", err)
	}
	gh.AddToken(GitHubToken)
	gh.AddRepo(GitHubOwner, ExamplesRepo, githubserver.Repo{DefaultBranch: "main", CloneURL: git.RepoURL(ExamplesRepo)})
	return gh, nil
}

// register creates the kubeconfig Secret and the Cluster object of a workload cluster.
func register(ctx context.Context, c client.Client, wc *localcluster.Cluster, labels map[string]string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: wc.Name + "-kubeconfig", Namespace: SystemNamespace},
		Data:       map[string][]byte{"value": wc.Kubeconfig()},
	}
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("create kubeconfig Secret: %w", err)
	}
	cluster := &navarchv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: wc.Name, Labels: labels},
		Spec: navarchv1.ClusterSpec{
			Server: wc.Server(),
			KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{
				Namespace: SystemNamespace, Name: secret.Name, Key: "value",
			},
		},
	}
	if err := c.Create(ctx, cluster); err != nil {
		return fmt.Errorf("create Cluster: %w", err)
	}
	return nil
}

// webhook is where the dev controller receives GitHub webhooks, and their secret.
type webhook struct{ addr, url, secret string }

// webhookFor picks a free loopback port for the controller's webhook endpoint and stores a
// random secret in the Secret it reads.
func webhookFor(ctx context.Context, c client.Client) (webhook, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return webhook{}, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return webhook{}, err
	}
	random := make([]byte, 32)
	if _, err := rand.Read(random); err != nil {
		return webhook{}, err
	}
	hook := webhook{addr: addr, url: "http://" + addr + "/api/webhook", secret: hex.EncodeToString(random)}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: SystemNamespace, Name: controller.WebhookSecretName},
		Data:       map[string][]byte{controller.WebhookSecretKey: []byte(hook.secret)},
	}
	if err := c.Create(ctx, secret); err != nil {
		return webhook{}, fmt.Errorf("create the webhook Secret: %w", err)
	}
	return hook, nil
}

// runController runs the controller against the management cluster until ctx is done or the
// returned stop is called; its log goes to logPath and its result to done. It receives GitHub
// webhooks on webhookAddr.
func runController(ctx context.Context, mgmt *localcluster.Cluster, stateDir, logPath, webhookAddr string, done chan<- error) (stop func(), err error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	logger := zap.New(zap.WriteTo(logFile), zap.UseDevMode(false))
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- controller.Run(ctx, controller.Options{
			Config:      mgmt.RESTConfig(),
			MetricsAddr: "0", ProbeAddr: "0",
			Logger:      logger,
			GitCacheDir: filepath.Join(stateDir, "git-cache"),
			// A dev fleet answers quickly: notice pushes and outages within seconds.
			GitPollInterval:      10 * time.Second,
			ClusterProbeInterval: 10 * time.Second,
			WebhookAddr:          webhookAddr,
		})
	}()
	return func() {
		cancel()
		<-finished
		_ = logFile.Close()
	}, nil
}

func clusterState(c *localcluster.Cluster, labels map[string]string) ClusterState {
	return ClusterState{
		Name:       c.Name,
		Server:     c.Server(),
		Kubeconfig: c.KubeconfigPath(),
		Labels:     labels,
		PIDs:       c.PIDs(),
	}
}
