package main

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/navarch-io/navarch/internal/dashboard"
)

func newDashboardCommand() *cobra.Command {
	var (
		api  apiFlags
		opts dashboard.Options
	)
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the web dashboard: the fleet matrix, Applications, ApplicationSets and Clusters, live",
		Long: `dashboard serves a web dashboard of the management cluster: the cluster × application matrix,
each Application (resources, differences from Git, the operation's timeline, history), each
ApplicationSet (generated Applications, rollout steps, pull-request previews) and the Clusters.
Pages update live as the cluster changes, and offer the CLI's actions (sync, refresh, rollback,
terminate, promote, pause, resume), each behind a confirmation.

By default it listens on 127.0.0.1:8080 and uses your kubeconfig, so your own RBAC applies to
every read and action. To serve a team on another address, authentication is required:
--auth-token-file (a bearer token or the login form; actions then use the dashboard's own
credentials) or --auth-proxy-header (an authenticating proxy names the user, whom the
dashboard impersonates on every Kubernetes call). See docs/dashboard.md.`,
		Example: `  navarch dashboard
  navarch dashboard --address 127.0.0.1:9000 -n apps
  navarch dashboard --address 0.0.0.0:8080 --auth-token-file /etc/navarch/dashboard-token
  navarch dashboard --address 0.0.0.0:8080 --auth-proxy-header X-Forwarded-User --auth-proxy-groups-header X-Forwarded-Groups`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := net.SplitHostPort(opts.Address); err != nil {
				return usageError{fmt.Errorf("--address must be host:port, got %q", opts.Address)}
			}
			if err := dashboard.CheckAuth(opts); err != nil {
				return usageError{err}
			}
			cfg, err := api.kube.restConfig()
			if err != nil {
				return err
			}
			logger := zap.New(zap.Level(zapcore.InfoLevel), zap.WriteTo(cmd.ErrOrStderr()))
			ctrl.SetLogger(logger)
			opts.Config, opts.Scheme, opts.Namespace, opts.Log = cfg, cliScheme, api.namespace, logger
			opts.Username = api.kube.username()
			ctx := cmd.Context()
			d, err := dashboard.New(ctx, opts)
			if err != nil {
				return err
			}
			l, err := net.Listen("tcp", opts.Address)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", opts.Address, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "navarch dashboard: http://%s/ (Ctrl-C to stop)\n", l.Addr())
			return d.Serve(ctx, l)
		},
	}
	api.addTo(cmd.Flags())
	cmd.Flags().Lookup("namespace").Usage = "only this namespace's Applications, ApplicationSets and Projects (default: every namespace)"
	cmd.Flags().StringVar(&opts.Address, "address", "127.0.0.1:8080", "address to listen on, host:port; a non-loopback address needs --auth-token-file or --auth-proxy-header")
	cmd.Flags().StringVar(&opts.SystemNamespace, "system-namespace", systemNamespace, "the controller's namespace, whose Leases say which replica syncs each Cluster")
	cmd.Flags().BoolVar(&opts.ReadOnly, "read-only", false, "hide and refuse the actions (sync, refresh, rollback, terminate, promote, pause, resume)")
	cmd.Flags().StringVar(&opts.TokenFile, "auth-token-file", "", "file holding the bearer token every request must present (or enter in the login form)")
	cmd.Flags().StringVar(&opts.ProxyUserHeader, "auth-proxy-header", "", "header in which an authenticating proxy names the user, e.g. X-Forwarded-User; the dashboard impersonates that user")
	cmd.Flags().StringVar(&opts.ProxyGroupsHeader, "auth-proxy-groups-header", "", "header in which the proxy lists the user's groups (comma-separated or repeated), e.g. X-Forwarded-Groups")
	return cmd
}
