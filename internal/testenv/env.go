package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/config/crd"
	"github.com/navarch-io/navarch/internal/gitserver"
	"github.com/navarch-io/navarch/internal/localcluster"
	"github.com/navarch-io/navarch/internal/scheme"
)

// SystemNamespace is navarch's namespace in the management cluster, which holds the kubeconfig
// Secrets of the registered workload clusters and the repository credential Secrets.
const SystemNamespace = "navarch-system"

// startTimeout bounds Start, generous for a loaded machine starting several clusters.
const startTimeout = 4 * time.Minute

// Options say what the tests of a package share.
type Options struct {
	// Name names the management cluster in errors and logs. Default "management".
	Name string
	// ManagementWorkloads also runs kube-controller-manager, kube-scheduler and kwok in the
	// management cluster (see localcluster.Options.Workloads), e.g. so that the garbage
	// collector deletes the objects of a deleted owner, as in production. Without it the
	// management cluster is a control plane only.
	ManagementWorkloads bool
	// Workloads names the workload clusters to start (in workload mode) and register in the
	// management cluster as Clusters.
	Workloads []string
	// Git starts a Git server, serving over HTTP and over SSH.
	Git bool
}

// Env is a running test environment: a management cluster with navarch's CRDs and
// SystemNamespace, as after an installation, the workload clusters registered in it, and a
// Git server.
type Env struct {
	// Management is the management cluster.
	Management *localcluster.Cluster
	// Client reaches the management cluster, with navarch's types in its scheme.
	Client client.WithWatch
	// Workloads are the workload clusters by name, each registered as the Cluster of that
	// name.
	Workloads map[string]*Workload
	// Git is the Git server, if Options.Git.
	Git *gitserver.Server
	// Logger logs errors only, to stderr: the tests provoke failures on purpose. It is
	// controller-runtime's logger too; hand it to the controller under test.
	Logger logr.Logger

	gitRoot  string
	clusters []*localcluster.Cluster
	release  func()
	stopOnce sync.Once
	stopErr  error
}

// Workload is a workload cluster and a client for it.
type Workload struct {
	*localcluster.Cluster
	// Client reaches the workload cluster.
	Client client.Client
}

// Start starts the environment opts describe and returns once it is ready; ctx bounds only
// the start. SIGINT and SIGTERM stop it (see localcluster.StopOnSignal). If Start fails, it
// stops whatever it started.
func Start(ctx context.Context, opts Options) (*Env, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if opts.Name == "" {
		opts.Name = "management"
	}
	env := &Env{
		Workloads: map[string]*Workload{},
		Logger:    zap.New(zap.Level(zapcore.ErrorLevel), zap.WriteTo(os.Stderr)),
		release:   localcluster.StopOnSignal(),
	}
	ctrl.SetLogger(env.Logger)
	if err := env.start(ctx, opts); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return env, nil
}

func (e *Env) start(ctx context.Context, opts Options) error {
	clusterOpts := []localcluster.Options{{Name: opts.Name, Workloads: opts.ManagementWorkloads}}
	for _, name := range opts.Workloads {
		clusterOpts = append(clusterOpts, localcluster.Options{Name: name, Workloads: true})
	}
	clusters, err := localcluster.StartMany(ctx, clusterOpts)
	if err != nil {
		return fmt.Errorf("start clusters: %w", err)
	}
	e.clusters, e.Management = clusters, clusters[0]
	if err := crd.Install(ctx, e.Management.RESTConfig()); err != nil {
		return fmt.Errorf("install CRDs into %s: %w", e.Management.Name, err)
	}
	if e.Client, err = client.NewWithWatch(e.Management.RESTConfig(), client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}

	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}); err != nil {
		return fmt.Errorf("create namespace %s: %w", SystemNamespace, err)
	}
	for _, c := range clusters[1:] {
		w := &Workload{Cluster: c}
		if w.Client, err = client.New(c.RESTConfig(), client.Options{Scheme: scheme.New()}); err != nil {
			return err
		}
		if err := e.register(ctx, c); err != nil {
			return fmt.Errorf("register %s: %w", c.Name, err)
		}
		e.Workloads[c.Name] = w
	}

	if opts.Git {
		if e.gitRoot, err = os.MkdirTemp("", "navarch-testenv-git-"); err != nil {
			return err
		}
		if e.Git, err = gitserver.Start(gitserver.Options{Root: e.gitRoot, SSHAddr: gitserver.DefaultAddr}); err != nil {
			return fmt.Errorf("start git server: %w", err)
		}
	}
	return nil
}

// register adds a workload cluster to the management cluster as a kubeconfig Secret and a
// Cluster, as `navarch cluster add` does. The Cluster is labelled region=<its name>.
func (e *Env) register(ctx context.Context, c *localcluster.Cluster) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name + "-kubeconfig", Namespace: SystemNamespace},
		Data:       map[string][]byte{"value": c.Kubeconfig()},
	}
	if err := e.Client.Create(ctx, secret); err != nil {
		return err
	}
	return e.Client.Create(ctx, &navarchv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: map[string]string{"region": c.Name}},
		Spec: navarchv1.ClusterSpec{
			Server:              c.Server(),
			KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: SystemNamespace, Name: secret.Name, Key: "value"},
		},
	})
}

// Stop stops the Git server and the clusters and removes their files. Stop the controller
// under test first. Stop is idempotent; later calls return the first call's result.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		var errs []error
		if e.Git != nil {
			errs = append(errs, e.Git.Close())
		}
		if e.gitRoot != "" {
			errs = append(errs, os.RemoveAll(e.gitRoot))
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range e.clusters {
			wg.Go(func() {
				if err := c.Stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		e.release()
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}
