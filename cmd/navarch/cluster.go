package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
	"github.com/navarch-io/navarch/internal/membership"
)

// systemNamespace is where navarch keeps the kubeconfig Secrets of Clusters.
const systemNamespace = "navarch-system"

// kubeconfigKey is the Secret key that holds a Cluster's kubeconfig.
const kubeconfigKey = "value"

func newClusterCommand() *cobra.Command {
	return commandGroup("cluster", "List and register the Clusters navarch deploys to",
		`cluster works with the Cluster objects of the management cluster: each names a workload
cluster and the Secret holding its kubeconfig. The controller probes every Cluster and reports
whether it is Ready.`,
		[]string{"clusters"},
		newClusterListCommand(), newClusterAddCommand())
}

func newClusterListCommand() *cobra.Command {
	var (
		kube      kubeFlags
		output    string
		selector  string
		namespace string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the registered Clusters and whether the controller can reach them",
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, "table", "wide", "yaml", "json"); err != nil {
				return err
			}
			sel, err := labels.Parse(selector)
			if err != nil {
				return usageError{fmt.Errorf("--selector: %w", err)}
			}
			c, err := kube.client()
			if err != nil {
				return err
			}
			var list navarchv1.ClusterList
			if err := c.List(cmd.Context(), &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
				return fmt.Errorf("list Clusters: %w", err)
			}
			slices.SortFunc(list.Items, func(a, b navarchv1.Cluster) int { return strings.Compare(a.Name, b.Name) })
			out := cmd.OutOrStdout()
			switch output {
			case "yaml", "json":
				objs := make([]client.Object, len(list.Items))
				for i := range list.Items {
					objs[i] = &list.Items[i]
				}
				return printObjects(out, output, true, objs...)
			}
			if len(list.Items) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "No Clusters registered; add one with: navarch cluster add CONTEXT")
				return nil
			}
			owners := replicaOwners(cmd.Context(), c, namespace, cmd.ErrOrStderr())
			return printTable(out, clusterListRows(list.Items, owners, output == "wide", time.Now(), paletteFor(out)))
		},
	}
	kube.addTo(cmd.Flags())
	cmd.Flags().StringVar(&namespace, "system-namespace", systemNamespace, "the controller's namespace, whose Leases say which replica syncs each Cluster")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table|wide|yaml|json")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, e.g. env=prod")
	return cmd
}

// replicaOwners reads which controller replica syncs each Cluster, when replicas share the
// fleet (docs/scaling.md); none otherwise, or when the Leases cannot be read, which it says on
// stderr.
func replicaOwners(ctx context.Context, c client.Reader, namespace string, stderr io.Writer) map[string]membership.Holder {
	owners, err := membership.Holders(ctx, c, namespace, time.Now())
	if apierrors.IsForbidden(err) {
		return nil // not allowed to read the Leases: the column is left out
	}
	if err != nil {
		fmt.Fprintf(stderr, "warning: which replica syncs each Cluster is unknown: list Leases in %s: %v\n", namespace, err)
		return nil
	}
	return owners
}

// clusterListRows is the table of cluster list; owners, when replicas share the fleet, add
// the column of the replica syncing each Cluster.
func clusterListRows(clusters []navarchv1.Cluster, owners map[string]membership.Holder, wide bool, now time.Time, p palette) [][]string {
	header := []string{"NAME", "SERVER", "READY", "REASON", "VERSION", "LABELS", "CHANGED"}
	if len(owners) > 0 {
		header = append(header, "REPLICA")
	}
	if wide {
		header = append(header, "SECRET", "MESSAGE")
	}
	rows := [][]string{header}
	for i := range clusters {
		cl := &clusters[i]
		ready, reason, message := "-", "-", ""
		if c := meta.FindStatusCondition(cl.Status.Conditions, navarchv1.ConditionReady); c != nil {
			ready, reason, message = p.condition(string(c.Status), "True"), orDash(c.Reason), c.Message
		}
		probe := "-"
		if t := cl.Status.LastProbeTime; t != nil {
			probe = ago(now, t.Time) + " ago"
		}
		server := cl.Spec.Server
		if server == "" && cl.Spec.InCluster {
			server = "(in-cluster)"
		}
		row := []string{cl.Name, orDash(server), ready, reason, orDash(cl.Status.ServerVersion), orDash(labelList(cl.Labels)), probe}
		if len(owners) > 0 {
			owner := "(none)"
			if h, ok := owners[cl.Name]; ok {
				owner = h.String()
			}
			row = append(row, owner)
		}
		if wide {
			secret := "-"
			if ref := cl.Spec.KubeconfigSecretRef; ref != nil {
				secret = ref.Namespace + "/" + ref.Name
			}
			row = append(row, secret, orDash(oneLine(message, 200)))
		}
		rows = append(rows, row)
	}
	return rows
}

