package clustercache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Remote is navarch's connection to one cluster.
type Remote struct {
	// Name is the Cluster's name.
	Name string
	// Config reaches the cluster.
	Config *rest.Config
	// Dynamic is a client for any kind.
	Dynamic dynamic.Interface

	fingerprint string
	discovery   discovery.DiscoveryInterface
	cached      discovery.CachedDiscoveryInterface // shared with mapper
	mapper      meta.ResettableRESTMapper
	log         logr.Logger
	ctx         context.Context
	cancel      context.CancelFunc
	queue       workqueue.TypedRateLimitingInterface[types.NamespacedName]
	workers     sync.WaitGroup // the goroutines of work

	mu         sync.Mutex
	informers  map[schema.GroupVersionResource]*watch
	lastReset  time.Time
	probeError error
	onReady    func(cluster string)
	caps       *capabilities
}

// watch is the informer of one resource type.
type watch struct {
	informer toolscache.SharedIndexInformer
	synced   chan struct{} // closed once the first list is in the cache
}

func objectMetaNamed(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func newRemote(parent context.Context, name string, cfg *rest.Config, fingerprint string, opts Options) (*Remote, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, &ConfigError{Cluster: name, Err: err}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, &ConfigError{Cluster: name, Err: err}
	}
	ctx, cancel := context.WithCancel(parent)
	cached := memory.NewMemCacheClient(disc)
	r := &Remote{
		Name:        name,
		Config:      cfg,
		Dynamic:     dyn,
		fingerprint: fingerprint,
		discovery:   disc,
		cached:      cached,
		mapper:      restmapper.NewDeferredDiscoveryRESTMapper(cached),
		log:         opts.Logger.WithValues("cluster", name),
		ctx:         ctx,
		cancel:      cancel,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](500*time.Millisecond, 2*time.Minute),
			),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "cluster-" + name},
		),
		informers: map[schema.GroupVersionResource]*watch{},
		onReady:   opts.OnReady,
	}
	for range opts.Workers {
		r.workers.Go(func() { r.work(opts.Handler) })
	}
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	return r, nil
}

// stop ends the Remote's watches and workers.
func (r *Remote) stop() { r.cancel() }

// Enqueue queues an Application for this cluster's workers.
func (r *Remote) Enqueue(app types.NamespacedName) { r.queue.Add(app) }

// work runs queued Applications through h until the Remote stops.
func (r *Remote) work(h Handler) {
	for {
		key, shutdown := r.queue.Get()
		if shutdown {
			return
		}
		if r.ctx.Err() != nil {
			// Stopped: the queue drains without running anything more on the cluster.
			r.queue.Done(key)
			continue
		}
		start := time.Now()
		after, err := r.handle(h, key)
		reconcileDuration.WithLabelValues(r.Name).Observe(time.Since(start).Seconds())
		switch {
		case err != nil:
			reconcileTotal.WithLabelValues(r.Name, "error").Inc()
			reconcileErrors.WithLabelValues(r.Name).Inc()
			r.log.Error(err, "Reconciling Application failed", "application", key.String())
			r.queue.AddRateLimited(key)
		case after > 0:
			reconcileTotal.WithLabelValues(r.Name, "requeue_after").Inc()
			r.queue.Forget(key)
			r.queue.AddAfter(key, after)
		default:
			reconcileTotal.WithLabelValues(r.Name, "success").Inc()
			r.queue.Forget(key)
		}
		r.queue.Done(key)
	}
}

// handle runs h with a logger that names the Application, the cluster and a reconcile ID,
// turning a panic into an error so one bad Application cannot stop the cluster's workers.
func (r *Remote) handle(h Handler, key types.NamespacedName) (after time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	log := r.log.WithValues("application", key.String(), "reconcileID", uuid.NewUUID())
	return h(logr.NewContext(r.ctx, log), r, key)
}

// Probe asks the cluster for its version and records the outcome for Ready.
func (r *Remote) Probe(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := r.discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	var version string
	if err == nil {
		var info struct {
			GitVersion string `json:"gitVersion"`
		}
		if err = json.Unmarshal(body, &info); err == nil {
			version = info.GitVersion
		}
	}
	r.mu.Lock()
	recovered := r.probeError != nil && err == nil
	r.probeError = err
	r.mu.Unlock()
	if recovered && r.onReady != nil {
		r.onReady(r.Name)
	}
	return version, err
}

