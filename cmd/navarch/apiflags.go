package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// apiFlags are the flags of every command that reads or writes objects in the management
// cluster: the kube flags and -n/--namespace, which defaults like kubectl's to the namespace
// of the kubeconfig context, else "default".
type apiFlags struct {
	kube      kubeFlags
	namespace string
}

func (f *apiFlags) addTo(fs *pflag.FlagSet) {
	f.kube.addTo(fs)
	fs.StringVarP(&f.namespace, "namespace", "n", "", "namespace (default: the kubeconfig context's namespace, else default)")
}

// clientConfig is the kubeconfig the kube flags select, with the same loading rules as
// kubeFlags.restConfig.
func (f *kubeFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
}

// ns is the namespace to work in.
func (f *apiFlags) ns() (string, error) {
	if f.namespace != "" {
		return f.namespace, nil
	}
	ns, _, err := f.kube.clientConfig().Namespace()
	if err != nil {
		return "", fmt.Errorf("management cluster kubeconfig: %w", err)
	}
	return ns, nil
}

// session is a client of the management cluster and the namespace to work in.
type session struct {
	c  client.WithWatch
	ns string
}

func (f *apiFlags) session() (*session, error) {
	ns, err := f.ns()
	if err != nil {
		return nil, err
	}
	cfg, err := f.kube.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: cliScheme})
	if err != nil {
		return nil, fmt.Errorf("management cluster: %w", err)
	}
	return &session{c: c, ns: ns}, nil
}

// username is who the kubeconfig says the user is (its context's user), else $USER; it is
// recorded in the operations the user starts.
func (f *kubeFlags) username() string {
	raw, err := f.clientConfig().RawConfig()
	if err == nil {
		name := f.context
		if name == "" {
			name = raw.CurrentContext
		}
		if ctx, ok := raw.Contexts[name]; ok && ctx.AuthInfo != "" {
			return ctx.AuthInfo
		}
	}
	return os.Getenv("USER")
}

// notFound turns a NotFound error into one that names the object and where it was looked for.
func notFound(err error, kind, namespace, name string) error {
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get %s %s: %w", kind, qualified(namespace, name), err)
	}
	if namespace == "" {
		return fmt.Errorf("%s %q not found", kind, name)
	}
	return fmt.Errorf("%s %q not found in namespace %q (choose another with -n NAMESPACE)", kind, name, namespace)
}

// qualified is namespace/name, or name for cluster-scoped objects.
func qualified(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// exactArgs accepts exactly the named positional arguments; anything else is a usage error.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		if len(args) < len(names) {
			return usageError{fmt.Errorf("%s: missing %s (usage: %s)", cmd.CommandPath(), names[len(args)], cmd.UseLine())}
		}
		return usageError{fmt.Errorf("%s: unexpected argument %q (usage: %s)", cmd.CommandPath(), args[len(names)], cmd.UseLine())}
	}
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error { return exactArgs()(cmd, args) }

// commandGroup is a command that only holds subcommands: alone it prints its help, with an
// unknown subcommand it is a usage error.
func commandGroup(use, short, long string, aliases []string, subcommands ...*cobra.Command) *cobra.Command {
	group := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long,
		Aliases: aliases,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %q; see %s --help", args[0], cmd.CommandPath(), cmd.CommandPath())}
			}
			return cmd.Help()
		},
	}
	group.AddCommand(subcommands...)
	return group
}