type clusterAddOptions struct {
	kube             kubeFlags
	sourceKubeconfig string
	name             string
	labels           []string
	namespace        string
	upsert           bool
}

func newClusterAddCommand() *cobra.Command {
	o := &clusterAddOptions{}
	cmd := &cobra.Command{
		Use:   "add CONTEXT",
		Short: "Register the cluster of a kubeconfig context as a Cluster",
		Long: `add reads CONTEXT from a kubeconfig (--source-kubeconfig, else --kubeconfig, else $KUBECONFIG or
~/.kube/config), turns it into a standalone kubeconfig for that one context with its
certificates and token embedded, stores it in the Secret <name>-kubeconfig (key value) and
creates the Cluster <name> that points to it. The management cluster is the one --kubeconfig
and --context select, as for every other command; --context does not pick CONTEXT.

The controller uses the credentials as they are: a user that authenticates with an exec plugin
(e.g. aws eks get-token) works only where the controller can run that command.`,
		Example: `  navarch cluster add prod-eu --label env=prod --label region=eu
  navarch cluster add arn:aws:eks:eu-west-1:123456789012:cluster/prod --name prod-eu
  navarch cluster add staging --source-kubeconfig ~/.kube/staging --kubeconfig ~/.kube/mgmt`,
		Args: exactArgs("CONTEXT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.kube.addTo(f)
	f.StringVar(&o.sourceKubeconfig, "source-kubeconfig", "", "kubeconfig to read CONTEXT from (default: --kubeconfig, else $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.name, "name", "", "name of the Cluster (default: CONTEXT)")
	f.StringArrayVar(&o.labels, "label", nil, "label k=v of the Cluster, for cluster generators; repeatable")
	f.StringVarP(&o.namespace, "namespace", "n", systemNamespace, "namespace of the kubeconfig Secret")
	f.BoolVar(&o.upsert, "upsert", false, "replace the Cluster and its Secret if they exist")
	return cmd
}

func (o *clusterAddOptions) run(ctx context.Context, contextName string, stdout, stderr io.Writer) error {
	name := o.name
	if name == "" {
		name = contextName
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		flag := "--name"
		if o.name == "" {
			flag = "the context name (pass --name)"
		}
		return usageError{fmt.Errorf("%s: %q is not a valid Cluster name: %s", flag, name, strings.Join(errs, "; "))}
	}
	if errs := validation.IsDNS1123Subdomain(name + "-kubeconfig"); len(errs) > 0 {
		return usageError{fmt.Errorf("--name: %q is too long for its Secret name %s-kubeconfig", name, name)}
	}
	clusterLabels, err := parseLabels(o.labels)
	if err != nil {
		return usageError{err}
	}

	kubeconfig, server, warnings, err := o.standaloneKubeconfig(contextName)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}

	c, err := o.kube.client()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: o.namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{kubeconfigKey: kubeconfig},
	}
	cluster := &navarchv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: clusterLabels},
		Spec: navarchv1.ClusterSpec{
			Server:              server,
			KubeconfigSecretRef: &navarchv1.KubeconfigSecretRef{Namespace: o.namespace, Name: secret.Name, Key: kubeconfigKey},
		},
	}
	// Refuse before writing anything, so a refused add leaves the Secret alone too.
	existing := &navarchv1.Cluster{}
	err = c.Get(ctx, client.ObjectKey{Name: name}, existing)
	switch {
	case err == nil && !o.upsert:
		return fmt.Errorf("cluster %q already exists (server %s); pass --upsert to replace it", name, orDash(existing.Spec.Server))
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("get Cluster %s: %w", name, err)
	}
	created, err := upsertSecret(ctx, c, secret, o.upsert)
	if err != nil {
		return err
	}
	verb, err := upsertCluster(ctx, c, cluster)
	if err != nil {
		if created {
			// Leave nothing half-registered behind: a second attempt should not need --upsert.
			_ = c.Delete(ctx, secret)
		}
		return err
	}
	fmt.Fprintf(stdout, "Cluster %s %s: server %s, kubeconfig in Secret %s/%s.\n", name, verb, server, secret.Namespace, secret.Name)
	fmt.Fprintln(stdout, "The controller probes it shortly; see: navarch cluster list")
	return nil
}

func parseLabels(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--label %q: want KEY=VALUE", f)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("--label %q: key: %s", f, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("--label %q: value: %s", f, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	return out, nil
}