// Ready returns the error of the last probe, nil when the cluster answered.
func (r *Remote) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.probeError
}

// ProbeReason classifies a probe error as a Ready condition reason.
func ProbeReason(err error) string {
	var cfgErr *ConfigError
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return navarchv1.ReasonConnected
	case errors.As(err, &cfgErr):
		return navarchv1.ReasonInvalidKubeconfig
	case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
		return navarchv1.ReasonUnauthorized
	case errors.As(err, &status) && (status.Status().Code == http.StatusUnauthorized || status.Status().Code == http.StatusForbidden):
		return navarchv1.ReasonUnauthorized
	case strings.Contains(err.Error(), "x509:") || strings.Contains(err.Error(), "tls:"):
		return navarchv1.ReasonUnauthorized
	default:
		return navarchv1.ReasonUnreachable
	}
}

// Mapping returns how to reach objects of kind gvk. When the kind is unknown it rediscovers
// the cluster's API (at most every two seconds), so kinds of freshly established CRDs
// appear.
func (r *Remote) Mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil || !meta.IsNoMatchError(err) {
		return m, err
	}
	r.mu.Lock()
	reset := time.Since(r.lastReset) > 2*time.Second
	if reset {
		r.lastReset = time.Now()
	}
	r.mu.Unlock()
	if !reset {
		return nil, err
	}
	r.mapper.Reset()
	return r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// Resource returns the dynamic client for objects of mapping in namespace ns.
func (r *Remote) Resource(m *meta.RESTMapping, ns string) dynamic.ResourceInterface {
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.Dynamic.Resource(m.Resource).Namespace(ns)
	}
	return r.Dynamic.Resource(m.Resource)
}

// Live returns the managed object of mapping named ns/name from the watch cache, starting
// the watch of its resource type on first use. A nil object means the cache has no managed
// object by that name (it may still exist unmanaged). Callers must not modify the result.
func (r *Remote) Live(ctx context.Context, m *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error) {
	w, err := r.watch(ctx, m.Resource)
	if err != nil {
		return nil, err
	}
	key := name
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		key = ns + "/" + name
	}
	item, ok, err := w.informer.GetIndexer().GetByKey(key)
	if err != nil || !ok {
		return nil, err
	}
	return item.(*unstructured.Unstructured), nil
}

// watch returns the synced informer of gvr, starting it on first use.
func (r *Remote) watch(ctx context.Context, gvr schema.GroupVersionResource) (*watch, error) {
	r.mu.Lock()
	w, ok := r.informers[gvr]
	if !ok {
		w = r.startWatch(gvr)
		r.informers[gvr] = w
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case <-w.synced:
		return w, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("cluster %q: waiting for the watch of %s: %w", r.Name, gvr.String(), ctx.Err())
	}
}

func (r *Remote) startWatch(gvr schema.GroupVersionResource) *watch {
	inf := dynamicinformer.NewFilteredDynamicInformer(r.Dynamic, gvr, metav1.NamespaceAll, 0, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.LabelSelector = LabelManaged + "=true" }).Informer()
	_ = inf.SetTransform(stripManagedFields)
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    r.onEvent,
		UpdateFunc: func(_, obj any) { r.onEvent(obj) },
		DeleteFunc: r.onEvent,
	})
	w := &watch{informer: inf, synced: make(chan struct{})}
	go inf.RunWithContext(r.ctx)
	go func() {
		if toolscache.WaitForCacheSync(r.ctx.Done(), inf.HasSynced) {
			close(w.synced)
		}
	}()
	r.log.V(1).Info("Watching resource type", "resource", gvr.String())
	return w
}

// onEvent queues the Application that tracks the changed object.
func (r *Remote) onEvent(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if app, ok := TrackedBy(u); ok {
		r.queue.Add(app)
	}
}

// stripManagedFields keeps managedFields out of the watch caches: they are most of an
// object's size and navarch reads them only with a direct GET.
func stripManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	}
	return obj, nil
}
