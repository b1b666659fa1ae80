package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/fleet/clustercache"
	"github.com/navarch-io/navarch/fleet/engine"
	"github.com/navarch-io/navarch/fleet/helm"
	"github.com/navarch-io/navarch/fleet/helm/repo"
	"github.com/navarch-io/navarch/fleet/source"
	"github.com/navarch-io/navarch/internal/appset"
	"github.com/navarch-io/navarch/internal/compact"
	"github.com/navarch-io/navarch/internal/credentials"
	"github.com/navarch-io/navarch/internal/eventrec"
	"github.com/navarch-io/navarch/internal/gitrepo"
	"github.com/navarch-io/navarch/internal/listenaddr"
	"github.com/navarch-io/navarch/internal/plugin"
	"github.com/navarch-io/navarch/internal/scheme"
	"github.com/navarch-io/navarch/internal/scm"
)

// Options configure the controller manager. The zero value of each field has a sensible
// default, except Config.
type Options struct {
	// Config reaches the management cluster.
	Config *rest.Config
	// MetricsAddr serves Prometheus metrics; "0" disables. Default ":8443".
	MetricsAddr string
	// MetricsInsecure serves metrics over plain HTTP without authentication, which is allowed
	// on a loopback address only. By default metrics are served over HTTPS, and each request
	// must carry a bearer token that the management cluster authenticates (TokenReview) and
	// authorizes for `get` on the non-resource URL /metrics (SubjectAccessReview).
	MetricsInsecure bool
	// MetricsCertDir holds tls.crt and tls.key for the metrics endpoint; empty means a
	// self-signed certificate generated at start.
	MetricsCertDir string
	// ProbeAddr serves /healthz and /readyz; "0" disables. Default "127.0.0.1:8081"; in a
	// Pod, bind the Pod's IP, which the kubelet probes.
	ProbeAddr string
	// PprofAddr serves Go's profiles (/debug/pprof/) over plain HTTP without authentication;
	// empty or "0" serves none. Bind it to loopback and reach it with kubectl port-forward.
	PprofAddr string
	// LeaderElection makes only one replica active at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the lease; default SystemNamespace.
	LeaderElectionNamespace string
	// Namespaces restricts the ApplicationSets and Applications watched; empty means all.
	Namespaces []string
	// SystemNamespace holds repository credential Secrets, and the ConfigMaps and token
	// Secrets of generator plugins. Default "navarch-system".
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
	// APIServerWorkers is the number of Applications synced at once per apiserver, over all
	// the Clusters that reach it with the same credentials. Default 32.
	APIServerWorkers int
	// ClusterQPS and ClusterBurst limit the client of each destination cluster. Defaults 200
	// and 400.
	ClusterQPS   float32
	ClusterBurst int
	// ClusterProbeInterval is how often each Cluster is probed. Default 30s.
	ClusterProbeInterval time.Duration
	// UnavailableRequeue is how soon an Application whose cluster is unavailable is routed
	// again without an event; the cluster's connection or readiness requeues it sooner.
	// Default 30s.
	UnavailableRequeue time.Duration
	// GitPollInterval is how often Applications look for new commits. Default 3m.
	GitPollInterval time.Duration
	// SelfHealBackoff is how long selfHeal waits after a sync before correcting drift again.
	// Default 2s.
	SelfHealBackoff time.Duration
	// WebhookAddr serves the GitHub webhook endpoint, /api/webhook, on this address (plain
	// HTTP: terminate TLS in front of it); empty, the default, serves none. Deliveries are
	// checked against the secret in the Secret WebhookSecretName of SystemNamespace; see
	// docs/webhooks.md.
	WebhookAddr string
	// WebhookQueueSize is how many webhook events may wait to be handled; a delivery beyond
	// is refused with 503. Default 256.
	WebhookQueueSize int
	// WebhookMaxPayload caps the body of a webhook delivery, in bytes; a larger one is refused
	// with 413. Default 1 MiB.
	WebhookMaxPayload int64
	// DisableNotifications turns off notifications (docs/notifications.md): the ConfigMap
	// navarch-notifications is then neither watched nor used.
	DisableNotifications bool
	// ShardClusters lets several replicas share the fleet (docs/scaling.md): each holds a
	// membership Lease, the Clusters are assigned to the live replicas by rendezvous hashing,
	// and a replica syncs a Cluster only while it holds that Cluster's Lease. ApplicationSets
	// are reconciled by the elected replica, so ShardClusters turns LeaderElection on. It
	// needs the application and cluster controllers.
	ShardClusters bool
	// ReplicaIdentity names this replica among those sharing the fleet; default the Pod's
	// name (POD_NAME, else the host name) and a random suffix.
	ReplicaIdentity string
	// LeaseDuration, RenewDeadline and RetryPeriod time the Cluster Leases of ShardClusters:
	// a replica that has not renewed its Leases for RenewDeadline stops syncing their
	// Clusters, and other replicas take them once LeaseDuration has passed. Defaults 15s, 10s
	// and 2s.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Logger is the root logger.
	Logger logr.Logger
}

