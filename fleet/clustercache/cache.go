// Package clustercache owns navarch's connections to the clusters it deploys to.
//
// Each Cluster gets one Remote: a REST config built from its kubeconfig Secret (or the
// management cluster's own config for in-cluster), and its own work queue and workers. A dead
// or slow cluster therefore only ever delays its own Applications. The clients, the
// RESTMapper and the watches of the objects navarch manages (label LabelManaged,
// managedFields stripped) belong to the apiserver: Clusters that reach the same server with
// the same credentials share them, and each event queues only the Application that tracks
// the object, on its own Cluster's queue. The Cluster controller calls Connect on every probe; Remotes survive outages
// (client-go's watches reconnect by themselves) and are rebuilt only when the kubeconfig
// changes.
package clustercache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// LabelManaged marks every object navarch applies, so that watches can select exactly those.
// Ownership itself is recorded by the navarch.io/tracking-id annotation.
const LabelManaged = "navarch.io/managed"

// Handler processes one Application on one cluster. It returns how soon to process it again
// (0: only on the next event) or an error (retried with backoff).
type Handler func(ctx context.Context, r *Remote, app types.NamespacedName) (time.Duration, error)

// Quiet says whether an Application's pass on one cluster can end at once, having nothing to
// do: then Handler is not called, and the Application is processed again after the duration
// it returns. It must change nothing, and it logs nothing.
type Quiet func(ctx context.Context, r *Remote, app types.NamespacedName) (time.Duration, bool)

// Options configure a Cache.
type Options struct {
	// InCluster reaches the management cluster; it serves destination `in-cluster`.
	InCluster *rest.Config
	// Handler processes queued Applications.
	Handler Handler
	// Quiet, when set, is asked first whether an Application's pass can end at once.
	Quiet Quiet
	// Workers per cluster. Default 8.
	Workers int
	// APIServerWorkers bounds the Applications synced at once on one apiserver, over all the
	// Clusters that share it (same server and credentials): twenty Clusters on one apiserver
	// would otherwise send it twenty times one Cluster's requests at once, and each request
	// costs the apiserver more the more run at once. Default 32; a Cluster alone on its
	// apiserver runs at most Workers.
	APIServerWorkers int
	// QPS and Burst of each cluster's client. Defaults 200 and 400.
	QPS   float32
	Burst int
	// Timeout bounds each request to a cluster. Default 30s.
	Timeout time.Duration
	// Logger is the cache's logger.
	Logger logr.Logger
	// OnReady, when set, is called with a cluster's name when it is connected and when its
	// probe succeeds after failing, so that work waiting for the cluster can resume at once.
	OnReady func(cluster string)
	// Owns, when set, says whether this replica may connect to a cluster: when replicas share
	// the fleet (internal/membership), only the one holding a Cluster's Lease syncs it, and
	// Connect refuses the others with ErrNotOwned.
	Owns func(cluster string) bool
}

// Cache holds one Remote per Cluster. It is safe for concurrent use.
type Cache struct {
	opts Options
	ctx  context.Context

	mu      sync.Mutex
	remotes map[string]*Remote
	apis    map[string]*apiserver // by apiserverKey
	// stopping holds the stopped Remotes whose workers may still run, until they return, so
	// that Release waits for them whichever call stopped them.
	stopping map[string][]*Remote
}

// ErrNotConnected is returned for a cluster the cache has no connection to yet.
var ErrNotConnected = errors.New("not connected yet")

// ErrNotOwned is returned by Connect for a cluster another replica syncs.
var ErrNotOwned = errors.New("synced by another replica")

// New returns a cache whose Remotes live until ctx is done.
func New(ctx context.Context, opts Options) *Cache {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.APIServerWorkers <= 0 {
		opts.APIServerWorkers = 32
	}
	if opts.QPS <= 0 {
		opts.QPS = 200
	}
	if opts.Burst <= 0 {
		opts.Burst = 400
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	c := &Cache{opts: opts, ctx: ctx, remotes: map[string]*Remote{}, apis: map[string]*apiserver{}, stopping: map[string][]*Remote{}}
	queueDepths.add(c)
	context.AfterFunc(ctx, func() { queueDepths.remove(c) })
	return c
}

// Connect makes sure the cache has a Remote for cluster built from kubeconfig (nil for an
// in-cluster Cluster) and returns it. A Remote whose configuration is unchanged is kept, with
// its watches and queue; a changed one is replaced.
//
// The configuration is compared as the bytes it is built from, before any parsing: a probe
// of an unchanged Cluster, every 30 seconds for every Cluster, costs a hash and no more.
func (c *Cache) Connect(cluster *navarchv1.Cluster, kubeconfig []byte) (*Remote, error) {
	fingerprint := connectionFingerprint(cluster, kubeconfig)

	c.mu.Lock()
	defer c.mu.Unlock()
	// Checked under the lock: Release, which comes after ownership is given up, then finds
	// and stops any Remote this call makes.
	if c.opts.Owns != nil && !c.opts.Owns(cluster.Name) {
		return nil, fmt.Errorf("cluster %q: %w", cluster.Name, ErrNotOwned)
	}
	old, ok := c.remotes[cluster.Name]
	if ok && old.fingerprint == fingerprint {
		return old, nil
	}
	cfg, err := c.config(cluster, kubeconfig)
	if err != nil {
		return nil, err
	}
	api, err := c.apiserverLocked(cfg, fingerprint)
	if err != nil {
		return nil, &ConfigError{Cluster: cluster.Name, Err: err}
	}
	if ok {
		c.stopLocked(old)
	}
	r := newRemote(c.ctx, cluster.Name, cfg, fingerprint, api, c.opts)
	c.remotes[cluster.Name] = r
	if c.opts.OnReady != nil {
		c.opts.OnReady(cluster.Name)
	}
	return r, nil
}

// InCluster returns the Remote of the management cluster, destination `in-cluster`, creating
// it on first use. A Cluster object named in-cluster replaces it through Connect.
func (c *Cache) InCluster() (*Remote, error) {
	return c.Connect(&navarchv1.Cluster{Spec: navarchv1.ClusterSpec{InCluster: true}, ObjectMeta: objectMetaNamed(navarchv1.InClusterName)}, nil)
}

// Get returns the Remote of the named cluster, or ErrNotConnected.
func (c *Cache) Get(name string) (*Remote, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.remotes[name]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("cluster %q: %w", name, ErrNotConnected)
}

// Remove stops and forgets the named cluster's Remote.
func (c *Cache) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.remotes[name]; ok {
		c.stopLocked(r)
		delete(c.remotes, name)
	}
}

