package localcluster

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/kubernetes"
)

// StopAPIServer stops the cluster's kube-apiserver and leaves etcd and the other processes
// running, so clients see the cluster as unreachable (connection refused) until
// StartAPIServer. Tests use it to simulate a cluster outage.
func (c *Cluster) StopAPIServer() error {
	p := c.process(kubeAPIServerBinary)
	if p == nil {
		return fmt.Errorf("cluster %q has no kube-apiserver", c.Name)
	}
	if err := p.stop(c.grace); err != nil {
		return fmt.Errorf("stopping kube-apiserver of %q: %w", c.Name, err)
	}
	c.log.Info("kube-apiserver stopped", "cluster", c.Name)
	return nil
}

// StartAPIServer starts the kube-apiserver that StopAPIServer stopped, with the same port,
// certificates and data, and waits until it is ready. Clients holding the old kubeconfig
// reconnect.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	old := c.process(kubeAPIServerBinary)
	if old == nil {
		return fmt.Errorf("cluster %q has no kube-apiserver", c.Name)
	}
	if !old.exited() {
		return fmt.Errorf("kube-apiserver of %q is still running", c.Name)
	}
	if _, err := c.run(old.name, old.path, old.args, old.env); err != nil {
		return err
	}
	c.mu.Lock()
	c.procs = slices.DeleteFunc(c.procs, func(q *process) bool { return q == old })
	c.mu.Unlock()

	client, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	return c.waitUntil(ctx, "kube-apiserver to become ready again", apiServerReadyTimeout, func(ctx context.Context) (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", err
	})
}

// process returns the newest process of the cluster with the given name.
func (c *Cluster) process(name string) *process {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range slices.Backward(c.procs) {
		if p.name == name {
			return p
		}
	}
	return nil
}