func (o *Options) defaults() {
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8443"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = "127.0.0.1:8081"
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
	if o.ShardClusters {
		o.LeaderElection = true
	}
}

// compactCached returns the transform of the manager's cache, which holds every Application
// for the controller's lifetime: managed fields dropped, the status lists of Applications
// encoded (statusPacker), each Application's name and UID one copy for all its versions
// (names, which may be nil), repeated strings and blocks shared and slices cut to their length
// (internal/compact). Like any informer transform it is idempotent: an object transformed
// already is left as it is (see transformed).
func compactCached(packer *statusPacker, names *sharedNames) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if transformed(obj) {
			return obj, nil
		}
		obj, err := stripManagedFields(obj)
		if err != nil {
			return obj, err
		}
		app, isApp := obj.(*navarchv1.Application)
		if isApp {
			if err := packer.pack(app); err != nil {
				return obj, err
			}
		}
		compact.Value(obj)
		if isApp {
			names.share(app) // after compact, whose string table may keep copies of names too
		}
		return obj, nil
	}
}

var stripManagedFields = cache.TransformStripManagedFields()

// transformed reports whether obj has been through compactCached. The informers may pass an
// object twice: a list streamed by a watch is transformed as it arrives, and again as it
// replaces the informer's store (client-go's reflector and RealFIFO). The second pass must
// not write anything, since the first may have given obj blocks that cached objects share
// (internal/compact), which their readers read meanwhile. The API server gives every object
// managed fields, which the transform drops, or replaces with an Application's encoded
// status lists; an object received without any is left as it is too, uncompacted.
func transformed(obj any) bool {
	if app, ok := obj.(*navarchv1.Application); ok && packedLists(app) != nil {
		return true
	}
	o, ok := obj.(metav1.Object)
	return ok && len(o.GetManagedFields()) == 0
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

	packer, names := &statusPacker{}, &sharedNames{}
	cacheOpts := cache.Options{
		DefaultTransform: compactCached(packer, names),
		// Projects live in the controller's namespace only.
		ByObject: map[client.Object]cache.ByObject{
			&navarchv1.Project{}: {Namespaces: map[string]cache.Config{opts.SystemNamespace: {}}},
		},
	}
	if len(opts.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	metrics, err := metricsOptions(opts)
	if err != nil {
		return err
	}
	sch := scheme.New()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        sch,
		MapperProvider:                newMapperProvider(sch),
		Logger:                        opts.Logger,
		Cache:                         cacheOpts,
		NewCache:                      newStatusCache(packer),
		Metrics:                       metrics,
		HealthProbeBindAddress:        opts.ProbeAddr,
		PprofBindAddress:              opts.PprofAddr,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              "navarch-controller",
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: opts.ShardClusters,
		LeaseDuration:                 durationOrNil(opts.LeaseDuration),
		RenewDeadline:                 durationOrNil(opts.RenewDeadline),
		RetryPeriod:                   durationOrNil(opts.RetryPeriod),
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		// Run may be called again in one process (tests restart the controller); controller
		// names are unique within each manager anyway.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := shareAppNames(ctx, mgr.GetCache(), names); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}

	events, err := newEventRecorder(mgr, opts.Logger.WithName("events"))
	if err != nil {
		return err
	}

	creds, err := credentialStore(cfg, mgr, opts.SystemNamespace)
	if err != nil {
		return err
	}
	reader, err := gitrepo.New(gitrepo.Options{
		CacheDir:         opts.GitCacheDir,
		KnownHosts:       creds.KnownHosts,
		KnownHostsSource: "ConfigMap " + credentials.KnownHostsConfigMap,
	})
	if err != nil {
		return err
	}
	defer reader.Close()
	chartCache := ""
	if opts.GitCacheDir != "" {
		chartCache = filepath.Join(opts.GitCacheDir, "charts")
	}
	charts := repo.New(repo.Options{
		CacheDir:    chartCache,
		Credentials: creds.LookupChartRepository,
		IndexTTL:    opts.GitPollInterval,
	})
	// Helm's library logs values (which may be secrets) through the process's default loggers.
	helm.DiscardLibraryLogs()
	renderer := helm.New(helm.Options{Charts: source.RecordChartLookups(charts)})
	enabled := func(name string) bool { return len(opts.Controllers) == 0 || slices.Contains(opts.Controllers, name) }
	for _, name := range opts.Controllers {
		if !slices.Contains([]string{"applicationset", "application", "cluster"}, name) {
			return fmt.Errorf("controller: unknown controller %q (want applicationset, application or cluster)", name)
		}
	}
	if opts.ShardClusters && (!enabled("application") || !enabled("cluster")) {
		return errors.New("controller: sharding the Clusters among replicas needs the application and cluster controllers")
	}
	fetcher := source.New(source.Options{
		Git:          reader,
		Credentials:  creds.Lookup,
		Charts:       charts,
		Helm:         renderer,
		PollInterval: opts.GitPollInterval,
	})
	hooks := newWebhookReceiver(opts, enabled("application"), enabled("applicationset"))
	projs := &projects{client: mgr.GetClient(), namespace: opts.SystemNamespace}
	if err := ensureDefaultProject(ctx, mgr.GetClient(), opts.SystemNamespace); err != nil && ctx.Err() == nil {
		// Not fatal: Applications of the default Project say that it is missing.
		opts.Logger.Error(err, "The default Project could not be created")
	}
	apps := &ApplicationReconciler{
		Client:             mgr.GetClient(),
		UnavailableRequeue: opts.UnavailableRequeue,
		Engine:             engine.New(engine.Options{Source: fetcher, SelfHealBackoff: opts.SelfHealBackoff, Projects: projs}),
		Events:             events,
	}
	cacheOptions := clustercache.Options{
		InCluster:        cfg,
		Handler:          apps.Process,
		Quiet:            apps.Quiet,
		Workers:          opts.ClusterWorkers,
		APIServerWorkers: opts.APIServerWorkers,
		QPS:              opts.ClusterQPS,
		Burst:            opts.ClusterBurst,
		Logger:           opts.Logger.WithName("clusters"),
		OnReady:          func(name string) { apps.ClusterReady(ctx, name) },
	}
	if opts.ShardClusters {
		if apps.Shards, err = newShards(ctx, mgr, cfg, opts); err != nil {
			return fmt.Errorf("join the replicas sharing the fleet: %w", err)
		}
		cacheOptions.Owns = apps.Shards.Owns
		opts.Logger.Info("Sharing the Clusters with the other replicas through Leases", "replica", apps.Shards.Identity(), "namespace", opts.SystemNamespace)
	}
	apps.Clusters = clustercache.New(ctx, cacheOptions)
	if apps.Shards != nil {
		apps.Shards.apps, apps.Shards.clusters = apps, apps.Clusters
		if hooks != nil {
			hooks.relay = apps.relayRefresh
		}
	}
	if enabled("application") {
		if err := apps.SetupWithManager(mgr, hooks.applicationSources()...); err != nil {
			return fmt.Errorf("set up the Application controller: %w", err)
		}
	}
	if enabled("cluster") {
		if err := (&ClusterReconciler{
			Client:        mgr.GetClient(),
			SecretReader:  mgr.GetAPIReader(),
			Clusters:      apps.Clusters,
			Shards:        apps.Shards,
			ProbeInterval: opts.ClusterProbeInterval,
		}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("set up the Cluster controller: %w", err)
		}
	}
	var github *scm.GitHub
	if enabled("applicationset") {
		apiReader := mgr.GetAPIReader()
		github = scm.New(scm.Options{Secrets: func(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error) {
			secret := &corev1.Secret{}
			return secret, apiReader.Get(ctx, key, secret)
		}})
		if err := (&ApplicationSetReconciler{
			Client:           mgr.GetClient(),
			Projects:         projs,
			Git:              appset.GitReader(reader, creds.Lookup),
			GitHub:           github,
			Plugins:          &plugin.Caller{Reader: apiReader, Namespace: opts.SystemNamespace},
			Events:           events,
			WriteConcurrency: opts.WriteConcurrency,
			MaxParamSets:     opts.MaxParamSets,
			ErrorRequeue:     opts.ErrorRequeue,
		}).SetupWithManager(mgr, opts.ApplicationSetConcurrency, hooks.applicationSetSources()...); err != nil {
			return fmt.Errorf("set up the ApplicationSet controller: %w", err)
		}
	}
	if err := hooks.setup(mgr, cfg, fetcher, github); err != nil {
		return fmt.Errorf("set up the webhook endpoint: %w", err)
	}
	if !opts.DisableNotifications {
		if err := setupNotifications(mgr, cfg, opts, events, packer); err != nil {
			return fmt.Errorf("set up notifications: %w", err)
		}
	}
	return mgr.Start(ctx)
}

// +kubebuilder:rbac:groups="",namespace=navarch-system,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=navarch-system,resources=configmaps,verbs=get;list;watch
// Generator plugins are configured by ConfigMaps of the system namespace whose token refers to
// a Secret there; both are read one by one, uncached (get, above).
// The GitHub credentials of pullRequest and scmProvider generators (tokenRef, appSecretName)
// are Secrets in each ApplicationSet's own namespace, read one by one, never listed.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// credentialStore returns the repository credential lookup, reading through a cache of only
// the labelled Secrets of the system namespace, which the manager starts and stops.
func credentialStore(cfg *rest.Config, mgr ctrl.Manager, namespace string) (*credentials.Store, error) {
	secrets, err := cache.New(cfg, cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {
				Label: labels.SelectorFromSet(labels.Set{credentials.LabelSecretType: credentials.SecretTypeRepository}),
			},
			&corev1.ConfigMap{}: {
				Field: fields.OneTermEqualSelector("metadata.name", credentials.KnownHostsConfigMap),
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create the repository credential cache: %w", err)
	}
	// Every replica that syncs reads credentials, elected or not (--shard-clusters).
	if err := mgr.Add(everyReplica{secrets}); err != nil {
		return nil, err
	}
	return &credentials.Store{Reader: secrets, Namespace: namespace}, nil
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves metrics over HTTPS behind Kubernetes authentication and
// authorization, or, when asked, over plain HTTP on a loopback address.
func metricsOptions(opts Options) (metricsserver.Options, error) {
	if opts.MetricsAddr == "0" {
		return metricsserver.Options{BindAddress: "0"}, nil
	}
	if opts.MetricsInsecure {
		if !listenaddr.Loopback(opts.MetricsAddr) {
			return metricsserver.Options{}, fmt.Errorf("controller: metrics without authentication may only be served on a loopback address, not %q: "+
				"bind 127.0.0.1 or serve them securely", opts.MetricsAddr)
		}
		return metricsserver.Options{BindAddress: opts.MetricsAddr, FilterProvider: uncompressed(nil)}, nil
	}
	return metricsserver.Options{
		BindAddress:    opts.MetricsAddr,
		SecureServing:  true,
		CertDir:        opts.MetricsCertDir,
		FilterProvider: uncompressed(metricsAuth),
	}, nil
}

// filterProvider is the type of metricsserver.Options.FilterProvider.
type filterProvider = func(*rest.Config, *http.Client) (metricsserver.Filter, error)

// uncompressed wraps the metrics server's filter, if any, so that the metrics are served
// uncompressed whatever the caller accepts. Compressing them, Prometheus's handler takes a
// gzip compressor of about 0.8 MB from a pool that each scrape (every 15 to 60 seconds) keeps
// alive: as much memory as 600 Applications take in the cache, for a page of text that a
// scrape reads over the cluster's network.
func uncompressed(inner filterProvider) filterProvider {
	return func(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
		var filter metricsserver.Filter
		if inner != nil {
			var err error
			if filter, err = inner(cfg, httpClient); err != nil {
				return nil, err
			}
		}
		return func(log logr.Logger, next http.Handler) (http.Handler, error) {
			if filter != nil {
				var err error
				if next, err = filter(log, next); err != nil {
					return nil, err
				}
			}
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				req.Header.Del("Accept-Encoding")
				next.ServeHTTP(w, req)
			}), nil
		}, nil
	}
}

// newEventRecorder adds to mgr the writer of the controllers' Events, as "navarch". Events
// are a built-in kind, so they travel as protobuf, which the management apiserver decodes and
// encodes for less than JSON: a sync of 10,000 Applications writes 10,000 of them.
func newEventRecorder(mgr ctrl.Manager, log logr.Logger) (*eventrec.Recorder, error) {
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := eventsclient.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("controller: the Events client: %w", err)
	}
	events := eventrec.New(client, mgr.GetScheme(), "navarch", log)
	return events, mgr.Add(events)
}

// durationOrNil leaves a zero duration to controller-runtime's default.
func durationOrNil(d time.Duration) *time.Duration {
	if d <= 0 {
		return nil
	}
	return &d
}