// apiserverLocked returns the apiserver of cfg, shared with the Remotes that reach the same
// server as the same identity, counting one more user; c.mu is held.
func (c *Cache) apiserverLocked(cfg *rest.Config, fingerprint string) (*apiserver, error) {
	key := apiserverKey(cfg, fingerprint)
	api, ok := c.apis[key]
	if !ok {
		var err error
		if api, err = newAPIServer(c.ctx, key, cfg, c.opts.Logger, c.opts.APIServerWorkers); err != nil {
			return nil, err
		}
		c.apis[key] = api
	}
	api.users++
	return api, nil
}

// stopLocked stops r, keeps it in c.stopping until its workers have returned, and stops its
// apiserver's watches when no other Remote uses them; c.mu is held.
func (c *Cache) stopLocked(r *Remote) {
	r.stop()
	r.api.unroute(r)
	if r.api.users--; r.api.users == 0 {
		r.api.cancel()
		delete(c.apis, r.api.key)
	}
	c.stopping[r.Name] = append(c.stopping[r.Name], r)
	go func() {
		r.workers.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		rest := slices.DeleteFunc(c.stopping[r.Name], func(s *Remote) bool { return s == r })
		if len(rest) == 0 {
			delete(c.stopping, r.Name)
		} else {
			c.stopping[r.Name] = rest
		}
	}()
}

// Release stops the named cluster's Remote and waits, until ctx is done, for the workers of
// every Remote of that cluster stopped so far to return: once it returns nil, nothing of this
// replica acts on the cluster any more.
func (c *Cache) Release(ctx context.Context, name string) error {
	c.Remove(name)
	c.mu.Lock()
	stopping := slices.Clone(c.stopping[name])
	c.mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		for _, r := range stopping {
			r.workers.Wait()
		}
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster %q: workers still running: %w", name, context.Cause(ctx))
	}
}

// Forget drops what the cache remembers of a deleted Application.
func (c *Cache) Forget(app types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, api := range c.apis {
		api.forget(app)
	}
}

// Names lists the connected clusters.
func (c *Cache) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.remotes))
}

// connectionFingerprint identifies what a Remote is built from: the Cluster's server override,
// whether it is the in-cluster one, and its kubeconfig.
func connectionFingerprint(cluster *navarchv1.Cluster, kubeconfig []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%t\x00", cluster.Spec.Server, cluster.Spec.InCluster || kubeconfig == nil)
	h.Write(kubeconfig)
	return fmt.Sprintf("%x", h.Sum(nil))
}

// config builds the REST config of a cluster.
func (c *Cache) config(cluster *navarchv1.Cluster, kubeconfig []byte) (*rest.Config, error) {
	var cfg *rest.Config
	if cluster.Spec.InCluster || kubeconfig == nil {
		if c.opts.InCluster == nil {
			return nil, &ConfigError{Cluster: cluster.Name, Err: errors.New("no in-cluster configuration")}
		}
		cfg = rest.CopyConfig(c.opts.InCluster)
	} else {
		var err error
		cfg, err = clientcmd.RESTConfigFromKubeConfig(kubeconfig)
		if err != nil {
			return nil, &ConfigError{Cluster: cluster.Name, Err: err}
		}
		if cluster.Spec.Server != "" && cluster.Spec.Server != cfg.Host {
			cfg.Host = cluster.Spec.Server
		}
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = c.opts.QPS, c.opts.Burst, c.opts.Timeout
	cfg.UserAgent = "navarch"
	return cfg, nil
}

// ConfigError is a kubeconfig that cannot be used.
type ConfigError struct {
	Cluster string
	Err     error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("cluster %q: invalid kubeconfig: %v", e.Cluster, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }
