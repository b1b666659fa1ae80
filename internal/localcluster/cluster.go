// Package localcluster starts and stops real, local Kubernetes clusters for navarch's
// integration tests, benchmarks, e2e tests and `navarch dev up`.
//
// A cluster is etcd and kube-apiserver, run from the binaries hack/k8s/build.sh builds (see
// BinDir; `make k8s` builds them once per machine). With Options.Workloads it also runs
// kube-controller-manager, kube-scheduler and kwok, which plays kubelet for fake nodes, so
// Deployments become Available and Jobs run to completion without containers: kwok marks
// scheduled pods Running and Ready, has pods of restartPolicy Never/OnFailure (Job pods)
// succeed a second later, and fails pods annotated navarch.io/simulate=fail (see
// kwok-stages.yaml).
//
// Each cluster gets its own ports, certificates and directory, so several can run at once
// (Start them from several goroutines, or use StartMany). Each process logs to
// <Options.Dir>/<binary>.log and the admin kubeconfig is <Options.Dir>/kubeconfig.
//
// Stop kills exactly the processes a cluster started and waits for them. In tests use
// StartForTest, which stops the cluster in t.Cleanup. A test binary that shares one cluster
// between tests starts it in TestMain through RunMain. StopOnSignal stops every running
// cluster of the process on SIGINT or SIGTERM; on Linux the processes also die with the Go
// process that started them, however it ends.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

// Options configure a cluster. The zero value is a control plane (etcd and kube-apiserver only)
// in a temporary directory.
type Options struct {
	// Name identifies the cluster in errors, logs and the kubeconfig context. Default "navarch".
	Name string

	// Workloads also starts kube-controller-manager, kube-scheduler and kwok with Nodes fake
	// nodes, so that pods are scheduled and run (simulated) and the workload controllers work.
	Workloads bool

	// Nodes is the number of fake nodes in workload mode, named kwok-node-0, kwok-node-1, ...
	// Default 1.
	Nodes int

	// Dir holds the cluster's state (etcd data, certificates, kubeconfig) and the logs of its
	// processes. It is created if missing and kept by Stop; Start replaces the state of an
	// earlier cluster there (a new cluster starts empty) and appends to its logs. No two
	// running clusters may share a Dir. Default: a new temporary directory that Stop removes
	// (a failed Start keeps it, for its logs).
	Dir string

	// CRDDirectoryPaths lists directories or files of CustomResourceDefinition manifests
	// (YAML or JSON) to install before Start returns, e.g. config/crd/bases. A missing path is
	// an error.
	CRDDirectoryPaths []string

	// BinDir is the directory holding the binaries. Default: BinDir().
	BinDir string

	// StopGracePeriod is how long Stop lets a process exit after SIGTERM before it sends
	// SIGKILL. Default 10s.
	StopGracePeriod time.Duration

	// Logger receives progress messages. Default: discarded.
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "navarch"
	}
	if o.Nodes <= 0 {
		o.Nodes = 1
	}
	if o.StopGracePeriod <= 0 {
		o.StopGracePeriod = 10 * time.Second
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	return o
}

// Cluster is a running local cluster. Its methods are safe for concurrent use.
type Cluster struct {
	// Name is Options.Name.
	Name string

	dir            string
	server         string
	restConfig     *rest.Config
	kubeconfig     []byte
	creds          *pki // set by start
	kubeconfigPath string

	log   logr.Logger
	grace time.Duration

	mu        sync.Mutex
	procs     []*process // in start order
	stopping  bool
	removeDir bool // Stop removes dir: Start created it and nobody asked to keep it

	stopOnce sync.Once
	stopErr  error
}

