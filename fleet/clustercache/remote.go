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
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	navarchv1 "github.com/navarch-io/navarch/api/v1alpha1"
)

// Remote is navarch's connection to one cluster: its queue and workers, and the apiserver
// it shares with the other Clusters that reach the same server as the same identity.
type Remote struct {
	// Name is the Cluster's name.
	Name string
	// Config reaches the cluster.
	Config *rest.Config
	// Dynamic is a client for any kind.
	Dynamic dynamic.Interface

	fingerprint string
	api         *apiserver
	log         logr.Logger
	ctx         context.Context
	cancel      context.CancelFunc
	queue       *queue
	workers     sync.WaitGroup // the queue's workers

	metrics passMetrics

	mu         sync.Mutex
	probeError error
	onReady    func(cluster string)
}

// passMetrics are the Remote's series of the pass metrics, looked up once: an idle fleet's
// polls make a pass per Application, and each lookup by label values costs an allocation.
type passMetrics struct {
	duration                   prometheus.Observer
	errors, requeued, finished prometheus.Counter // by result
	failures                   prometheus.Counter // reconcileErrors
}

func passMetricsOf(cluster string) passMetrics {
	return passMetrics{
		duration: reconcileDuration.WithLabelValues(cluster),
		errors:   reconcileTotal.WithLabelValues(cluster, "error"),
		requeued: reconcileTotal.WithLabelValues(cluster, "requeue_after"),
		finished: reconcileTotal.WithLabelValues(cluster, "success"),
		failures: reconcileErrors.WithLabelValues(cluster),
	}
}

func objectMetaNamed(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func newRemote(parent context.Context, name string, cfg *rest.Config, fingerprint string, api *apiserver, opts Options) *Remote {
	ctx, cancel := context.WithCancel(parent)
	r := &Remote{
		Name:        name,
		Config:      cfg,
		Dynamic:     api.dynamic,
		fingerprint: fingerprint,
		api:         api,
		log:         opts.Logger.WithValues("cluster", name),
		ctx:         ctx,
		cancel:      cancel,
		onReady:     opts.OnReady,
		metrics:     passMetricsOf(name),
	}
	r.queue = newQueue(opts.Workers, func(key types.NamespacedName) { r.pass(opts.Quiet, opts.Handler, key) }, r.workers.Go)
	context.AfterFunc(ctx, r.queue.close)
	return r
}

// stop ends the Remote's watches and workers: once it has returned, no worker starts, and
// r.workers.Wait returns when the passes running end.
func (r *Remote) stop() {
	r.cancel()
	r.queue.close()
}

// Enqueue queues an Application for this cluster's workers; from now on, the events of its
// objects queue it here.
func (r *Remote) Enqueue(app types.NamespacedName) {
	r.api.route(app, r)
	r.queue.add(app)
}

// Asked counts the reasons to look at app again that came from outside its own timers: the
// events of its objects on this cluster's apiserver and the times it was queued (Enqueue). A
// pass whose count is unchanged since an earlier one was asked for by nothing but its timer.
func (r *Remote) Asked(app types.NamespacedName) uint64 {
	r.api.mu.Lock()
	defer r.api.mu.Unlock()
	return r.api.routes[app].asked
}

// pass runs one queued Application through h and queues it again as h asks.
func (r *Remote) pass(quiet Quiet, h Handler, key types.NamespacedName) {
	if r.ctx.Err() != nil {
		return // stopped: the queue drains without running anything more on the cluster
	}
	start := time.Now()
	after, err := r.handle(quiet, h, key)
	r.metrics.duration.Observe(time.Since(start).Seconds())
	switch {
	case err != nil:
		r.metrics.errors.Inc()
		r.metrics.failures.Inc()
		r.log.Error(err, "Reconciling Application failed", "application", key.String())
		r.queue.retry(key)
	case after > 0:
		r.metrics.requeued.Inc()
		r.queue.forget(key)
		r.queue.after(key, after)
	default:
		r.metrics.finished.Inc()
		r.queue.forget(key)
	}
}

// handle runs h, unless quiet says the pass can end at once, with a logger that names the
// Application, the cluster and a reconcile ID, turning a panic into an error so one bad
// Application cannot stop the cluster's workers.
func (r *Remote) handle(quiet Quiet, h Handler, key types.NamespacedName) (after time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	if quiet != nil {
		if after, ok := quiet(r.ctx, r, key); ok {
			return after, nil
		}
	}
	select {
	case r.api.slots <- struct{}{}:
		defer func() { <-r.api.slots }()
	case <-r.ctx.Done():
		return 0, nil // stopped: a new Remote queues the cluster's Applications again
	}
	log := r.log.WithValues("application", key.String(), "reconcileID", uuid.NewUUID())
	return h(logr.NewContext(r.ctx, log), r, key)
}

// Probe asks the cluster for its version and records the outcome for Ready.
func (r *Remote) Probe(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := r.api.discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
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
	a := r.api
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err == nil || !meta.IsNoMatchError(err) {
		return m, err
	}
	a.mu.Lock()
	reset := time.Since(a.lastReset) > 2*time.Second
	if reset {
		a.lastReset = time.Now()
	}
	a.mu.Unlock()
	if !reset {
		return nil, err
	}
	a.mapper.Reset()
	return a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
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
// object by that name (it may still exist unmanaged). Each call decodes a copy of its own.
func (r *Remote) Live(ctx context.Context, m *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error) {
	w, err := r.api.watch(ctx, m.Resource)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", r.Name, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		ns = ""
	}
	o, ok := w.get(ns, name)
	if !ok {
		return nil, nil
	}
	return o.object()
}
