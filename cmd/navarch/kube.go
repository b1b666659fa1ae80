package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/navarch-io/navarch/internal/scheme"
)

// kubeFlags are the kubectl-style flags that pick the management cluster: --kubeconfig,
// then $KUBECONFIG, then ~/.kube/config; --context picks a context.
type kubeFlags struct {
	kubeconfig string
	context    string
}

func (f *kubeFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context to use")
}

func (f *kubeFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: f.context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("management cluster kubeconfig: %w", err)
	}
	return cfg, nil
}

func (f *kubeFlags) client() (client.Client, error) {
	cfg, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme.New()})
}
