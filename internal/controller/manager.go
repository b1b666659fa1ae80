package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/engine"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/appset"
	"github.com/navarch-io/navarch/internal/gitrepo"
	"github.com/navarch-io/navarch/internal/scheme"
)

// Options configure the controller manager. The zero value of each field has a sensible
// default, except Config.
type Options struct {
	// Config reaches the management cluster.
	Config *rest.Config
	// MetricsAddr serves Prometheus metrics; "0" disables. Default ":8080".
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz; "0" disables. Default ":8081".
	ProbeAddr string
	// LeaderElection makes only one replica active at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the lease; default SystemNamespace.
	LeaderElectionNamespace string
	// Namespaces restricts the ApplicationSets and Applications watched; empty means all.
	Namespaces []string
	// SystemNamespace holds repository credential Secrets. Default "navarch-system".
	SystemNamespace string
	// ApplicationSetConcurrency is the number of ApplicationSets reconciled at once. Default 4.
	ApplicationSetConcurrency int
	// WriteConcurrency bounds the Application writes of one pass. Default 16.
	WriteConcurrency int
	// QPS and Burst of the management cluster client. Defaults 500 and 1000: the client must
	// not be the bottleneck; the apiserver protects itself with priority and fairness.
	QPS   float32
	Burst int
	// GitCacheDir holds the Git mirrors; empty means a temporary directory.
	GitCacheDir string
	// MaxParamSets caps the parameter sets of one ApplicationSet.
	MaxParamSets int
	// ErrorRequeue is how soon a failed pass is retried. Default 10s.
	ErrorRequeue time.Duration
	// Controllers lists the controllers to run: applicationset, application, cluster.
	// Empty means all.
	Controllers []string
	// ClusterWorkers is the number of Applications synced at once per cluster. Default 8.
	ClusterWorkers int
	// ClusterQPS and ClusterBurst limit the client of each destination cluster. Defaults 200
	// and 400.
	ClusterQPS   float32
	ClusterBurst int
	// ClusterProbeInterval is how often each Cluster is probed. Default 30s.
	ClusterProbeInterval time.Duration
	// GitPollInterval is how often Applications look for new commits. Default 3m.
	GitPollInterval time.Duration
	// SelfHealBackoff is how long selfHeal waits after a sync before correcting drift again.
	// Default 2s.
	SelfHealBackoff time.Duration
	// Logger is the root logger.
	Logger logr.Logger
}

func (o *Options) defaults() {
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8080"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = ":8081"
	}
	if o.SystemNamespace == "" {
		o.SystemNamespace = "navarch-system"
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.SystemNamespace
	}
	if o.ApplicationSetConcurrency <= 0 {
		o.ApplicationSetConcurrency = 4
	}
	if o.WriteConcurrency <= 0 {
		o.WriteConcurrency = 16
	}
	if o.QPS <= 0 {
		o.QPS = 500
	}
	if o.Burst <= 0 {
		o.Burst = 1000
	}
	if o.ErrorRequeue <= 0 {
		o.ErrorRequeue = 10 * time.Second
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
}

// Run starts the controller manager and blocks until ctx is done. `navarch controller` and the
// integration tests both call it, so tests exercise the production wiring.
func Run(ctx context.Context, opts Options) error {
	if opts.Config == nil {
		return errors.New("controller: no management cluster configuration")
	}
	opts.defaults()
	cfg := rest.CopyConfig(opts.Config)
	cfg.QPS, cfg.Burst = opts.QPS, opts.Burst

	cacheOpts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if len(opts.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.New(),
		Logger:                  opts.Logger,
		Cache:                   cacheOpts,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsAddr},
		HealthProbeBindAddress:  opts.ProbeAddr,
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "navarch-controller",
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		Client:                  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// Run may be called again in one process (tests restart the controller); controller
		// names are unique within each manager anyway.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}

	reader, err := gitrepo.New(gitrepo.Options{CacheDir: opts.GitCacheDir})
	if err != nil {
		return err
	}
	defer reader.Close()
	creds := repoCredentials{c: mgr.GetAPIReader(), namespace: opts.SystemNamespace}
	enabled := func(name string) bool { return len(opts.Controllers) == 0 || slices.Contains(opts.Controllers, name) }
	for _, name := range opts.Controllers {
		if !slices.Contains([]string{"applicationset", "application", "cluster"}, name) {
			return fmt.Errorf("controller: unknown controller %q (want applicationset, application or cluster)", name)
		}
	}
	fetcher := source.New(source.Options{
		Git:          reader,
		Credentials:  creds.lookup,
		PollInterval: opts.GitPollInterval,
	})
	apps := &ApplicationReconciler{
		Client: mgr.GetClient(),
		Engine: engine.New(engine.Options{Source: fetcher, SelfHealBackoff: opts.SelfHealBackoff}),
		Events: mgr.GetEventRecorder("navarch"),
	}
	apps.Clusters = clustercache.New(ctx, clustercache.Options{
		InCluster: cfg,
		Handler:   apps.Process,
		Workers:   opts.ClusterWorkers,
		QPS:       opts.ClusterQPS,
		Burst:     opts.ClusterBurst,
		Logger:    opts.Logger.WithName("clusters"),
	})
	if enabled("application") {
		if err := apps.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the Application controller: %w", err)
		}
	}
	if enabled("cluster") {
		if err := (&ClusterReconciler{
			Client:        mgr.GetClient(),
			SecretReader:  mgr.GetAPIReader(),
			Clusters:      apps.Clusters,
			ProbeInterval: opts.ClusterProbeInterval,
		}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the Cluster controller: %w", err)
		}
	}
	if !enabled("applicationset") {
		return mgr.Start(ctx)
	}
	if err := (&ApplicationSetReconciler{
		Client:           mgr.GetClient(),
		Git:              appset.GitReader(reader, creds.lookup),
		WriteConcurrency: opts.WriteConcurrency,
		MaxParamSets:     opts.MaxParamSets,
		ErrorRequeue:     opts.ErrorRequeue,
	}).SetupWithManager(mgr, opts.ApplicationSetConcurrency); err != nil {
		return fmt.Errorf("set up the ApplicationSet controller: %w", err)
	}
	return mgr.Start(ctx)
}

// repoCredentials finds the credentials of a repository in Secrets of the system namespace
// labelled navarch.io/secret-type=repository, whose `url` is the repository URL or a prefix of
// it, with `username` and `password` (or token) keys. The longest matching URL wins.
type repoCredentials struct {
	c         client.Reader
	namespace string
}

// LabelSecretType marks credential Secrets; value `repository`.
const LabelSecretType = "navarch.io/secret-type"

func (r repoCredentials) lookup(ctx context.Context, repoURL string) (*gitrepo.Credentials, error) {
	var secrets corev1.SecretList
	if err := r.c.List(ctx, &secrets, client.InNamespace(r.namespace), client.MatchingLabels{LabelSecretType: "repository"}); err != nil {
		return nil, fmt.Errorf("list repository credentials in %s: %w", r.namespace, err)
	}
	var best *corev1.Secret
	for i := range secrets.Items {
		s := &secrets.Items[i]
		url := strings.TrimSuffix(string(s.Data["url"]), "/")
		if url != "" && strings.HasPrefix(repoURL, url) && (best == nil || len(url) > len(best.Data["url"])) {
			best = s
		}
	}
	if best == nil {
		return nil, nil
	}
	return &gitrepo.Credentials{Username: string(best.Data["username"]), Password: string(best.Data["password"])}, nil
}
