package main

import (
	"flag"
	"os"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/navarch-io/navarch/internal/controller"
)

func newControllerCommand() *cobra.Command {
	var (
		opts          controller.Options
		metricsSecure bool
		notifications bool
		kube          kubeFlags
		zapOp         = zap.Options{}
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the navarch controllers against the management cluster",
		Long: `controller runs navarch's controllers in one controller-runtime manager: the ApplicationSet
controller turns ApplicationSets into Applications; the Cluster controller connects to and probes
every registered Cluster; the Application controller syncs each Application to its cluster,
through a work queue per cluster. --controllers runs a subset. With --shard-clusters several
replicas share the Clusters, each syncing its share (docs/scaling.md). With --webhook-bind-address it
also receives GitHub webhooks, so a push or a pull-request change is acted on at once instead of
at the next poll (docs/webhooks.md). In a cluster it uses the in-cluster configuration; outside,
the kubeconfig like kubectl.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := kube.restConfig()
			if err != nil {
				return err
			}
			logger := newLogger(zapOp)
			ctrl.SetLogger(logger)
			setMemoryLimit(logger, cgroupMemoryMax)
			setGCPercent()
			sampleHeapOnlyWhenServed(opts.PprofAddr != "", os.Getenv("GODEBUG"))
			go releaseAtRest(cmd.Context(), logger, releaseInterval)
			opts.Config, opts.Logger = cfg, logger
			opts.MetricsInsecure = !metricsSecure
			opts.DisableNotifications = !notifications
			return controller.Run(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	kube.addTo(f)
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8443", `address of the Prometheus metrics endpoint; "0" disables it`)
	f.BoolVar(&metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to callers the management cluster authenticates and authorizes for GET /metrics; false serves plain HTTP, on a loopback address only")
	f.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate)")
	f.StringVar(&opts.ProbeAddr, "health-probe-bind-address", "127.0.0.1:8081", `address of /healthz and /readyz; in a Pod, the Pod's IP, which the kubelet probes; "0" disables them`)
	f.BoolVar(&opts.LeaderElection, "leader-elect", false, "elect a leader so only one replica is active")
	f.BoolVar(&opts.ShardClusters, "shard-clusters", false, "share the Clusters among the replicas started with this flag, each syncing its share, coordinated by Leases in --system-namespace; the ApplicationSets go to the elected replica (implies --leader-elect; docs/scaling.md)")
	f.StringVar(&opts.ReplicaIdentity, "replica-identity", "", "this replica's name among those sharing the fleet (default: $POD_NAME or the host name, and a random suffix)")
	f.DurationVar(&opts.LeaseDuration, "lease-duration", 15*time.Second, "how long the other replicas wait after a replica's last Lease renewal before taking over its Clusters, or its leadership")
	f.DurationVar(&opts.RenewDeadline, "renew-deadline", 10*time.Second, "how long a replica keeps syncing a Cluster, or leading, without renewing its Lease; less than --lease-duration minus --retry-period")
	f.DurationVar(&opts.RetryPeriod, "retry-period", 2*time.Second, "how often Leases are renewed and the replicas looked at")
	f.StringVar(&opts.SystemNamespace, "system-namespace", "navarch-system", "namespace of the leader lease, the repository credential Secrets and the webhook Secret")
	f.StringSliceVar(&opts.Namespaces, "namespaces", nil, "watch only these namespaces (default: all)")
	f.IntVar(&opts.ApplicationSetConcurrency, "applicationset-concurrency", 4, "ApplicationSets reconciled at once")
	f.IntVar(&opts.WriteConcurrency, "write-concurrency", 16, "Application writes in flight per ApplicationSet pass")
	f.Float32Var(&opts.QPS, "kube-api-qps", 500, "queries per second to the management cluster")
	f.IntVar(&opts.Burst, "kube-api-burst", 1000, "burst of queries to the management cluster")
	f.StringVar(&opts.GitCacheDir, "git-cache-dir", "", "directory for Git mirrors (default: a temporary directory)")
	f.IntVar(&opts.MaxParamSets, "max-param-sets", 10000, "cap on parameter sets per ApplicationSet")
	f.DurationVar(&opts.ErrorRequeue, "error-requeue", 0, "how soon a failed pass is retried (default 10s)")
	f.StringSliceVar(&opts.Controllers, "controllers", nil, "controllers to run: applicationset, application, cluster (default: all)")
	f.IntVar(&opts.ClusterWorkers, "cluster-workers", 8, "Applications synced at once per destination cluster")
	f.IntVar(&opts.APIServerWorkers, "apiserver-workers", 32, "Applications synced at once per apiserver, over the destination clusters that reach it with the same credentials")
	f.Float32Var(&opts.ClusterQPS, "cluster-api-qps", 200, "queries per second to each destination cluster")
	f.IntVar(&opts.ClusterBurst, "cluster-api-burst", 400, "burst of queries to each destination cluster")
	f.DurationVar(&opts.ClusterProbeInterval, "cluster-probe-interval", 30*time.Second, "how often each Cluster is probed")
	f.DurationVar(&opts.GitPollInterval, "git-poll-interval", 3*time.Minute, "how often Applications look for new commits")
	f.DurationVar(&opts.SelfHealBackoff, "self-heal-backoff", 2*time.Second, "how long selfHeal waits after a sync before correcting drift again")
	f.StringVar(&opts.WebhookAddr, "webhook-bind-address", "", `address of the GitHub webhook endpoint /api/webhook, e.g. ":8090" (plain HTTP; deliveries must be signed with the secret in Secret navarch-webhook, key github.secret, of --system-namespace; see docs/webhooks.md); empty serves none`)
	f.StringVar(&opts.PprofAddr, "pprof-bind-address", "", `address of Go's profiling endpoint /debug/pprof/ (plain HTTP, unauthenticated: bind loopback, e.g. "127.0.0.1:6060", and use kubectl port-forward); empty serves none`)
	f.IntVar(&opts.WebhookQueueSize, "webhook-queue-size", 256, "webhook events that may wait to be handled; deliveries beyond are refused with 503")
	f.Int64Var(&opts.WebhookMaxPayload, "webhook-max-payload-bytes", 1<<20, "largest webhook delivery accepted; larger ones are refused with 413")
	f.BoolVar(&notifications, "notifications", true, "send the notifications configured by the ConfigMap and Secret navarch-notifications of --system-namespace (docs/notifications.md); false watches neither")
	logFlags := flag.NewFlagSet("log", flag.ContinueOnError)
	zapOp.BindFlags(logFlags)
	f.AddGoFlagSet(logFlags)
	return cmd
}