// Start starts a cluster and returns once it is ready: the API server answers /readyz, the
// default namespace and the CRDs exist, and in workload mode the nodes are Ready without
// taints and the default ServiceAccount exists. If Start fails it stops whatever it started.
// ctx bounds only the start; the cluster runs until Stop.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	if opts.Nodes > maxNodes {
		return nil, fmt.Errorf("starting cluster %q: %d nodes asked, at most %d supported", opts.Name, opts.Nodes, maxNodes)
	}
	binDir := opts.BinDir
	if binDir == "" {
		dir, err := BinDir()
		if err != nil {
			return nil, fmt.Errorf("starting cluster %q: %w", opts.Name, err)
		}
		binDir = dir
	}
	bins, err := findBinaries(binDir, opts.Workloads)
	if err != nil {
		return nil, fmt.Errorf("starting cluster %q: %w", opts.Name, err)
	}

	dir, removeDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "navarch-localcluster-"+opts.Name+"-"); err != nil {
			return nil, fmt.Errorf("starting cluster %q: creating its directory: %w", opts.Name, err)
		}
		removeDir = true
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("starting cluster %q: creating its directory: %w", opts.Name, err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("starting cluster %q: %w", opts.Name, err)
	}

	c := &Cluster{
		Name:      opts.Name,
		dir:       dir,
		removeDir: removeDir,
		log:       opts.Logger.WithValues("cluster", opts.Name),
		grace:     opts.StopGracePeriod,
	}
	// From now on StopOnSignal stops it too.
	if err := running.add(c); err != nil {
		return nil, fmt.Errorf("starting cluster %q: %w", opts.Name, err)
	}
	began := time.Now()
	if err := c.start(ctx, opts, bins); err != nil {
		if ctx.Err() == nil {
			c.keepDir() // for the logs that explain the failure
		}
		startErr := fmt.Errorf("starting cluster %q (state and logs in %s): %w", c.Name, c.dir, err)
		return nil, errors.Join(startErr, c.Stop())
	}
	c.log.Info("cluster ready", "server", c.server, "dir", c.dir, "pids", c.PIDs(), "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

func (c *Cluster) start(ctx context.Context, opts Options, bins binaries) error {
	creds, err := newPKI(c.dir, servingIPs(), servingNames())
	if err != nil {
		return err
	}
	c.creds = creds
	if err := c.startControlPlane(ctx, bins, creds, opts.Workloads); err != nil {
		return err
	}
	if err := c.waitForDefaultNamespace(ctx); err != nil {
		return err
	}
	if len(opts.CRDDirectoryPaths) > 0 {
		if err := c.installCRDs(opts.CRDDirectoryPaths); err != nil {
			return err
		}
	}
	if opts.Workloads {
		if err := c.startWorkloads(ctx, bins, opts.Nodes); err != nil {
			return err
		}
	}
	return nil
}

// StartMany starts clusters in parallel, one per Options. If any fails it cancels the
// others' start, stops those that started, and returns the failures.
func StartMany(ctx context.Context, opts []Options) ([]*Cluster, error) {
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	clusters := make([]*Cluster, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() {
			if clusters[i], errs[i] = Start(startCtx, o); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	if errors.Join(errs...) == nil {
		return clusters, nil
	}
	var failures []error
	for i, err := range errs {
		// Leave out the starts cancelled here because another one failed.
		if err != nil && (ctx.Err() != nil || !errors.Is(err, context.Canceled)) {
			failures = append(failures, err)
		}
		if clusters[i] != nil {
			failures = append(failures, clusters[i].Stop())
		}
	}
	if err := errors.Join(failures...); err != nil {
		return nil, err
	}
	return nil, errors.Join(errs...)
}

// RESTConfig returns a new copy of the admin client configuration (group system:masters).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Kubeconfig returns the admin kubeconfig: the https://127.0.0.1:<port> server, its CA and a
// client certificate, all embedded.
func (c *Cluster) Kubeconfig() []byte { return slices.Clone(c.kubeconfig) }

// KubeconfigPath is the file holding Kubeconfig, for kubectl and other processes.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfigPath }

// Server is the API server URL, https://127.0.0.1:<port>.
func (c *Cluster) Server() string { return c.server }

// Dir is the directory holding the cluster's state and the logs of its processes.
func (c *Cluster) Dir() string { return c.dir }

// PIDs returns the process IDs of every process the cluster started, in start order.
func (c *Cluster) PIDs() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make([]int, len(c.procs))
	for i, p := range c.procs {
		pids[i] = p.pid()
	}
	return pids
}

// Stop stops the processes the cluster started, newest first: SIGTERM, then SIGKILL after
// Options.StopGracePeriod. It waits until they have exited and removes the cluster directory if
// Start created it. Stop is idempotent; later calls return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopping = true
		procs := slices.Clone(c.procs)
		removeDir := c.removeDir
		c.mu.Unlock()

		var errs []error
		for _, p := range slices.Backward(procs) {
			if err := p.stop(c.grace); err != nil {
				errs = append(errs, err)
			}
		}
		running.remove(c)
		if len(errs) == 0 && removeDir {
			if err := os.RemoveAll(c.dir); err != nil {
				errs = append(errs, fmt.Errorf("removing cluster directory: %w", err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			c.stopErr = fmt.Errorf("stopping cluster %q: %w", c.Name, err)
		}
		c.log.Info("cluster stopped", "error", c.stopErr)
	})
	return c.stopErr
}

// keepDir makes Stop keep a temporary cluster directory. It reports whether the directory is
// temporary, i.e. whether this changed anything.
func (c *Cluster) keepDir() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	temporary := c.removeDir
	c.removeDir = false
	return temporary
}

// run starts one of the cluster's processes and tracks it for Stop and PIDs.
func (c *Cluster) run(name, path string, args, env []string) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return nil, fmt.Errorf("not starting %s: cluster is stopping", name)
	}
	p, err := startProcess(name, path, c.dir, args, env)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	c.log.V(1).Info("started", "process", name, "pid", p.pid(), "log", p.logPath)
	return p, nil
}

// discard stops processes of a failed start attempt and forgets them.
func (c *Cluster) discard(procs ...*process) error {
	var errs []error
	for _, p := range slices.Backward(procs) {
		errs = append(errs, p.stop(c.grace))
	}
	c.mu.Lock()
	c.procs = slices.DeleteFunc(c.procs, func(p *process) bool { return slices.Contains(procs, p) })
	c.mu.Unlock()
	return errors.Join(errs...)
}

// exitedProcess returns the first of the cluster's processes that has exited, if any.
func (c *Cluster) exitedProcess() *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.exited() {
			return p
		}
	}
	return nil
}

// processExitedError reports a process that exited while the cluster was starting.
type processExitedError struct{ p *process }

func (e *processExitedError) Error() string { return e.p.exitError().Error() }

// waitUntil polls cond every 100ms until it reports true, any of the cluster's processes exits,
// or timeout passes. Errors from cond count as "not yet" (the server may still be coming up);
// the last one is part of the timeout error.
func (c *Cluster) waitUntil(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var lastErr error
	for {
		if p := c.exitedProcess(); p != nil {
			return fmt.Errorf("waiting for %s: %w", what, &processExitedError{p})
		}
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), lastErr)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-ticker.C:
		}
	}
}