// standaloneKubeconfig reads contextName from the source kubeconfig and returns a kubeconfig
// with only that context, certificates and token inlined, and the context's server URL.
func (o *clusterAddOptions) standaloneKubeconfig(contextName string) (data []byte, server string, warnings []string, err error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.sourceKubeconfig
	if rules.ExplicitPath == "" {
		rules.ExplicitPath = o.kube.kubeconfig
	}
	where := "the kubeconfig ($KUBECONFIG or ~/.kube/config)"
	if rules.ExplicitPath != "" {
		where = rules.ExplicitPath
	}
	cfg, err := rules.Load()
	if err != nil {
		return nil, "", nil, fmt.Errorf("read %s: %w", where, err)
	}
	kctx, ok := cfg.Contexts[contextName]
	if !ok {
		names := make([]string, 0, len(cfg.Contexts))
		for n := range cfg.Contexts {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, "", nil, fmt.Errorf("context %q not found in %s (its contexts: %s)", contextName, where, orDefault(strings.Join(names, ", "), "none"))
	}
	cl, ok := cfg.Clusters[kctx.Cluster]
	if !ok || cl.Server == "" {
		return nil, "", nil, fmt.Errorf("context %q in %s: cluster %q is missing or has no server", contextName, where, kctx.Cluster)
	}
	if user, ok := cfg.AuthInfos[kctx.AuthInfo]; ok {
		if user.TokenFile != "" {
			token, err := os.ReadFile(user.TokenFile)
			if err != nil {
				return nil, "", nil, fmt.Errorf("context %q: user %q: read tokenFile: %w", contextName, kctx.AuthInfo, err)
			}
			user.Token, user.TokenFile = strings.TrimSpace(string(token)), ""
		}
		if user.Exec != nil {
			warnings = append(warnings, fmt.Sprintf("context %q: user %q authenticates with the command %q: the navarch controller must be able to run it", contextName, kctx.AuthInfo, user.Exec.Command))
		}
		if user.AuthProvider != nil {
			warnings = append(warnings, fmt.Sprintf("context %q: user %q authenticates with the %q auth provider, which the navarch controller may not support", contextName, kctx.AuthInfo, user.AuthProvider.Name))
		}
	}
	cfg.CurrentContext = contextName
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, "", nil, fmt.Errorf("context %q: %w", contextName, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, "", nil, fmt.Errorf("context %q: embed certificates: %w", contextName, err)
	}
	cfg.Preferences = clientcmdapi.Preferences{}
	cfg.Extensions = nil
	data, err = clientcmd.Write(*cfg)
	if err != nil {
		return nil, "", nil, fmt.Errorf("context %q: %w", contextName, err)
	}
	return data, cl.Server, warnings, nil
}

// upsertSecret creates secret, or with upsert replaces the data of the existing one. It
// reports whether it created the Secret.
func upsertSecret(ctx context.Context, c client.Client, secret *corev1.Secret, upsert bool) (bool, error) {
	key := client.ObjectKeyFromObject(secret)
	err := c.Create(ctx, secret)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err) && upsert:
		cur := &corev1.Secret{}
		if err := c.Get(ctx, key, cur); err != nil {
			return false, fmt.Errorf("get Secret %s: %w", key, err)
		}
		cur.Data = secret.Data
		if err := c.Update(ctx, cur); err != nil {
			return false, fmt.Errorf("update Secret %s: %w", key, err)
		}
		return false, nil
	case apierrors.IsAlreadyExists(err):
		return false, fmt.Errorf("secret %s already exists; pass --upsert to replace it", key)
	case apierrors.IsNotFound(err):
		return false, fmt.Errorf("create Secret %s: namespace %q not found: is navarch installed in the management cluster? (or choose another with --namespace)", key, secret.Namespace)
	}
	return false, fmt.Errorf("create Secret %s: %w", key, err)
}

// upsertCluster creates cluster, or updates the existing one's spec and adds its labels.
func upsertCluster(ctx context.Context, c client.Client, cluster *navarchv1.Cluster) (string, error) {
	err := c.Create(ctx, cluster)
	if err == nil {
		return "registered", nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create Cluster %s: %w", cluster.Name, err)
	}
	cur := &navarchv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: cluster.Name}, cur); err != nil {
		return "", fmt.Errorf("get Cluster %s: %w", cluster.Name, err)
	}
	cur.Spec = cluster.Spec
	for k, v := range cluster.Labels {
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels[k] = v
	}
	if err := c.Update(ctx, cur); err != nil {
		return "", fmt.Errorf("update Cluster %s: %w", cluster.Name, err)
	}
	return "updated", nil
}
